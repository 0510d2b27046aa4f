"""A throwaway `redis-server` on a loopback port, for tests (ours and users').

No persistence (`--save ''`, `--appendonly no`): every test namespaces its own
keys, and a restart starting from empty is what a fault test wants anyway.
The server can be stopped, paused and restarted on the same port so a test can
prove that one store client rides through an outage.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from beam_agents.testing.services._process import LOOPBACK, ManagedServer, find_binary

__all__ = ["RedisServer"]


class RedisServer(ManagedServer):
    """A `redis-server` child process bound to 127.0.0.1 on a fixed port.

    `env` lets a test start the server under another locale (`LC_ALL`,
    `LOCPATH`): Lua's string comparison follows the server's collation, which
    is exactly the trap the Redis store's integer seq comparison avoids.
    """

    name = "redis-server"
    log_name = "redis.log"

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
        super().__init__(workdir, port=port, env=env, ready_timeout_s=ready_timeout_s)

    @property
    def url(self) -> str:
        """A `redis://` URL for database 0 of this server."""
        return f"redis://{LOOPBACK}:{self.port}/0"

    def argv(self) -> list[str]:
        return [
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
