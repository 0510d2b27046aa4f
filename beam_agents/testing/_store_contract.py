"""What the store conformance suite is built from: its target, its test wrapper, its cases.

`beam_agents.testing.store_conformance` holds the contracts themselves, one
class per capability; this module holds what they share, so each contract
reads as the rule it proves.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from beam_agents.memory.stores.base import (
    MAX_ENTITY_KEY_BYTES,
    MAX_KEY_BYTES,
    MAX_SEARCH_LIMIT,
    MAX_VALUE_BYTES,
    MemoryRecord,
    MemoryStore,
)
from beam_agents.memory.stores.envelope import encode_record

__all__ = [
    "BAD_LIMITS",
    "ENTITY_PAIRS",
    "INVALID_CALLS",
    "ORDERING_KEYS",
    "RACE_INSTANCES",
    "RACE_WRITERS",
    "SEPARATOR_ROWS",
    "WILDCARDS",
    "ConformanceTarget",
    "check_stored",
    "contract",
    "keys_of",
    "race_concurrent_upserts",
    "rec",
]

RawReader = Callable[[MemoryStore, bytes, str], Awaitable[bytes | None]]
Body = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class ConformanceTarget:
    """How the suite reaches one backend for one test."""

    open_store: Callable[[], Awaitable[MemoryStore]]
    """Open a new store instance; every instance of one test sees the same rows."""
    read_raw: RawReader | None = None
    """Optional: the bytes the backend stored for (entity, key), to prove they are
    exactly the shared envelope. Without it the suite checks a round trip instead."""
    timeout_s: float = 30.0
    """Upper bound on one test, so a hung server fails the test instead of the run."""
    vector_index_missing: bool = False
    """Whether this server lacks the store's vector index (a PostgreSQL without pgvector):
    then `nearest` must refuse with `StoreNotProvisionedError`."""
    exact_nearest: bool = False
    """Whether the store's `nearest` is an exact scan (then recall@10 must be 1.0)."""


def contract(body: Body) -> Callable[..., None]:
    """Turn `async def test_x(self, store, target, **params)` into a sync pytest test.

    The test opens one store from the `store_target` fixture, runs the body
    on a fresh event loop under the target's timeout, and closes the store.
    pytest sees `(self, store_target, **params)`, so `parametrize` still works.
    """
    signature = inspect.signature(body)
    kept = [p for name, p in signature.parameters.items() if name not in ("store", "target")]
    target_param = inspect.Parameter("store_target", inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def test(self: object, store_target: ConformanceTarget, **params: Any) -> None:
        async def main() -> None:
            async with await store_target.open_store() as store:
                await asyncio.wait_for(
                    body(self, store, store_target, **params),
                    store_target.timeout_s * getattr(body, "timeout_scale", 1),
                )

        asyncio.run(main())

    test.__name__ = body.__name__
    test.__qualname__ = body.__qualname__
    test.__doc__ = body.__doc__
    test.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[kept[0], target_param, *kept[1:]]
    )
    test.pytestmark = getattr(body, "pytestmark", [])  # type: ignore[attr-defined]
    return test


def rec(key: str, seq: int = 1, value: bytes | None = None, at: int = 1000) -> MemoryRecord:
    return MemoryRecord(
        key=key, value=f"v:{key}".encode() if value is None else value, seq=seq, updated_at_ms=at
    )


async def keys_of(store: MemoryStore, entity: bytes, prefix: str = "") -> list[str]:
    return [r.key for r in await store.search(entity, prefix, MAX_SEARCH_LIMIT)]


async def check_stored(
    store: MemoryStore, target: ConformanceTarget, entity: bytes, record: MemoryRecord
) -> None:
    """The row holds exactly `record`, as the shared envelope bytes."""
    assert await store.load(entity, record.key) == record
    if target.read_raw is not None:
        assert await target.read_raw(store, entity, record.key) == encode_record(record)


