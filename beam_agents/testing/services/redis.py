"""A throwaway `redis-server` on a loopback port, for tests (ours and users').

No persistence (`--save ''`, `--appendonly no`): every test namespaces its own
keys, and a restart starting from empty is what a fault test wants anyway.
The server can be stopped, paused and restarted on the same port so a test can
prove that one store client rides through an outage.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

from beam_agents.testing.services._process import (
    LOOPBACK,
    ServiceProcess,
    ServiceUnavailableError,
    find_binary,
    free_port,
    port_open,
    wait_until,
)

__all__ = ["RedisServer"]


class RedisServer:
    """A `redis-server` child process bound to 127.0.0.1 on a fixed port.

    `env` lets a test start the server under another locale (`LC_ALL`,
    `LOCPATH`): Lua's string comparison follows the server's collation, which
    is exactly the trap the Redis store's integer seq comparison avoids.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
        ready_timeout_s: float = 10.0,
    ) -> None:
        self.binary = find_binary(
            "redis-server", "/usr/bin/redis-server", "/usr/local/bin/redis-server"
        )
        self.workdir = workdir
        self.port = port if port is not None else free_port()
        self.env = dict(env or {})
        self.ready_timeout_s = ready_timeout_s
        self._process: ServiceProcess | None = None

    @property
    def url(self) -> str:
        """A `redis://` URL for database 0 of this server."""
        return f"redis://{LOOPBACK}:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        if self._process is not None and self._process.alive():
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            LOOPBACK,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.workdir),
        ]
        process = ServiceProcess(argv, log_path=self.workdir / "redis.log", env=self.env)
        self._process = process
        try:
            wait_until(
                lambda: port_open(self.port) or not process.alive(),
                timeout_s=self.ready_timeout_s,
                what=f"redis-server on port {self.port}",
            )
        except ServiceUnavailableError:
            process.stop()
            raise
        if not process.alive():
            raise ServiceUnavailableError(f"redis-server exited: {process.log_tail()}")

    def stop(self) -> None:
        """Stop the server (its data is gone: there is no persistence)."""
        if self._process is not None:
            self._process.stop()
            self._process = None
            wait_until(lambda: not port_open(self.port), timeout_s=10, what="redis-server shutdown")

    def restart(self) -> None:
        """Stop, then start again on the same port."""
        self.stop()
        self.start()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Freeze the server (SIGSTOP) inside the block: connections hang, nothing is refused."""
        process = self._require_process()
        os.killpg(process.process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.killpg(process.process.pid, signal.SIGCONT)

    def _require_process(self) -> ServiceProcess:
        if self._process is None or not self._process.alive():
            raise ServiceUnavailableError("redis-server is not running")
        return self._process

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
