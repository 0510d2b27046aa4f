"""The official Pub/Sub emulator on a loopback port, for tests.

The SDK ships a launcher script that starts a JVM; it runs in a session of its
own and `ManagedServer` stops it by killing the whole process group, so no JVM
outlives the test run. Readiness is `GET /` answering `Ok` (about 2 s): the
port opens a little before the emulator serves. Clients — `google-cloud-pubsub`
and Beam's `ReadFromPubSub`/`WriteToPubSub` on the DirectRunner, which read
through it — find the emulator through `PUBSUB_EMULATOR_HOST`, which the
pytest fixtures set only for the duration of a test. The emulator keeps
everything in memory; topic and subscription names need at least 3 characters.
"""

from __future__ import annotations

from pathlib import Path

from beam_agents.testing.services._process import (
    LOOPBACK,
    ManagedServer,
    find_binary,
    http_answers_ok,
)

__all__ = ["PUBSUB_EMULATOR_PATH", "PubSubEmulator"]

PUBSUB_EMULATOR_PATH = (
    "/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator"
)


class PubSubEmulator(ManagedServer):
    """The Pub/Sub emulator bound to 127.0.0.1 on a fixed port."""

    name = "the Pub/Sub emulator"
    log_name = "pubsub.log"

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        binary: str | None = None,
        ready_timeout_s: float = 60.0,
    ) -> None:
        self.binary = binary or find_binary("cloud-pubsub-emulator", PUBSUB_EMULATOR_PATH)
        # The launcher script needs java on PATH; name it as the missing piece when absent.
        find_binary("java")
        super().__init__(workdir, port=port, ready_timeout_s=ready_timeout_s)

    @property
    def host(self) -> str:
        """The `host:port` to put in `PUBSUB_EMULATOR_HOST`."""
        return f"{LOOPBACK}:{self.port}"

    def argv(self) -> list[str]:
        return [self.binary, f"--host={LOOPBACK}", f"--port={self.port}"]

    def ready(self) -> bool:
        """`GET /` answers `Ok` (the port opens before the emulator serves)."""
        return http_answers_ok(self.port)