ORDERING_KEYS = [
    "b",
    "B",
    "a",
    "A",
    "ab",
    "aB",
    "a b",
    "a-b",
    "0",
    "~",
    "é",
    "z",
    "\u00ff",
    "\uffff",
    "\ue000",
    "\U0001f600",
    "a\U0001f600",
    "a\uffff",
    "\U0010ffff",
]
WILDCARDS = ["%", "_", "*", "[", "]", "?", "\\", ".", "^", "$", "(", "|", "+", "'", '"']
ENTITY_PAIRS = [
    (b"a", b"a/"),
    (b"a", b"ab"),
    (b"a", b"a\x00"),
    (b"", b"\x00"),
    (b"a:b", b"a"),
    (b"a%", b"ab"),
    (b"a_", b"ab"),
    (b"a*", b"ab"),
    (b"..", b"."),
    (b"__x__", b"x"),
    (b"a/b", b"a/c"),
    (b"a#", b"a"),
    (b"\xff", b"\xff\xff"),
    (b"x" * MAX_ENTITY_KEY_BYTES, b"x" * (MAX_ENTITY_KEY_BYTES - 1)),
]
# (entity, key) pairs that collide if a backend joins them with a separator.
SEPARATOR_ROWS = [
    (b"a", "b/c"),
    (b"a/b", "c"),
    (b"a", ":b"),
    (b"a:", "b"),
    (b"a", "#b"),
    (b"a#", "b"),
    (b"a\x00", "b"),
    (b"a", "\x01b"),
    (b"a", "..b"),
    (b"a.", ".b"),
    (b"a", "__x__"),
    (b"a__x_", "_"),
    (b"a", "%b"),
    (b"a%", "b"),
    (b"a", "*c"),
    (b"a*", "c"),
    (b"a", "/"),
]
BAD_LIMITS = [0, -1, MAX_SEARCH_LIMIT + 1, True, 1.5, "3", None]

# Typed `Any` on purpose: the calls below break the signatures to prove the store refuses.
_STR: Any = "e"
_BYTES: Any = b"k"

INVALID_CALLS: dict[str, Callable[[MemoryStore], Awaitable[object]]] = {
    "entity-key-too-long": lambda s: s.load(b"e" * (MAX_ENTITY_KEY_BYTES + 1), "k"),
    "key-too-long": lambda s: s.upsert(b"e", rec("k" * (MAX_KEY_BYTES + 1))),
    "prefix-too-long": lambda s: s.search(b"e", "é" * (MAX_KEY_BYTES // 2 + 1), 1),
    "value-too-long": lambda s: s.upsert(b"e", rec("k", value=b"v" * (MAX_VALUE_BYTES + 1))),
    "negative-seq": lambda s: s.upsert(b"e", rec("k", seq=-1)),
    "seq-beyond-int64": lambda s: s.upsert(b"e", rec("k", seq=2**63)),
    "negative-updated-at": lambda s: s.upsert(b"e", rec("k", at=-1)),
    "str-entity-key": lambda s: s.upsert(_STR, rec("k")),
    "bytes-key": lambda s: s.load(b"e", _BYTES),
    "nul-in-key": lambda s: s.upsert(b"e", rec("a\x00b")),
    "lone-surrogate-key": lambda s: s.upsert(b"e", rec("a\ud800", value=b"v")),
    "str-value": lambda s: s.upsert(b"e", rec("k", value=_STR)),
}


RACE_WRITERS = 20
"""Concurrent upserts of one record in `race_concurrent_upserts`, seqs 1..RACE_WRITERS."""
RACE_INSTANCES = 4
"""Store instances the racing upserts are spread over (plus calls sharing one instance)."""


async def race_concurrent_upserts(
    target: ConformanceTarget, entity: bytes, key: str, writers: int = RACE_WRITERS
) -> None:
    """Race `writers` upserts of one record, seqs 1..writers, and prove seq `writers` wins.

    The calls start together from several store instances (so from several
    connections, as several workers would) and several calls share each
    instance, in an order that interleaves low and high seqs. Contention is
    expected; every call must still answer within the target's timeout, the
    highest seq must report applied, and the stored row must be exactly it.
    """
    stores = [await target.open_store() for _ in range(RACE_INSTANCES)]
    try:
        order = sorted(range(1, writers + 1), key=lambda s: ((s * 7) % writers, s))
        records = {
            seq: MemoryRecord(key=key, value=f"seq-{seq}".encode(), seq=seq, updated_at_ms=seq)
            for seq in order
        }
        results = await asyncio.gather(
            *(stores[i % len(stores)].upsert(entity, records[seq]) for i, seq in enumerate(order))
        )
        outcome = dict(zip(order, results, strict=True))
        assert outcome[writers] is True, "the highest seq must always apply"
        for store in stores:
            assert await store.load(entity, key) == records[writers]
    finally:
        for store in stores:
            await store.close()
