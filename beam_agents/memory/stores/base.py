"""The long-term store contract every backend implements.

The abstract core is deliberately narrow (`_load`, `_search`, `_upsert_many`,
`scan`): the checks of every argument, and the per-activation handle with its
staging and read-your-writes overlay, are built once on top of it, so a
backend is a small module that only has to get its atomic seq guard and its
key encoding right.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from array import array
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Self

from beam_agents.memory.stores.errors import InvalidRecordError, StoreNotProvisionedError

__all__ = [
    "MAX_EMBEDDING_DIMENSIONS",
    "MAX_EMBEDDING_MODEL_ID_BYTES",
    "MAX_ENTITY_KEY_BYTES",
    "MAX_KEY_BYTES",
    "MAX_RECALL_CANDIDATES",
    "MAX_SEARCH_LIMIT",
    "MAX_VALUE_BYTES",
    "Embedding",
    "MemoryRecord",
    "MemoryStore",
    "Neighbour",
    "check_candidate_limit",
    "check_embedding",
    "check_entity_key",
    "check_key",
    "check_limit",
    "check_nearest",
    "check_record",
    "check_record_key",
    "prefix_upper_bound",
]

MAX_ENTITY_KEY_BYTES: Final = 1024
"""Longest entity key any backend must hold (Bigtable row keys and Postgres
index rows put a ceiling on key length; one portable limit keeps rows
migratable between every pair of backends)."""

MAX_KEY_BYTES: Final = 1024
"""Longest record key, in UTF-8 bytes, for the same reason."""

MAX_VALUE_BYTES: Final = 1_048_576 + 65_536
"""Largest record value: room for a whole working-memory blob at the hard cap
(what `on_expire=FlushToLongterm()` writes) plus its entry keys."""

MAX_SEARCH_LIMIT: Final = 1000
"""Upper bound on `search(limit=...)`: a search is always bounded."""

MAX_RECALL_CANDIDATES: Final = 10_000
"""Most records `recall` scores for one entity under one prefix: beyond it the
recall is refused (`RecallTooLargeError`), never silently cut, since a cut
would make the answer depend on which rows happened to be read."""


MAX_EMBEDDING_DIMENSIONS: Final = 8192
"""Widest vector a record may carry (the largest hosted embedders give 3,072)."""

MAX_EMBEDDING_MODEL_ID_BYTES: Final = 256
"""Longest embedder model id, in UTF-8 bytes."""


@dataclass(frozen=True, slots=True)
class Embedding:
    """A record's text as one embedder saw it: `dimensions` float32 values, little-endian.

    Kept as bytes, not floats, so the vector a backend stores and returns is
    the vector that was embedded, bit for bit, and scores computed from it
    agree on every backend.
    """

    model_id: str
    dimensions: int
    vector: bytes

    @classmethod
    def of(cls, model_id: str, values: Sequence[float]) -> Embedding:
        """The embedding of `values`, rounded to float32 (what every backend keeps)."""
        packed = array("f", values)
        if packed.itemsize != 4:  # pragma: no cover - every supported platform has 4-byte C floats
            raise RuntimeError("this platform's C float is not 32 bits")
        if _BIG_ENDIAN:  # pragma: no cover
            packed.byteswap()
        return check_embedding(cls(model_id, len(packed), packed.tobytes()))

    def values(self) -> array[float]:
        """The vector as float32 values."""
        packed = array("f")
        packed.frombytes(self.vector)
        if _BIG_ENDIAN:  # pragma: no cover
            packed.byteswap()
        return packed


_BIG_ENDIAN: Final = array("H", [1]).tobytes()[0] == 0


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One long-term row of an entity: `seq` is the activation that wrote it."""

    key: str
    value: bytes
    seq: int
    updated_at_ms: int
    embedding: Embedding | None = None


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One hit of a recall across entities: whose record it is, and its cosine to the query."""

    entity_key: bytes
    record: MemoryRecord
    score: float


def check_entity_key(entity_key: object) -> bytes:
    """Validate an entity key; arbitrary bytes up to `MAX_ENTITY_KEY_BYTES`."""
    if type(entity_key) is not bytes:
        raise InvalidRecordError(f"entity_key must be bytes, got {type(entity_key).__name__}")
    if len(entity_key) > MAX_ENTITY_KEY_BYTES:
        raise InvalidRecordError(
            f"entity_key is {len(entity_key)} bytes, over the {MAX_ENTITY_KEY_BYTES}-byte limit"
        )
    return entity_key


def check_key(key: object) -> str:
    """Validate a record key or search prefix: a str of at most `MAX_KEY_BYTES` UTF-8 bytes.

    The empty string passes (it is the match-everything prefix); a key a
    record is stored under must also pass `check_record_key`.
    """
    if type(key) is not str:
        raise InvalidRecordError(f"record key must be str, got {type(key).__name__}")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidRecordError(f"record key is not valid UTF-8: {exc.reason}") from None
    if size > MAX_KEY_BYTES:
        raise InvalidRecordError(
            f"record key is {size} UTF-8 bytes, over the {MAX_KEY_BYTES}-byte limit"
        )
    if "\x00" in key:
        # PostgreSQL text cannot hold NUL; one portable rule keeps every row
        # migratable between every pair of backends (entity keys, being
        # bytes, may hold NUL anywhere).
        raise InvalidRecordError("record key must not contain NUL (U+0000)")
    return key


def check_record_key(key: object) -> str:
    """Validate the key a record is stored under: `check_key`, and never empty.

    An empty key is almost always a bug upstream (an f-string whose id was
    missing), and a row under it would be shared by every such bug: it is
    refused before any I/O.
    """
    checked = check_key(key)
    if not checked:
        raise InvalidRecordError("record key must not be empty")
    return checked


def prefix_upper_bound(prefix: str) -> str | None:
    """The least string greater than every string that starts with `prefix`, or None.

    A prefix search is then the literal range `prefix <= key < bound`: no
    LIKE or glob pattern, so `%`, `_` and `*` are data. Code-point order is
    UTF-8 byte order, so the bound is computed on code points: trailing
    U+10FFFF cannot be incremented and is dropped, and the increment skips
    the surrogate block, which UTF-8 cannot encode. None (an all-U+10FFFF or
    empty prefix) means no upper bound. A fixed "\\uffff" sentinel would be
    wrong: it sorts below every astral character.
    """
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:
        following = 0xE000
    return stripped[:-1] + chr(following)


def check_record(record: object) -> MemoryRecord:
    """Validate a record before any backend sees it."""
    if not isinstance(record, MemoryRecord):
        raise InvalidRecordError(f"expected a MemoryRecord, got {type(record).__name__}")
    check_record_key(record.key)
    if type(record.value) is not bytes:
        raise InvalidRecordError(f"record value must be bytes, got {type(record.value).__name__}")
    if len(record.value) > MAX_VALUE_BYTES:
        raise InvalidRecordError(
            f"record {record.key!r} value is {len(record.value)} bytes, "
            f"over the {MAX_VALUE_BYTES}-byte limit"
        )
    for name in ("seq", "updated_at_ms"):
        number = getattr(record, name)
        if type(number) is not int or not 0 <= number < 2**63:
            raise InvalidRecordError(f"record {name} must be an int in [0, 2**63), got {number!r}")
    if record.embedding is not None:
        check_embedding(record.embedding)
    return record


def check_embedding(embedding: object) -> Embedding:
    """Validate an embedding: a named model, a sane width, finite float32 values."""
    if not isinstance(embedding, Embedding):
        raise InvalidRecordError(f"expected an Embedding, got {type(embedding).__name__}")
    model_id = embedding.model_id
    if type(model_id) is not str or not model_id:
        raise InvalidRecordError(f"embedding model_id must be a non-empty str, got {model_id!r}")
    if len(model_id.encode("utf-8", "surrogatepass")) > MAX_EMBEDDING_MODEL_ID_BYTES:
        raise InvalidRecordError(
            f"embedding model_id is over the {MAX_EMBEDDING_MODEL_ID_BYTES}-byte limit"
        )
    dimensions = embedding.dimensions
    if type(dimensions) is not int or not 1 <= dimensions <= MAX_EMBEDDING_DIMENSIONS:
        raise InvalidRecordError(
            f"embedding dimensions must be an int in [1, {MAX_EMBEDDING_DIMENSIONS}], "
            f"got {dimensions!r}"
        )
    if type(embedding.vector) is not bytes or len(embedding.vector) != 4 * dimensions:
        raise InvalidRecordError(
            f"embedding vector must be {4 * dimensions} bytes ({dimensions} float32 values)"
        )
    if not all(map(math.isfinite, embedding.values())):
        raise InvalidRecordError("embedding vector holds a NaN or an infinity")
    return embedding


def check_limit(limit: object) -> int:
    """Validate a search limit: an int in [1, MAX_SEARCH_LIMIT]."""
    if type(limit) is not int or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidRecordError(f"limit must be an int in [1, {MAX_SEARCH_LIMIT}], got {limit!r}")
    return limit


def check_candidate_limit(limit: object) -> int:
    """Validate a `candidates` bound: an int in [1, MAX_RECALL_CANDIDATES + 1]."""
    if type(limit) is not int or not 1 <= limit <= MAX_RECALL_CANDIDATES + 1:
        raise InvalidRecordError(
            f"candidates limit must be an int in [1, {MAX_RECALL_CANDIDATES + 1}], got {limit!r}"
        )
    return limit


def check_nearest(query: object, k: object, prefix: object) -> Embedding:
    """Validate a `nearest` call before any I/O: an embedding, a k in [1, 1000], a prefix."""
    embedding = check_embedding(query)
    check_key(prefix)
    if type(k) is not int or not 1 <= k <= MAX_SEARCH_LIMIT:
        raise InvalidRecordError(f"k must be an int in [1, {MAX_SEARCH_LIMIT}], got {k!r}")
    return embedding


class MemoryStore(ABC):
    """An async long-term store, every method scoped to one entity.

    Contract (proved for every backend by `beam_agents.testing.store_conformance`):

    - `upsert_many` applies each record iff `record.seq >= stored seq` for
      that (entity, key), by the backend's own atomic primitive, and returns
      one bool per record (applied or not). Where the backend allows, all
      records apply as one atomic unit; a failed call leaves none of them.
    - `search` returns the entity's records whose key starts with `prefix`
      (taken literally: no wildcards), ascending by key in bytewise UTF-8
      order, at most `limit` of them.
    - Entities are isolated: no choice of entity key or record key lets one
      entity read or overwrite another's rows.
    - Every backend stores the same bytes, a deterministically serialized
      `LongTermRecord`, so rows copy verbatim between backends.

    The public methods validate their arguments, then call the backend's
    `_load`, `_search` and `_upsert_many` (and, where it has them, the
    optional `_candidates` and `_nearest`): a backend implements those and
    `scan`, and gets every input check of the contract, raised before any
    I/O, from here.

    Instances are built once per DoFn instance on its event loop and used
    only from that loop.
    """

    cross_entity_index: ClassVar[str | None] = None
    """The native vector index `nearest` uses (e.g. "pgvector HNSW"), or None:
    a backend without one cannot recall across entities."""

    async def load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        """The entity's record under `key`, or None."""
        return await self._load(check_entity_key(entity_key), check_record_key(key))

    async def search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` of the entity's records whose key starts with `prefix`, ascending."""
        check_limit(limit)
        return await self._search(check_entity_key(entity_key), check_key(prefix), limit)

    async def candidates(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` of the entity's records under `prefix`, ascending: what `recall` scores.

        `limit` is at most `MAX_RECALL_CANDIDATES` + 1, so the caller can
        tell "exactly the bound" from "more".
        """
        check_candidate_limit(limit)
        return await self._candidates(check_entity_key(entity_key), check_key(prefix), limit)

    async def upsert_many(self, entity_key: bytes, records: Sequence[MemoryRecord]) -> list[bool]:
        """Apply each record iff its seq is >= the stored one; one bool per record.

        Every record is checked before any is written; an empty batch is
        answered here, without a round trip.
        """
        check_entity_key(entity_key)
        checked = [check_record(record) for record in records]
        if not checked:
            return []
        return await self._upsert_many(entity_key, checked)

    async def upsert(self, entity_key: bytes, record: MemoryRecord) -> bool:
        """Apply one record iff its seq is >= the stored one."""
        (applied,) = await self.upsert_many(entity_key, [record])
        return applied

    async def nearest(self, query: Embedding, k: int, prefix: str) -> list[Neighbour]:
        """Across every entity, the `k` records under `prefix` nearest `query` by cosine.

        Served by the backend's native vector index (`cross_entity_index`),
        so approximate where the index is; only records embedded by the
        query's model are candidates. Backends without an index refuse.
        """
        if self.cross_entity_index is None:
            raise NotImplementedError(self._no_index())
        return await self._nearest(check_nearest(query, k, prefix), k, prefix)

    @abstractmethod
    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        """`load`, its arguments valid: one point read."""

    @abstractmethod
    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """`search`, its arguments valid: `limit` is in [1, `MAX_SEARCH_LIMIT`]."""

    async def _candidates(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """`candidates`, its arguments valid: `_search` under a bound of up to 10,001.

        The default pages nothing and serves only up to `MAX_SEARCH_LIMIT`;
        every shipped backend reads the whole bound.
        """
        return await self._search(entity_key, prefix, min(limit, MAX_SEARCH_LIMIT))

    @abstractmethod
    async def _upsert_many(self, entity_key: bytes, records: list[MemoryRecord]) -> list[bool]:
        """`upsert_many`, every record valid and at least one: the seq-guarded write."""

    async def _nearest(self, query: Embedding, k: int, prefix: str) -> list[Neighbour]:
        """`nearest`, its arguments valid; a backend that names a `cross_entity_index` serves it."""
        raise NotImplementedError(self._no_index())

    def _no_index(self) -> str:
        return (
            f"{type(self).__name__} has no native vector index: recall across entities "
            "is not available on it"
        )

    async def check_cross_entity_index(self) -> None:
        """Raise `StoreNotProvisionedError` unless `nearest` can run on this store.

        Called once per worker in `setup()` when recall across entities is on,
        apart from `check_provisioned`: a store provisioned before recall
        existed serves everything else. The default knows only whether the
        backend has an index at all.
        """
        if self.cross_entity_index is None:
            raise StoreNotProvisionedError(self._no_index())

    @abstractmethod
    def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        """Every row of every entity, for migration and inspection (order unspecified)."""

    async def count_rows(self) -> int | None:
        """How many rows `scan` would yield, where the backend can tell cheaply; else None.

        Only for progress display (`beam-agents migrate-store`): rows may be
        written between the count and the scan. The default knows nothing.
        """
        return None

    async def provision(self) -> None:
        """Create what the store needs (tables, families, indexes); idempotent.

        Never called by the runtime: `beam-agents provision` runs it once.
        The default has nothing to create.
        """
        return

    async def check_provisioned(self) -> None:
        """Raise `StoreNotProvisionedError` when what `provision` creates is missing.

        The runtime calls it once per worker in `setup()`: an unprovisioned
        store then stops the pipeline with one message naming `beam-agents
        provision`, instead of dead-lettering every event. It must create
        nothing (not even an empty SQLite file). The default has nothing to
        check, like the default `provision`.
        """
        return

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards.

        Optional, like `provision`: the default holds nothing to release, so
        a store without connections need not override it.
        """
        return

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the store however the block ended: `async with open_store(uri) as store:`."""
        await self.close()
