"""The in-process reference store: the contract with nothing in the way.

`memory://NAME` opens the process-wide namespace NAME, shared by every store
opened on that URI in this process. That is what lets a pipeline test on the
DirectRunner open `memory://case-17` itself and see what a DoFn flushed; a
store constructed directly (`InMemoryMemoryStore()`) gets a private
namespace instead. Each namespace keeps an operations log, so a test can
prove a path touched the store not at all.

The DirectRunner runs DoFns on several threads, each with its own event
loop, so a namespace is guarded by a thread lock; no critical section awaits,
which is what makes the seq guard and `upsert_many` atomic here.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import ClassVar, Self

from beam_agents.memory.stores._nearest import rank_neighbours
from beam_agents.memory.stores.base import (
    Embedding,
    MemoryRecord,
    MemoryStore,
    Neighbour,
    prefix_upper_bound,
)
from beam_agents.memory.stores.envelope import decode_record, encode_record
from beam_agents.memory.stores.errors import StoreError
from beam_agents.memory.stores.uri import StoreURI

__all__ = ["InMemoryMemoryStore", "Operation"]

Operation = tuple[str, bytes, str]
"""One logged store call: (op, entity_key, key or prefix); op is one of
"load", "search", "candidates", "upsert" (one per record of an
`upsert_many`), "scan" and "nearest" (both logged with an empty entity key;
"nearest" with its prefix)."""


@dataclass
class _Entity:
    rows: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    """key -> (seq, envelope bytes)."""
    keys: list[str] = field(default_factory=list)
    """The same keys, kept sorted (code-point order is UTF-8 byte order)."""


@dataclass
class _Namespace:
    lock: threading.Lock = field(default_factory=threading.Lock)
    entities: dict[bytes, _Entity] = field(default_factory=dict)
    operations: list[Operation] = field(default_factory=list)


class InMemoryMemoryStore(MemoryStore):
    """The reference `MemoryStore`: a process-wide namespace per `memory://NAME` URI."""

    _namespaces: ClassVar[dict[str, _Namespace]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self.namespace: str | None = None
        """The shared namespace's name, or None for a private store."""
        self._space = _Namespace()
        self._closed = False

    @classmethod
    def from_uri(cls, uri: StoreURI) -> Self:
        """The store over the process-wide namespace `uri.namespace`."""
        return cls.shared(uri.namespace)

    @classmethod
    def shared(cls, namespace: str) -> Self:
        """A store over the process-wide `namespace`, created empty on first use."""
        store = cls()
        store.namespace = namespace
        with cls._registry_lock:
            store._space = cls._namespaces.setdefault(namespace, _Namespace())
        return store

    @classmethod
    def drop_namespace(cls, namespace: str) -> None:
        """Forget a namespace's rows and log; stores already open on it keep the old one."""
        with cls._registry_lock:
            cls._namespaces.pop(namespace, None)

    @property
    def operations(self) -> list[Operation]:
        """A copy of this namespace's operations log, oldest first."""
        with self._space.lock:
            return list(self._space.operations)

    def clear_operations(self) -> None:
        """Empty the operations log, keeping the rows."""
        with self._space.lock:
            self._space.operations.clear()

    async def read_raw(self, entity_key: bytes, key: str) -> bytes | None:
        """The envelope bytes stored for (entity_key, key), unlogged (a conformance hook).

        Async like every backend's `read_raw`, so one reader serves them all.
        """
        with self._space.lock:
            entity = self._space.entities.get(entity_key)
            row = entity.rows.get(key) if entity else None
            return row[1] if row else None

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the in-memory store is closed")

    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        self._check_open()
        with self._space.lock:
            self._space.operations.append(("load", entity_key, key))
            entity = self._space.entities.get(entity_key)
            row = entity.rows.get(key) if entity else None
        return decode_record(row[1]) if row else None

    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        return self._range("search", entity_key, prefix, limit)

    async def _candidates(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        return self._range("candidates", entity_key, prefix, limit)

    def _range(self, op: str, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` of the entity's records under `prefix`: what search and candidates read."""
        self._check_open()
        bound = prefix_upper_bound(prefix)
        with self._space.lock:
            self._space.operations.append((op, entity_key, prefix))
            entity = self._space.entities.get(entity_key)
            if entity is None:
                return []
            start = bisect.bisect_left(entity.keys, prefix)
            stop = len(entity.keys) if bound is None else bisect.bisect_left(entity.keys, bound)
            chosen = entity.keys[start : min(stop, start + limit)]
            envelopes = [entity.rows[key][1] for key in chosen]
        return [decode_record(envelope) for envelope in envelopes]

    cross_entity_index = "exact scan (in-process test store)"

    async def _nearest(self, query: Embedding, k: int, prefix: str) -> list[Neighbour]:
        """Every entity's records under `prefix`, scored exactly: no index, no approximation.

        This is the test store: it decodes every row of the namespace per
        call, which is the reference the indexed backends are measured
        against, not something to run at scale.
        """
        self._check_open()
        with self._space.lock:
            self._space.operations.append(("nearest", b"", prefix))
            snapshot = [
                (entity_key, entity.rows[key][1])
                for entity_key, entity in self._space.entities.items()
                for key in entity.keys
                if key.startswith(prefix)
            ]
        found = [(entity_key, decode_record(envelope)) for entity_key, envelope in snapshot]
        return rank_neighbours(query, found, k, prefix)

    async def _upsert_many(self, entity_key: bytes, records: list[MemoryRecord]) -> list[bool]:
        encoded = [encode_record(record) for record in records]
        self._check_open()
        applied: list[bool] = []
        with self._space.lock:
            entity = self._space.entities.setdefault(entity_key, _Entity())
            for record, envelope in zip(records, encoded, strict=True):
                self._space.operations.append(("upsert", entity_key, record.key))
                stored = entity.rows.get(record.key)
                if stored is not None and stored[0] > record.seq:
                    applied.append(False)
                    continue
                if stored is None:
                    bisect.insort(entity.keys, record.key)
                entity.rows[record.key] = (record.seq, envelope)
                applied.append(True)
        return applied

    async def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        self._check_open()
        with self._space.lock:
            self._space.operations.append(("scan", b"", ""))
            snapshot = [
                (entity_key, entity.rows[key][1])
                for entity_key, entity in self._space.entities.items()
                for key in entity.keys
            ]
        for entity_key, envelope in snapshot:
            yield entity_key, decode_record(envelope)

    async def count_rows(self) -> int | None:
        self._check_open()
        with self._space.lock:
            return sum(len(entity.keys) for entity in self._space.entities.values())

    async def close(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        where = "private" if self.namespace is None else f"memory://{self.namespace}"
        return f"InMemoryMemoryStore({where})"
