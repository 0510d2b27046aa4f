"""Running a test server as a child process on a free loopback port.

Tests talk to real servers, never mocks; these helpers keep that cheap and
safe: loopback addresses only, a readiness probe instead of sleeps, and a
process group that is always torn down (emulator wrappers fork children).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from beam_agents.errors import BeamAgentsError

__all__ = [
    "LOOPBACK",
    "ManagedServer",
    "ServiceProcess",
    "ServiceUnavailableError",
    "find_binary",
    "free_port",
    "http_answers_ok",
    "port_open",
    "services_required",
    "wait_until",
]

LOOPBACK = "127.0.0.1"


class ServiceUnavailableError(BeamAgentsError):
    """A test service's binary is missing or it did not become ready."""


def services_required() -> bool:
    """True when a missing service must fail the run instead of skipping (CI)."""
    return os.environ.get("BEAM_AGENTS_REQUIRE_SERVICES") == "1"


def free_port() -> int:
    """A TCP port that was free on the loopback interface a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def find_binary(name: str, *candidates: str | Path) -> str:
    """`name` on PATH, else the first existing candidate path; else raise."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in candidates:
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise ServiceUnavailableError(f"{name} not found on PATH or in {[str(c) for c in candidates]}")


def wait_until(ready: Callable[[], bool], *, timeout_s: float, what: str) -> None:
    """Poll `ready` until it returns True; raise naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise ServiceUnavailableError(f"{what} was not ready within {timeout_s:.0f} s")


def port_open(port: int, host: str = LOOPBACK) -> bool:
    """Whether something accepts TCP connections on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def http_answers_ok(port: int) -> bool:
    """Whether `GET /` on the loopback port answers `Ok`, as the gcloud emulators do once serving.

    Their port opens a little before they serve, so the TCP probe comes first.
    """
    if not port_open(port):
        return False
    with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/", timeout=1) as response:
        body: bytes = response.read()
    return body.strip() == b"Ok"


class ServiceProcess:
    """A child process in its own session, killed with its whole group on stop."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(  # noqa: S603 - argv built by our own fixtures
            self.argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
        )

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.process.poll() is None

    def log_tail(self, size: int = 2000) -> str:
        """The end of the process's output, for error messages."""
        try:
            return self.log_path.read_bytes()[-size:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the process group, then kill it if it lingers."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=timeout_s)
        self._log.close()


class ManagedServer(ABC):
    """A test server on a fixed loopback port: start, stop, restart on that port, pause.

    Subclasses say how to launch (`argv`) and when the server is ready
    (`ready`, default: the port accepts connections). Restarting on the same
    port lets a fault test prove that one client rides through an outage;
    pausing (SIGSTOP) makes calls hang instead of failing fast.
    """

    name = "server"
    log_name = "server.log"
    shutdown_timeout_s = 15.0

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
        ready_timeout_s: float = 15.0,
    ) -> None:
        self.workdir = workdir
        self.port = port if port is not None else free_port()
        self.env = dict(env or {})
        self.ready_timeout_s = ready_timeout_s
        self._process: ServiceProcess | None = None

    @abstractmethod
    def argv(self) -> list[str]:
        """The command line that starts the server on `self.port`."""

    def ready(self) -> bool:
        """Whether the started server serves requests."""
        return port_open(self.port)

    def start(self) -> None:
        """Start the server and wait until it is ready."""
        if self._process is not None and self._process.alive():
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        process = ServiceProcess(self.argv(), log_path=self.workdir / self.log_name, env=self.env)
        self._process = process
        try:
            wait_until(
                lambda: self.ready() or not process.alive(),
                timeout_s=self.ready_timeout_s,
                what=f"{self.name} on port {self.port}",
            )
        except ServiceUnavailableError:
            process.stop()
            raise
        if not process.alive():
            raise ServiceUnavailableError(f"{self.name} exited: {process.log_tail()}")

    def stop(self) -> None:
        """Stop the server; whatever it held in memory is gone."""
        if self._process is not None:
            self._process.stop()
            self._process = None
            wait_until(
                lambda: not port_open(self.port),
                timeout_s=self.shutdown_timeout_s,
                what=f"{self.name} shutdown",
            )

    def restart(self) -> None:
        """Stop, then start again on the same port."""
        self.stop()
        self.start()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Freeze the server (SIGSTOP) inside the block: calls hang rather than fail fast."""
        if self._process is None or not self._process.alive():
            raise ServiceUnavailableError(f"{self.name} is not running")
        pid = self._process.process.pid
        os.killpg(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.killpg(pid, signal.SIGCONT)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
