"""The official Firestore emulator on a loopback port, for tests.

The jar is run directly with `java`: the SDK's wrapper script does not `exec`,
so stopping the wrapper can leave the JVM running. Readiness is `GET /`
answering `Ok` (about 1.5 s). Clients find the emulator through
`FIRESTORE_EMULATOR_HOST`, which the pytest fixtures set only for the duration
of a test. It can be stopped, paused and restarted on the same port so a test
can prove that one store client rides through an outage.
"""

from __future__ import annotations

import contextlib
import os
import signal
import urllib.request
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

__all__ = ["FIRESTORE_EMULATOR_JAR", "FirestoreEmulator"]

FIRESTORE_EMULATOR_JAR = Path(
    "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"
)
_MAIN_CLASS = "com.google.cloud.datastore.emulator.firestore.CloudFirestore"


class FirestoreEmulator:
    """The Firestore emulator's JVM bound to 127.0.0.1 on a fixed port."""

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        jar: Path = FIRESTORE_EMULATOR_JAR,
        ready_timeout_s: float = 60.0,
    ) -> None:
        self.java = find_binary("java")
        if not jar.is_file():
            raise ServiceUnavailableError(f"the Firestore emulator jar is missing: {jar}")
        self.jar = jar
        self.workdir = workdir
        self.port = port if port is not None else free_port()
        self.ready_timeout_s = ready_timeout_s
        self._process: ServiceProcess | None = None

    @property
    def host(self) -> str:
        """The `host:port` to put in `FIRESTORE_EMULATOR_HOST`."""
        return f"{LOOPBACK}:{self.port}"

    def start(self) -> None:
        """Start the emulator and wait until `GET /` answers `Ok`."""
        if self._process is not None and self._process.alive():
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [
            self.java,
            "-cp",
            str(self.jar),
            _MAIN_CLASS,
            "start",
            "--host",
            LOOPBACK,
            "--port",
            str(self.port),
        ]
        process = ServiceProcess(argv, log_path=self.workdir / "firestore.log")
        self._process = process
        try:
            wait_until(
                lambda: self._answers_ok() or not process.alive(),
                timeout_s=self.ready_timeout_s,
                what=f"the Firestore emulator on port {self.port}",
            )
        except ServiceUnavailableError:
            process.stop()
            raise
        if not process.alive():
            raise ServiceUnavailableError(f"the Firestore emulator exited: {process.log_tail()}")

    def _answers_ok(self) -> bool:
        if not port_open(self.port):
            return False
        url = f"http://{self.host}/"
        with urllib.request.urlopen(url, timeout=1) as response:
            body: bytes = response.read()
        return body.strip() == b"Ok"

    def stop(self) -> None:
        """Stop the emulator; its documents are gone."""
        if self._process is not None:
            self._process.stop()
            self._process = None
            wait_until(
                lambda: not port_open(self.port), timeout_s=15, what="Firestore emulator shutdown"
            )

    def restart(self) -> None:
        """Stop, then start again on the same port."""
        self.stop()
        self.start()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Freeze the emulator (SIGSTOP) inside the block: calls hang rather than fail fast."""
        if self._process is None or not self._process.alive():
            raise ServiceUnavailableError("the Firestore emulator is not running")
        pid = self._process.process.pid
        os.killpg(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.killpg(pid, signal.SIGCONT)

    def __enter__(self) -> FirestoreEmulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
