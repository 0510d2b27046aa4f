"""The console token: a weak one is refused at start, none given means one is generated."""

from __future__ import annotations

import os
import secrets
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from beam_agents.cli import main
from beam_agents.errors import ConfigurationError
from beam_agents.testing.services import free_port
from tests.console.conftest import TOKEN, approval, write_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

WEAK = {
    "the old minimum": "hunter2hunter2xx",
    "sixteen lowercase letters": "qwhvbxzrnmtlpkjd",
    "one character repeated": "z" * 64,
    "a piece repeated": "Xy7-Xy7-Xy7-Xy7-Xy7-Xy7-Xy7-Xy7-",
    "a long run of digits": "0123456789" * 6,
    "a phrase without spaces": "correcthorsebatterystaple",
}
STRONG = {
    "token_urlsafe(32)": secrets.token_urlsafe(32),
    "token_hex(16)": secrets.token_hex(16),
    "the tests' token": TOKEN,
}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "intents.jsonl", [approval("svc-1", "svc-1-0001", "down", "i-1")])
    return run


@pytest.fixture
def no_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    """A regression must fail the test, not start a console."""
    import uvicorn

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the console went on to serve")

    monkeypatch.setattr(uvicorn, "run", never)


@pytest.mark.parametrize("weak", list(WEAK.values()), ids=list(WEAK))
def test_a_weak_token_is_refused_with_the_rule_and_without_the_token(weak: str) -> None:
    from beam_agents.console.security import Secret

    with pytest.raises(ConfigurationError) as refused:
        Secret(weak)

    message = str(refused.value)
    assert "at least 128 bits" in message
    assert "token_urlsafe(32)" in message
    assert weak not in message


@pytest.mark.parametrize("strong", list(STRONG.values()), ids=list(STRONG))
def test_a_random_token_is_accepted(strong: str) -> None:
    from beam_agents.console.security import Secret

    assert repr(Secret(strong)) == "Secret(***)"


@pytest.mark.parametrize("where", ["--token", "environment"])
def test_the_console_refuses_to_start_behind_a_weak_token_in_one_line(
    run_dir: Path,
    where: str,
    no_serving: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    weak = WEAK["sixteen lowercase letters"]
    command = ["console", str(run_dir)]
    if where == "--token":
        command += ["--token", weak]
    else:
        monkeypatch.setenv("BEAM_AGENTS_CONSOLE_TOKEN", weak)

    assert main(command) == 2

    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "--token: refused" in err
    assert "at least 128 bits" in err
    assert weak not in err


def test_no_token_and_a_token_together_are_refused(
    run_dir: Path, no_serving: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["console", str(run_dir), "--no-token", "--token", TOKEN]) == 2
    err = capsys.readouterr().err
    assert "--no-token" in err
    assert TOKEN not in err


def _wait_for_port(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the console did not start"
            assert process.poll() is None, "the console exited"
            time.sleep(0.1)


def _stderr_lines(process: subprocess.Popen[bytes], port: int) -> list[str]:
    """What the console printed before it started listening (read without blocking)."""
    assert process.stderr is not None
    os.set_blocking(process.stderr.fileno(), False)
    _wait_for_port(process, port)
    return (process.stderr.read() or b"").decode().splitlines()


def _token_file(stderr_lines: list[str]) -> Path:
    said = [line for line in stderr_lines if "was generated" in line]
    assert len(said) == 1, stderr_lines
    return Path(said[0].split(" it is in ", 1)[1].split(" ", 1)[0])


def test_without_a_token_the_console_generates_one_and_says_where_it_is(run_dir: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "BEAM_AGENTS_CONSOLE_TOKEN"}
    process = subprocess.Popen(
        [sys.executable, "-m", "beam_agents.cli", "console", str(run_dir), "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        lines = _stderr_lines(process, port)
        token_file = _token_file(lines)
        mode = stat.S_IMODE(token_file.stat().st_mode)
        directory_mode = stat.S_IMODE(token_file.parent.stat().st_mode)
        token = token_file.read_text().strip()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            without = client.get("/approvals").status_code
            bearer = client.get("/approvals", headers={"Authorization": f"Bearer {token}"})
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert process.stderr is not None
        rest = process.stderr.read()

    stderr = "\n".join(lines) + (rest or b"").decode()
    assert (mode, directory_mode) == (0o600, 0o700)
    assert len(token) >= 43
    assert (without, bearer.status_code) == (401, 200)
    assert token not in stderr
    assert not token_file.exists()  # removed when the console stopped


def test_with_no_token_the_console_serves_loopback_to_anyone_on_the_machine(
    run_dir: Path,
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "BEAM_AGENTS_CONSOLE_TOKEN"}
    command = [sys.executable, "-m", "beam_agents.cli", "console", str(run_dir), "--no-token"]
    process = subprocess.Popen([*command, "--port", str(port)], env=env, stderr=subprocess.PIPE)
    try:
        _wait_for_port(process, port)
        status = httpx.get(f"http://127.0.0.1:{port}/approvals").status_code
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)

    assert status == 200
    assert "generated" not in stderr.decode()
