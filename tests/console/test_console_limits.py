"""An oversized body is refused before it is read: the served console's memory stays flat."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from beam_agents.testing.services import free_port
from tests.console.conftest import TOKEN, approval, write_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ATTACK_BYTES = 400 * 1024 * 1024
SLACK_BYTES = 50 * 1024 * 1024
_CHUNK = b"a" * (1024 * 1024)


def _memory_kib(pid: int, field: str) -> int:
    """`VmRSS` (now) or `VmHWM` (the peak so far) of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`beam-agents console` with a token, in its own process on a loopback port."""
    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "intents.jsonl", [approval("svc-1", "svc-1-0001", "down", "i-1")])
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "beam_agents.cli", "console", str(run), "--port", str(port)],
        env={**os.environ, "BEAM_AGENTS_CONSOLE_TOKEN": TOKEN},
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the console did not start") from None
                time.sleep(0.1)
        yield process, port
    finally:
        process.terminate()
        process.wait(timeout=30)


def _post_streamed(port: int, *, chunked: bool) -> bytes:
    """POST /login with a 400 MiB body, streamed; the response (b"" if the server hung up)."""
    framing = (
        b"Transfer-Encoding: chunked\r\n"
        if chunked
        else f"Content-Length: {ATTACK_BYTES}\r\n".encode()
    )
    head = (
        b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n" + framing + b"\r\n"
    )
    chunk = (b"%x\r\n" % len(_CHUNK)) + _CHUNK + b"\r\n" if chunked else _CHUNK
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(head)
            for _ in range(ATTACK_BYTES // len(_CHUNK)):
                sock.sendall(chunk)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the console stopped reading and hung up: what it should do
        try:
            return sock.recv(4096)
        except OSError:
            return b""


@pytest.mark.parametrize("chunked", [False, True], ids=["declared-length", "chunked"])
def test_a_400_mib_unauthenticated_post_leaves_the_console_memory_flat(
    console: tuple[subprocess.Popen[bytes], int], chunked: bool
) -> None:
    process, port = console
    idle_kib = _memory_kib(process.pid, "VmRSS")

    response = _post_streamed(port, chunked=chunked)

    peak_kib = _memory_kib(process.pid, "VmHWM")
    assert (peak_kib - idle_kib) * 1024 < SLACK_BYTES, (idle_kib, peak_kib)
    assert response == b"" or response.startswith(b"HTTP/1.1 413"), response[:80]
    assert process.poll() is None
