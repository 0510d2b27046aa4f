"""The official Firestore emulator on a loopback port, for tests.

The jar is run directly with `java`: the SDK's wrapper script does not `exec`,
so stopping the wrapper can leave the JVM running. Readiness is `GET /`
answering `Ok` (about 1.5 s). Clients find the emulator through
`FIRESTORE_EMULATOR_HOST`, which the pytest fixtures set only for the duration
of a test. It can be stopped, paused and restarted on the same port so a test
can prove that one store client rides through an outage.
"""

from __future__ import annotations

from pathlib import Path

from beam_agents.testing.services._process import (
    LOOPBACK,
    ManagedServer,
    ServiceUnavailableError,
    find_binary,
    http_answers_ok,
)

__all__ = ["FIRESTORE_EMULATOR_JAR", "FirestoreEmulator"]

FIRESTORE_EMULATOR_JAR = Path(
    "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"
)
_MAIN_CLASS = "com.google.cloud.datastore.emulator.firestore.CloudFirestore"


class FirestoreEmulator(ManagedServer):
    """The Firestore emulator's JVM bound to 127.0.0.1 on a fixed port."""

    name = "the Firestore emulator"
    log_name = "firestore.log"

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
        super().__init__(workdir, port=port, ready_timeout_s=ready_timeout_s)

    @property
    def host(self) -> str:
        """The `host:port` to put in `FIRESTORE_EMULATOR_HOST`."""
        return f"{LOOPBACK}:{self.port}"

    def argv(self) -> list[str]:
        port = str(self.port)
        return [
            self.java,
            "-cp",
            str(self.jar),
            _MAIN_CLASS,
            "start",
            "--host",
            LOOPBACK,
            "--port",
            port,
        ]

    def ready(self) -> bool:
        """`GET /` answers `Ok` (the port opens before the emulator serves)."""
        return http_answers_ok(self.port)
