"""A throwaway `redis-server` on a loopback port, for tests (ours and users').

No persistence (`--save ''`, `--appendonly no`): every test namespaces its own
keys, and a restart starting from empty is what a fault test wants anyway.
The server can be stopped, paused and restarted on the same port so a test can
prove that one store client rides through an outage.

`password=` makes the server require AUTH (`--requirepass`); `tls=` serves
TLS only (`--tls-port`, plain port off) with certificates from
`beam_agents.testing.services.tls.make_certificates`, clients not asked for
a certificate of their own. `url` then has the right scheme, credentials and
`ssl_ca_certs`, so a test can hand it to `open_store` as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from beam_agents.testing.services._process import LOOPBACK, ManagedServer, find_binary

if TYPE_CHECKING:
    from beam_agents.testing.services.tls import TestCertificates

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
        password: str | None = None,
        tls: TestCertificates | None = None,
    ) -> None:
        self.binary = find_binary(
            "redis-server", "/usr/bin/redis-server", "/usr/local/bin/redis-server"
        )
        self.password = password
        self.tls = tls
        super().__init__(workdir, port=port, env=env, ready_timeout_s=ready_timeout_s)

    @property
    def url(self) -> str:
        """A URL for database 0 that connects: `rediss://` with the CA under TLS, AUTH if set."""
        return self.url_with(password=self.password)

    def url_with(self, *, password: str | None, ca_file: Path | None = None) -> str:
        """The URL with another password (None: none) or CA file, to test failures."""
        scheme = "rediss" if self.tls is not None else "redis"
        auth = f":{quote(password, safe='')}@" if password is not None else ""
        url = f"{scheme}://{auth}{LOOPBACK}:{self.port}/0"
        ca = ca_file if ca_file is not None else (self.tls.ca_file if self.tls else None)
        return f"{url}?ssl_ca_certs={quote(str(ca))}" if ca is not None else url

    def argv(self) -> list[str]:
        argv = [self.binary, "--bind", LOOPBACK, "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.workdir)]
        if self.tls is None:
            argv += ["--port", str(self.port)]
        else:
            argv += ["--port", "0", "--tls-port", str(self.port)]
            argv += ["--tls-cert-file", str(self.tls.cert_file)]
            argv += ["--tls-key-file", str(self.tls.key_file)]
            argv += ["--tls-ca-cert-file", str(self.tls.ca_file), "--tls-auth-clients", "no"]
        if self.password is not None:
            argv += ["--requirepass", self.password]
        return argv
