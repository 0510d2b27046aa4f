"""The official Bigtable emulator (`cbtemulator`) on a loopback port, for tests.

The emulator keeps everything in memory, starts in about 0.1 s and serves the
data API and table admin (instance admin answers 501). Clients find it through
`BIGTABLE_EMULATOR_HOST`, which the pytest fixtures set only for the duration
of a test. It can be stopped, paused and restarted on the same port so a test
can prove that one store client rides through an outage.
"""

from __future__ import annotations

from pathlib import Path

from beam_agents.testing.services._process import LOOPBACK, ManagedServer, find_binary

__all__ = ["CBTEMULATOR_PATH", "BigtableEmulator"]

CBTEMULATOR_PATH = "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator"


class BigtableEmulator(ManagedServer):
    """A `cbtemulator` child process bound to 127.0.0.1 on a fixed port."""

    name = "cbtemulator"
    log_name = "cbtemulator.log"

    def __init__(
        self, workdir: Path, *, port: int | None = None, ready_timeout_s: float = 15.0
    ) -> None:
        self.binary = find_binary("cbtemulator", CBTEMULATOR_PATH)
        super().__init__(workdir, port=port, ready_timeout_s=ready_timeout_s)

    @property
    def host(self) -> str:
        """The `host:port` to put in `BIGTABLE_EMULATOR_HOST`."""
        return f"{LOOPBACK}:{self.port}"

    def argv(self) -> list[str]:
        return [self.binary, "-host", LOOPBACK, "-port", str(self.port)]
