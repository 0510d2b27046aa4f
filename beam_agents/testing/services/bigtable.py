"""The official Bigtable emulator (`cbtemulator`) on a loopback port, for tests.

The emulator keeps everything in memory, starts in about 0.1 s and serves the
data API and table admin (instance admin answers 501). Clients find it through
`BIGTABLE_EMULATOR_HOST`, which the pytest fixtures set only for the duration
of a test. It can be stopped, paused and restarted on the same port so a test
can prove that one store client rides through an outage.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
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

__all__ = ["CBTEMULATOR_PATH", "BigtableEmulator"]

CBTEMULATOR_PATH = "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator"


class BigtableEmulator:
    """A `cbtemulator` child process bound to 127.0.0.1 on a fixed port."""

    def __init__(
        self, workdir: Path, *, port: int | None = None, ready_timeout_s: float = 15.0
    ) -> None:
        self.binary = find_binary("cbtemulator", CBTEMULATOR_PATH)
        self.workdir = workdir
        self.port = port if port is not None else free_port()
        self.ready_timeout_s = ready_timeout_s
        self._process: ServiceProcess | None = None

    @property
    def host(self) -> str:
        """The `host:port` to put in `BIGTABLE_EMULATOR_HOST`."""
        return f"{LOOPBACK}:{self.port}"

    def start(self) -> None:
        """Start the emulator and wait until it accepts connections."""
        if self._process is not None and self._process.alive():
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [self.binary, "-host", LOOPBACK, "-port", str(self.port)]
        process = ServiceProcess(argv, log_path=self.workdir / "cbtemulator.log")
        self._process = process
        try:
            wait_until(
                lambda: port_open(self.port) or not process.alive(),
                timeout_s=self.ready_timeout_s,
                what=f"cbtemulator on port {self.port}",
            )
        except ServiceUnavailableError:
            process.stop()
            raise
        if not process.alive():
            raise ServiceUnavailableError(f"cbtemulator exited: {process.log_tail()}")

    def stop(self) -> None:
        """Stop the emulator; its tables and rows are gone."""
        if self._process is not None:
            self._process.stop()
            self._process = None
            wait_until(lambda: not port_open(self.port), timeout_s=10, what="cbtemulator shutdown")

    def restart(self) -> None:
        """Stop, then start again on the same port."""
        self.stop()
        self.start()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Freeze the emulator (SIGSTOP) inside the block: calls hang rather than fail fast."""
        if self._process is None or not self._process.alive():
            raise ServiceUnavailableError("cbtemulator is not running")
        pid = self._process.process.pid
        os.killpg(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.killpg(pid, signal.SIGCONT)

    def __enter__(self) -> BigtableEmulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
