"""The long-term store URI grammar, validated without importing any client library.

`AgentConfig.longterm_memory` is checked at construction, on the machine that
builds the pipeline, which may not even have the store clients installed: a
typo must fail there, not minutes later on every worker. So this module is
pure string handling, and it knows the grammar of every backend:

    memory://[NAME]                               in-process reference store
    redis://<url>, rediss://<url>                 Redis
    bigtable://<project>/<instance>/<table>       Bigtable
    firestore://<project>/<collection>[?database=<db>]
    <dialect>+<async driver>://...                any SQLAlchemy async URL
    postgresql+cloudsql://<iam user>@<project>:<region>:<instance>/<database>[?ip_type=private]
                                                  Cloud SQL, IAM database authentication
    secretmanager://projects/<p>/secrets/<s>/versions/<v>
                                                  one of the above, held in Secret Manager

A URI may carry a password. Then it belongs in Secret Manager, and the
pipeline carries only `secretmanager://` and the version's name: `open_store`
reads the real URI where it runs (a worker's `setup()`), so the password is
never pickled into the job graph or staged with it. `check_store_credentials`
enforces that where a URI would be pickled (`AgentConfig`); `open_store` and
the CLI, which run where the store opens, accept a password. Whatever the
form, nothing here ever repeats a password: errors, `repr` and `str` all go
through `redact_uri`. That and the `secretmanager://` form are every URL's,
not the stores' alone (`beam_agents._connections`): they are named here too
because the store's users reach them here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from beam_agents._connections.secret_sources import SECRET_SCHEME, check_secret_uri
from beam_agents._connections.url_credentials import (
    check_url_credentials,
    redact_uri,
    uri_secrets,
)
from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores.errors import InvalidStoreURIError

__all__ = [
    "ASYNC_SQL_DRIVERS",
    "CLOUDSQL_SCHEME",
    "SECRET_SCHEME",
    "Backend",
    "StoreURI",
    "check_cross_entity_recall",
    "check_store_credentials",
    "parse_store_uri",
    "redact_uri",
    "refuse_in_memory_sqlite",
    "uri_secrets",
]

Backend = Literal["memory", "redis", "bigtable", "firestore", "sql", "secret"]

ASYNC_SQL_DRIVERS: Final[dict[str, frozenset[str]]] = {
    "postgresql": frozenset({"asyncpg", "psycopg", "psycopg_async"}),
    "sqlite": frozenset({"aiosqlite"}),
    "mysql": frozenset({"aiomysql", "asyncmy"}),
    "mariadb": frozenset({"aiomysql", "asyncmy"}),
    "oracle": frozenset({"oracledb", "oracledb_async"}),
    "mssql": frozenset({"aioodbc"}),
}
"""SQLAlchemy dialects and the drivers of theirs that work with `create_async_engine`.

