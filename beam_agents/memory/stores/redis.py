"""Redis backend: one Lua script call per flush, so an activation's rows land together.

Layout. Every entity owns three keys that share one cluster hash tag (so the
script may touch all of them on Redis Cluster and Memorystore):

    <namespace>:{e<hex(entity_key)>}:s   hash   record key -> decimal seq
    <namespace>:{e<hex(entity_key)>}:r   hash   record key -> envelope bytes
    <namespace>:{e<hex(entity_key)>}:i   zset   record key, every score 0

The entity key is hex-encoded inside the key name, so its bytes can never
contain the separators around it; the record key only ever appears as a hash
field or zset member, which Redis compares as opaque bytes. No choice of
entity or record key can therefore name another entity's keys. The `e` inside
the braces keeps the hash tag non-empty for the empty entity key (an empty
`{}` would hash the whole name and split the entity across slots).

Search never scans an entity: a sorted set whose scores are all equal is
ordered by member bytes (memcmp), and `ZRANGEBYLEX` takes bounds as raw bytes
after a one-byte `[`/`(` marker, so the prefix needs no escaping. UTF-8 never
contains the byte 0xFF, which makes `prefix + b"\\xff"` an exclusive upper
bound above every key that starts with the prefix and below every other key
greater than it.

The guard compares seqs as integers. Lua's `<` on strings calls `strcoll`,
which follows the server's locale, and Lua numbers are doubles, exact only up
to 2**53 while seqs go to 2**63 - 1. The script therefore compares canonical
decimal strings by length, then numerically in 9-digit chunks.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Final, Self, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis import exceptions as redis_errors
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from beam_agents.memory.stores._inflight import finish_in_flight
from beam_agents.memory.stores.base import (
    MAX_SEARCH_LIMIT,
    MemoryRecord,
    MemoryStore,
)
from beam_agents.memory.stores.envelope import decode_record, encode_record
from beam_agents.memory.stores.errors import (
    InvalidStoreURIError,
    StoreError,
    StoreUnavailableError,
)
from beam_agents.memory.stores.uri import StoreURI, redact_uri

__all__ = ["DEFAULT_NAMESPACE", "RedisMemoryStore"]

DEFAULT_NAMESPACE: Final = "beam_agents"
_NAMESPACE_RE: Final = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_HEX_RE: Final = re.compile(rb"(?:[0-9a-f]{2})*")
# Options this module consumes; every other query option goes to redis-py
# unchanged (ssl_ca_certs, ssl_cert_reqs, socket_timeout, ...).
_OWN_OPTIONS: Final = frozenset({"namespace", "timeout_s"})

_UPSERT_LUA: Final = """
-- KEYS: seq hash, record hash, index zset. ARGV: (key, seq, envelope) triples.
local function seq_ge(a, b)
  -- a >= b for canonical decimal strings in [0, 2^63): never strcoll, never
  -- a whole-number tonumber (doubles are exact only up to 2^53).
  if #a ~= #b then return #a > #b end
  local i = 1
  while i <= #a do
    local j = math.min(i + 8, #a)
    local x = tonumber(string.sub(a, i, j))
    local y = tonumber(string.sub(b, i, j))
    if x ~= y then return x > y end
    i = j + 1
  end
  return true
end
local applied = {}
for i = 1, #ARGV, 3 do
  local key, seq = ARGV[i], ARGV[i + 1]
  local stored = redis.call('HGET', KEYS[1], key)
  if (not stored) or seq_ge(seq, stored) then
    redis.call('HSET', KEYS[1], key, seq)
    redis.call('HSET', KEYS[2], key, ARGV[i + 2])
    redis.call('ZADD', KEYS[3], 0, key)
    applied[#applied + 1] = 1
  else
    applied[#applied + 1] = 0
  end
end
return applied
"""

_SEARCH_LUA: Final = """
-- KEYS: index zset, record hash. ARGV: lex min, lex max, limit.
local keys = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, ARGV[3])
if #keys == 0 then return {} end
return redis.call('HMGET', KEYS[2], unpack(keys))
"""


@dataclass(frozen=True, slots=True)
class _Script:
    source: str
    sha: str

    @classmethod
    def of(cls, source: str) -> _Script:
        return cls(source, hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest())


_UPSERT: Final = _Script.of(_UPSERT_LUA)
_SEARCH: Final = _Script.of(_SEARCH_LUA)


class RedisMemoryStore(MemoryStore):
    """Long-term store on Redis (`redis://` or `rediss://`, AUTH and TLS from the URL).

    `upsert_many` is one script call: Redis runs it atomically, so an
    activation's rows land together or not at all. Retention is operator
    owned: `EXPIRE` the entity's three keys (one hash tag) or run with a
    `maxmemory-policy`; the runtime never deletes rows.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        timeout_s: float = 5.0,
    ) -> None:
        if not _NAMESPACE_RE.fullmatch(namespace):
            raise InvalidStoreURIError(
                f"redis namespace must be 1-64 characters of [A-Za-z0-9_.-], got {namespace!r}"
            )
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss"):
            raise InvalidStoreURIError(
                f"expected a redis:// or rediss:// URL, got {parts.scheme}://"
            )
        self._namespace = namespace
        self._where = f"redis at {parts.hostname or 'localhost'}:{parts.port or 6379}"
        self._redacted = redact_uri(url)
        self._has_password = bool(parts.password)
        self._secrets = tuple(s for s in (parts.password, parts.username) if s)
        # Fail fast and let the caller (the runtime's flush, Beam's bundle
        # retry) own the retry policy; one quick reconnect covers a dropped
        # pooled connection after a server restart.
        self._client: aioredis.Redis = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), retries=1),
            decode_responses=False,
        )

    @classmethod
    def from_uri(cls, uri: StoreURI) -> Self:
        """Build from a parsed `redis://`/`rediss://` URI; `namespace` and `timeout_s` are ours."""
        parts = urlsplit(uri.uri)
        options = dict(parse_qsl(parts.query, keep_blank_values=True))
        kwargs: dict[str, Any] = {}
        if "namespace" in options:
            kwargs["namespace"] = options["namespace"]
        if "timeout_s" in options:
            try:
                kwargs["timeout_s"] = float(options["timeout_s"])
            except ValueError:
                raise InvalidStoreURIError("redis timeout_s must be a number of seconds") from None
        passthrough = [(k, v) for k, v in parse_qsl(parts.query) if k not in _OWN_OPTIONS]
        url = urlunsplit(parts._replace(query=urlencode(passthrough)))
        store = cls(url, **kwargs)
        store._redacted = uri.redacted  # name the store as its user wrote it
        return store

    @property
    def client(self) -> aioredis.Redis:
        """The connection pool, for what shares this server (the tool ledger)."""
        return self._client

    @property
    def namespace(self) -> str:
        """The key prefix of everything this store writes."""
        return self._namespace

    def __repr__(self) -> str:
        return f"RedisMemoryStore({self._where}, namespace={self._namespace!r})"

    def _keys(self, entity_key: bytes) -> tuple[bytes, bytes, bytes]:
        stem = f"{self._namespace}:{{e{entity_key.hex()}}}:".encode()
        return stem + b"s", stem + b"r", stem + b"i"

    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        """The entity's record under `key`, or None (one HGET)."""
        raw = await self.read_raw(entity_key, key)
        return None if raw is None else decode_record(raw)

    async def read_raw(self, entity_key: bytes, key: str) -> bytes | None:
        """The envelope bytes stored for (entity_key, key), as stored.

        Checks nothing: `load` has checked the keys, and a test passes valid ones.
        """
        _, records, _ = self._keys(entity_key)
        with self._translate("load"):
            raw = await self._client.hget(records, key.encode())
        return None if raw is None else cast(bytes, raw)

    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` records whose key starts with `prefix`, by key bytes, in one script."""
        return await self._range("search", entity_key, prefix, limit)

    async def _candidates(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` records under `prefix`, in pages of `MAX_SEARCH_LIMIT` per script call.

        Pages keep each script (which blocks the server while it runs) and
        each reply small; a row written between pages may or may not be seen,
        as with any read that is not one snapshot.
        """
        return await self._range("candidates", entity_key, prefix, limit)

    async def _range(
        self, what: str, entity_key: bytes, prefix: str, limit: int
    ) -> list[MemoryRecord]:
        _, records, index = self._keys(entity_key)
        raw_prefix = prefix.encode()
        low, high = b"[" + raw_prefix, b"(" + raw_prefix + b"\xff"
        found: list[MemoryRecord] = []
        while len(found) < limit:
            page = min(limit - len(found), MAX_SEARCH_LIMIT)
            with self._translate(what):
                raws = cast(
                    list[Any], await self._run(_SEARCH, [index, records], [low, high, b"%d" % page])
                )
            found += [decode_record(bytes(raw)) for raw in raws if raw is not None]
            if len(raws) < page or not found:
                break
            low = b"(" + found[-1].key.encode()
        return found

    cross_entity_index = None
    """Redis 7 has no vector search (that is the RediSearch module): no recall across entities."""

    async def _upsert_many(self, entity_key: bytes, records: list[MemoryRecord]) -> list[bool]:
        """Guard and apply every record in one atomic script call."""
        args: list[bytes] = []
        for record in records:
            args += [record.key.encode(), str(record.seq).encode(), encode_record(record)]
        with self._translate("upsert"):
            # One script call is the whole commit: once sent, its outcome is awaited.
            applied = await finish_in_flight(self._run(_UPSERT, list(self._keys(entity_key)), args))
        return [bool(flag) for flag in cast(list[int], applied)]

    async def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        """Every row under this namespace: SCAN our own (glob-free) prefix, HSCAN each entity."""
        pattern = f"{self._namespace}:{{e*}}:r".encode()
        stem = len(self._namespace) + 3
        with self._translate("scan"):
            async for name in self._client.scan_iter(match=pattern, count=500):
                hex_entity = bytes(name)[stem:-3]
                if not _HEX_RE.fullmatch(hex_entity):
                    continue
                entity_key = bytes.fromhex(hex_entity.decode())
                async for _, raw in self._client.hscan_iter(name, count=500):
                    yield entity_key, decode_record(bytes(raw))

    async def provision(self) -> None:
        """Nothing to create on Redis; check that the URL and credentials work."""
        with self._translate("provision"):
            await self._client.ping()

    async def close(self) -> None:
        """Close the connection pool."""
        with contextlib.suppress(redis_errors.RedisError, OSError):
            await self._client.aclose()

    async def _run(self, script: _Script, keys: list[bytes], args: list[bytes]) -> object:
        """EVALSHA, falling back to EVAL (which caches the script again) on NOSCRIPT."""
        try:
            return await self._client.evalsha(script.sha, len(keys), *keys, *args)
        except redis_errors.NoScriptError:
            return await self._client.eval(script.source, len(keys), *keys, *args)

    @contextlib.contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        """Map redis-py errors onto store errors, with credentials scrubbed from messages.

        A refused login and a server certificate that does not verify are not
        outages: retrying cannot fix them, so they are plain `StoreError`s
        whose message says what to change, never the server's raw reply.
        """
        try:
            yield
        except redis_errors.AuthenticationError:  # a ConnectionError subclass: first
            raise StoreError(self._authentication_failed(what)) from None
        except (
            redis_errors.ConnectionError,
            redis_errors.TimeoutError,
            redis_errors.ReadOnlyError,
            redis_errors.TryAgainError,
            OSError,
            TimeoutError,
        ) as exc:
            certificate = _certificate_failure(exc)
            if certificate is not None:
                raise StoreError(
                    f"{self._redacted}: TLS certificate verification failed during {what} "
                    f"({certificate}); trust the server's CA with ?ssl_ca_certs=<CA file> "
                    "in the URI"
                ) from None
            raise StoreUnavailableError(
                f"{self._where} unavailable during {what}: {self._scrub(exc)}"
            ) from None
        except redis_errors.ResponseError as exc:
            if str(exc).startswith(("NOAUTH", "WRONGPASS")):
                raise StoreError(self._authentication_failed(what)) from None
            raise StoreError(f"{self._where}: {what} failed: {self._scrub(exc)}") from None
        except redis_errors.RedisError as exc:
            raise StoreError(f"{self._where}: {what} failed: {self._scrub(exc)}") from None

    def _authentication_failed(self, what: str) -> str:
        why = (
            "the server refused the user name and password in the URI"
            if self._has_password
            else "the server requires a password and the URI has none"
        )
        return f"{self._redacted}: authentication failed during {what}: {why}"

    def _scrub(self, exc: BaseException) -> str:
        text = f"{type(exc).__name__}: {exc}"
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def _certificate_failure(exc: BaseException) -> str | None:
    """The reason, when `exc` is (or wraps) a failed TLS certificate verification."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return current.verify_message or str(current)
        current = current.__cause__ or current.__context__
    return None