A closed list on purpose: `postgresql+psycopg2://` parses as a URL but would
fail on every worker, so it is refused here instead."""

_SQL_SCHEME = re.compile(r"^([a-z][a-z0-9_]*)\+([a-z][a-z0-9_]*)$")
_SQL_AUTHORITY = re.compile(
    r"^(?:[^:/]*(?::[^@]*)?@)?(?:\[[^/?\]]+\]|[^/:?\[\]]*)?(?::(?P<port>[^/?]*))?(?:[/?]|$)"
)
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:_-]*$")
_RESOURCE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
_FIRESTORE_DATABASE = re.compile(r"^(\(default\)|[a-z][a-z0-9-]*)$")


def check_store_credentials(field: str, uri: str) -> None:
    """Refuse a store URI with a credential in it, for a place it would be pickled.

    Raises `ConfigurationError` naming `field`; a URI that is not a str is
    left to `parse_store_uri` to refuse.
    """
    if isinstance(uri, str):
        hint = (
            "a URI with a credential would be pickled into the job graph: keep it in "
            f"Secret Manager and pass '{SECRET_SCHEME}://projects/P/secrets/S/versions/V' "
            "(a local PostgreSQL also takes its password from PGPASSWORD when the URI has none)"
        )
        check_url_credentials(field, uri, hint=hint)


@dataclass(frozen=True, slots=True, repr=False)
class StoreURI:
    """A parsed, validated `AgentConfig.longterm_memory`.

    `uri` is the string as given (it may hold a password, so `repr` and `str`
    show `redacted` instead). Each backend reads only its own fields; the
    rest stay empty. Backends build themselves with `from_uri(StoreURI)`.
    """

    backend: Backend
    uri: str
    scheme: str
    namespace: str = ""
    """memory: the process-wide namespace (`memory://` is the namespace "")."""
    project: str = ""
    """bigtable, firestore: the Google Cloud project."""
    instance: str = ""
    """bigtable: the instance id."""
    table: str = ""
    """bigtable: the table id."""
    collection: str = ""
    """firestore: the collection holding the rows."""
    database: str = ""
    """firestore: the database id, `(default)` unless `?database=` says otherwise."""
    dialect: str = ""
    """sql: the SQLAlchemy dialect (`postgresql`, `sqlite`, ...)."""
    driver: str = ""
    """sql: the async DBAPI driver (`asyncpg`, `aiosqlite`, ...)."""
    path: str = ""
    """sql (sqlite): the database file as given, `""` for an in-memory database."""
    secret_version: str = ""
    """secret: the version holding the real URI, `projects/P/secrets/S/versions/V`."""
    user: str = ""
    """sql (cloudsql): the IAM database user, `SA@PROJECT.iam` for a service account."""
    ip_type: str = ""
    """sql (cloudsql): `private` (the default), `public` or `psc`."""

    @property
    def in_process(self) -> bool:
        """Whether the rows live only inside the process that opens the store.

        True for `memory://` (a process-wide namespace) and an in-memory
        SQLite database (`sqlite+aiosqlite://`, `/:memory:`, `mode=memory`),
        which is private to one connection pool: what another process, worker
        or DoFn instance opens under the same URI is a different, empty store.
        """
        return self.backend == "memory" or (self.dialect == "sqlite" and not self.path)

    @property
    def redacted(self) -> str:
        """The URI with passwords replaced by `***`, safe for logs and errors."""
        return redact_uri(self.uri)

    def __str__(self) -> str:
        return self.redacted

    def __repr__(self) -> str:
        return f"StoreURI({self.redacted!r}, backend={self.backend!r})"


def _fail(uri: str, problem: str) -> InvalidStoreURIError:
    return InvalidStoreURIError(f"{problem} (got {redact_uri(uri)!r})")


def parse_store_uri(uri: str) -> StoreURI:
    """Validate a store URI and split it into its backend's fields.

    Raises `InvalidStoreURIError` (a `ConfigurationError` and `ValueError`
    naming `AgentConfig.longterm_memory`) for anything that would not open.
    """
    if not isinstance(uri, str):
        raise InvalidStoreURIError(f"must be a str URI, got {type(uri).__name__}")
    scheme, sep, rest = uri.partition("://")
    if not sep or not scheme:
        raise _fail(uri, "not a URI: expected 'scheme://...', e.g. 'memory://'")
    if scheme == "memory":
        return _parse_memory(uri, rest)
    if scheme in ("redis", "rediss"):
        return _parse_redis(uri, scheme)
    if scheme == "bigtable":
        return _parse_bigtable(uri, rest)
    if scheme == "firestore":
        return _parse_firestore(uri, rest)
    if scheme == SECRET_SCHEME:
        return _parse_secret(uri)
    if scheme == CLOUDSQL_SCHEME:
        return _parse_cloudsql(uri, rest)
    return _parse_sql(uri, scheme, rest)


def _parse_memory(uri: str, rest: str) -> StoreURI:
    if any(c in rest for c in "?#"):
        raise _fail(uri, "memory:// takes only a namespace name, no query or fragment")
    return StoreURI(backend="memory", uri=uri, scheme="memory", namespace=rest)


def _parse_redis(uri: str, scheme: str) -> StoreURI:
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        raise _fail(uri, f"{scheme}:// URL has an invalid port") from None
    if not parts.hostname:
        raise _fail(uri, f"{scheme}:// needs a host, e.g. '{scheme}://localhost:6379/0'")
    if port == 0:
        raise _fail(uri, f"{scheme}:// port must be in 1..65535")
    database = parts.path.lstrip("/")
    if parts.path not in ("", "/") and not database.isdigit():
        raise _fail(uri, f"{scheme}:// path must be a database number, e.g. '/0'")
    return StoreURI(backend="redis", uri=uri, scheme=scheme)


def _segments(uri: str, rest: str, names: tuple[str, ...]) -> list[str]:
    example = "/".join(f"<{name}>" for name in names)
    scheme = uri.partition("://")[0]
    path = rest.partition("?")[0]
    if "#" in rest:
        raise _fail(uri, f"{scheme}:// takes no fragment")
    segments = path.split("/")
    padded = segments + [""] * (len(names) - len(segments))
    for name, segment in zip(names, padded, strict=False):
        if not segment:
            raise _fail(uri, f"{scheme}:// must be '{scheme}://{example}': missing <{name}>")
    if len(segments) > len(names):
        raise _fail(uri, f"{scheme}:// must be '{scheme}://{example}': too many path segments")
    return segments


def _check_name(uri: str, value: str, what: str, pattern: re.Pattern[str]) -> str:
    if not pattern.match(value):
        raise _fail(uri, f"{what} {value!r} has characters an id cannot have")
    return value


def _parse_bigtable(uri: str, rest: str) -> StoreURI:
    project, instance, table = _segments(uri, rest, ("project", "instance", "table"))
    if "?" in rest:
        raise _fail(uri, "bigtable:// takes no query parameters")
    return StoreURI(
        backend="bigtable",
        uri=uri,
        scheme="bigtable",
        project=_check_name(uri, project, "project", _PROJECT),
        instance=_check_name(uri, instance, "instance", _RESOURCE),
        table=_check_name(uri, table, "table", _RESOURCE),
    )


def _parse_firestore(uri: str, rest: str) -> StoreURI:
    project, collection = _segments(uri, rest, ("project", "collection"))
    query = rest.partition("?")[2]
    params = parse_qsl(query, keep_blank_values=True)
    unknown = sorted({name for name, _ in params} - {"database"})
    if unknown:
        raise _fail(uri, f"firestore:// accepts only ?database=, not {unknown}")
    database = dict(params).get("database", "(default)")
    _check_name(uri, database, "database", _FIRESTORE_DATABASE)
    if collection in (".", "..") or (collection.startswith("__") and collection.endswith("__")):
        raise _fail(uri, f"collection {collection!r} is reserved by Firestore")
    return StoreURI(
        backend="firestore",
        uri=uri,
        scheme="firestore",
        project=_check_name(uri, project, "project", _PROJECT),
        collection=_check_name(uri, collection, "collection", _RESOURCE),
        database=database,
    )


CLOUDSQL_SCHEME: Final = "postgresql+cloudsql"
_CLOUDSQL = re.compile(
    r"^(?P<user>[^:@/?#]+)@(?P<instance>[a-z][a-z0-9.:-]*:[a-z0-9-]+:[a-z][a-z0-9-]*)"
    r"/(?P<database>[A-Za-z0-9_][A-Za-z0-9_$-]*)(?:\?(?P<query>[^#]*))?$"
)
_CLOUDSQL_IP_TYPES: Final = frozenset({"private", "public", "psc"})


def _parse_cloudsql(uri: str, rest: str) -> StoreURI:
    """Cloud SQL for PostgreSQL through the Cloud SQL connector, signed in with IAM.

    No password can be given: the connector signs in as the worker's service
    account with a short-lived token. A password user goes through
    `secretmanager://` holding a `postgresql+asyncpg://` URI instead.
    """
    example = (
        f"{CLOUDSQL_SCHEME}://<iam user>@<project>:<region>:<instance>/<database>"
        "[?ip_type=private|public|psc]"
    )
    head, at, tail = rest.rpartition("@")
    user = unquote(head)
    if ":" in head:
        raise _fail(uri, f"{CLOUDSQL_SCHEME}:// signs in with IAM and takes no password")
    match = _CLOUDSQL.match(f"{quote(user, safe='')}@{tail}") if at and user else None
    if match is None:
        raise _fail(uri, f"must be '{example}' (the user being the IAM database user)")
    params = parse_qsl(match.group("query") or "", keep_blank_values=True)
    unknown = sorted({name for name, _ in params} - {"ip_type", "iam"})
    if unknown:
        raise _fail(
            uri, f"{CLOUDSQL_SCHEME}:// accepts only ?ip_type= and ?iam=true, not {unknown}"
        )
    options = dict(params)
    if options.get("iam", "true") != "true":
        raise _fail(
            uri,
            f"{CLOUDSQL_SCHEME}:// always signs in with IAM; for a password user keep a "
            "postgresql+asyncpg:// URI in Secret Manager and pass secretmanager://",
        )
    ip_type = options.get("ip_type", "private")
    if ip_type not in _CLOUDSQL_IP_TYPES:
        raise _fail(uri, f"ip_type must be one of {sorted(_CLOUDSQL_IP_TYPES)}, not {ip_type!r}")
    return StoreURI(
        backend="sql",
        uri=uri,
        scheme=CLOUDSQL_SCHEME,
        dialect="postgresql",
        driver="cloudsql",
        instance=match.group("instance"),
        database=match.group("database"),
        user=user,
        ip_type=ip_type,
    )


def _parse_secret(uri: str) -> StoreURI:
    """A name, not a URI: what it holds is read and parsed by `open_store` on the worker."""
    try:
        version = check_secret_uri("AgentConfig.longterm_memory", uri)
    except ConfigurationError as exc:
        raise InvalidStoreURIError(exc.problem) from None
    return StoreURI(backend="secret", uri=uri, scheme=SECRET_SCHEME, secret_version=version)


SQL_DIALECTS: Final = frozenset({"postgresql", "sqlite"})
"""Dialects the SQL store is verified on. Others are refused here, at config
time, rather than when a worker builds the store: their upsert syntax differs."""


def _parse_sql(uri: str, scheme: str, rest: str) -> StoreURI:
    known = (
        "memory://, redis://, rediss://, bigtable://, firestore://, secretmanager:// "
        "or an async SQLAlchemy URL"
    )
    match = _SQL_SCHEME.match(scheme)
    if match is None:
        if scheme in ASYNC_SQL_DRIVERS:
            drivers = ", ".join(f"{scheme}+{d}://" for d in sorted(ASYNC_SQL_DRIVERS[scheme]))
            raise _fail(uri, f"a SQL URL needs an async driver: use {drivers}")
        raise _fail(uri, f"unknown scheme {scheme!r}: expected {known}")
    dialect, driver = match.groups()
    if dialect not in ASYNC_SQL_DRIVERS:
        hint = " (did you mean 'postgresql'?)" if dialect.startswith("postgres") else ""
        raise _fail(uri, f"unknown SQL dialect {dialect!r}{hint}: expected {known}")
    if driver not in ASYNC_SQL_DRIVERS[dialect]:
        drivers = ", ".join(sorted(ASYNC_SQL_DRIVERS[dialect]))
        raise _fail(uri, f"{dialect}+{driver} is not an async driver; use one of: {drivers}")
    if dialect not in SQL_DIALECTS:
        raise _fail(
            uri,
            f"the SQL store is verified on postgresql and sqlite only; {dialect} is not "
            "supported (its seq-guarded upsert differs)",
        )
    authority = _SQL_AUTHORITY.match(rest)
    if authority is None:
        raise _fail(uri, "malformed SQL URL")
    port = authority.group("port")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise _fail(uri, "SQL URL has an invalid port")
    path = ""
    if dialect == "sqlite":
        if rest.partition("/")[0]:
            raise _fail(uri, "a SQLite URL has no host: 'sqlite+aiosqlite:///relative/path.db'")
        path = _sqlite_path(rest)
    return StoreURI(
        backend="sql", uri=uri, scheme=scheme, dialect=dialect, driver=driver, path=path
    )


def _sqlite_path(rest: str) -> str:
    """The file of `sqlite+<driver>://<rest>`, or "" when the database is in memory.

    SQLAlchemy reads everything after the third slash as the path (so four
    slashes make it absolute); `:memory:`, no path at all, `file::memory:`
    and `mode=memory` are all SQLite's in-memory database.
    """
    location, _, query = rest[1:].partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    if params.get("mode") == "memory" or location in ("", ":memory:", "file::memory:"):
        return ""
    return location.removeprefix("file:") if params.get("uri") == "true" else location


def refuse_in_memory_sqlite(parsed: StoreURI, consequence: str) -> None:
    """Raise `InvalidStoreURIError` when `parsed` is an in-memory SQLite database.

    Such a database exists only inside the connection pool that created it;
    `consequence` says what that means for the caller (a pipeline, `provision`).
    Callers have already parsed the URI, so it is not parsed again here.
    """
    if parsed.dialect == "sqlite" and parsed.in_process:
        raise _fail(
            parsed.uri,
            "an in-memory SQLite database lives only in the connection pool that opened it: "
            f"{consequence}; use a file, e.g. 'sqlite+aiosqlite:///agent.db'",
        )


CROSS_ENTITY_BACKENDS: Final = (
    "memory:// (exact scan, for tests)",
    "SQLite (sqlite+aiosqlite://)",
    "PostgreSQL with the pgvector extension (postgresql+asyncpg://, postgresql+cloudsql://)",
    "Firestore (firestore://)",
)


def check_cross_entity_recall(uri: str) -> None:
    """Refuse, at configuration time, recall across entities on a store with no vector index.

    Pure string handling like the rest of this module; a `secretmanager://`
    URI passes (the real one is read on the worker, where the store's own
    `nearest` refuses), and so does PostgreSQL, whose pgvector is checked
    when the store opens.
    """
    parsed = parse_store_uri(uri)
    backend = parsed.backend
    if backend in ("memory", "firestore", "secret"):
        return
    if backend == "sql" and parsed.dialect in ("sqlite", "postgresql"):
        return
    what = f"{parsed.dialect} (SQL)" if backend == "sql" else backend
    raise ConfigurationError(
        "AgentConfig.cross_entity_recall",
        f"the long-term store {parsed.redacted!r} ({what}) has no native vector index, so it "
        f"cannot recall across entities; the backends that can: {', '.join(CROSS_ENTITY_BACKENDS)}",
    )
