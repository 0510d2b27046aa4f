"""Recall by meaning: per-entity recall latency, and recall across entities against exact.

For each backend, on a server started here as the tests start theirs, this
writes N embedded records to one entity (N = 100, 1,000, 10,000) and times
`LongtermMemory.recall` (read every candidate, score exactly): p50 and p95.
Where the backend has a native vector index, it then writes V vectors (384
dimensions, seeded Gaussian clusters) over V / 100 entities and measures
`nearest`'s recall@10 against an exact numpy scan, and its latency.
Targets: recall p95 at 10,000 records under 2 s; recall@10 >= 0.9.

    python benchmarks/bench_recall.py            # full run (make bench)
    python benchmarks/bench_recall.py --quick    # one short pass (the test suite)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_stores import (
    _start_bigtable,
    _start_firestore,
    _start_redis,
    _start_sqlite,
)

from beam_agents.memory.longterm import LongtermMemory
from beam_agents.memory.stores import MemoryRecord, MemoryStore, open_store
from beam_agents.memory.stores.base import Embedding
from beam_agents.testing.services import ServiceUnavailableError
from beam_agents.testing.services.postgres import pgvector_binaries, start_postgres

DIMS = 384
TARGET_P95_S = 2.0
TARGET_RECALL = 0.9
BATCH = 400


def _start_memory(stack: contextlib.ExitStack) -> str:
    return "memory://bench-recall"


def _start_pgvector(stack: contextlib.ExitStack) -> str:
    server = start_postgres(bin_dir=pgvector_binaries())
    stack.callback(server.stop)
    return server.create_database("bench")


BACKENDS: dict[str, Callable[[contextlib.ExitStack], str]] = {
    "memory": _start_memory,
    "sqlite": _start_sqlite,
    "postgres+pgvector": _start_pgvector,
    "redis": _start_redis,
    "bigtable": _start_bigtable,
    "firestore": _start_firestore,
}


def _clustered(count: int, seed: int) -> np.ndarray:
    """Vectors around 50 centres: nearer to real embeddings than uniform noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, DIMS))
    points = centres[rng.integers(0, 50, count)] + 0.5 * rng.standard_normal((count, DIMS))
    return points.astype("<f4")


def _embedding(row: np.ndarray) -> Embedding:
    return Embedding("bench-embedder", DIMS, row.tobytes())


async def _fill(store: MemoryStore, entity: bytes, rows: Sequence[MemoryRecord]) -> None:
    for start in range(0, len(rows), BATCH):
        await store.upsert_many(entity, rows[start : start + BATCH])


async def _recall_latency(store: MemoryStore, size: int, reps: int) -> tuple[float, float]:
    table = _clustered(size + 1, seed=size)
    entity = f"entity-{size}".encode()
    rows = [MemoryRecord(f"doc/{i:05d}", b"v", 1, 1, _embedding(table[i])) for i in range(size)]
    await _fill(store, entity, rows)
    query = _embedding(table[size])

    async def embed(texts: Sequence[str]) -> list[Embedding]:
        return [query for _ in texts]

    samples = []
    for _ in range(reps):
        memory = LongtermMemory(
            store, entity_key=entity, seq=2, now_ms=1, timeout_s=120.0, embed=embed
        )
        started = time.perf_counter()
        await memory.recall("query", k=10, prefix="doc/")
        samples.append(time.perf_counter() - started)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


async def _cross_entity(store: MemoryStore, count: int, queries: int) -> tuple[float, float]:
    """recall@10 of `nearest` against exact numpy, and its mean latency."""
    table = _clustered(count + queries, seed=42)
    entities = [f"e{i % (count // 100):04d}".encode() for i in range(count)]
    by_entity: dict[bytes, list[MemoryRecord]] = {}
    for i, entity in enumerate(entities):
        by_entity.setdefault(entity, []).append(
            MemoryRecord(f"x/{i:06d}", b"", 1, 1, _embedding(table[i]))
        )
    items = list(by_entity.items())
    for start in range(0, len(items), 16):
        await asyncio.gather(*(_fill(store, e, rs) for e, rs in items[start : start + 16]))
    await store.provision()  # builds the index of the embedder whose rows just landed
    matrix = table[:count].astype(np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    hits, spent = 0, 0.0
    for q in range(queries):
        query = table[count + q].astype(np.float64)
        exact = np.argsort(-(matrix @ query) / norms)[:10]
        started = time.perf_counter()
        found = await store.nearest(_embedding(table[count + q]), 10, "x/")
        spent += time.perf_counter() - started
        keys = {n.record.key for n in found}
        hits += sum(f"x/{i:06d}" in keys for i in exact)
    return hits / (10 * queries), spent / queries


async def _bench(name: str, uri: str, quick: bool) -> list[str]:
    lines = []
    if not quick or name in ("memory", "sqlite"):
        async with open_store(uri) as store:
            await store.provision()
            for size in (100,) if quick else (100, 1000, 10_000):
                reps = 3 if quick else (5 if size == 10_000 else 20)
                p50, p95 = await _recall_latency(store, size, reps)
                mark = "ok" if size < 10_000 or p95 < TARGET_P95_S else "OVER"
                lines.append(
                    f"{name:18} recall, {size:>6} records/entity: "
                    f"p50 {p50 * 1000:8.1f} ms  p95 {p95 * 1000:8.1f} ms  {mark}"
                )
            if store.cross_entity_index is not None:
                count = 1000 if quick else (10_000 if name == "firestore" else 100_000)
                started = time.perf_counter()
                recall, latency = await _cross_entity(store, count, 3 if quick else 20)
                mark = "ok" if recall >= TARGET_RECALL else "UNDER"
                lines.append(
                    f"{name:18} across entities, {count:>7} vectors ({DIMS} dims): "
                    f"recall@10 {recall:.3f}  mean {latency * 1000:8.1f} ms/query  {mark}  "
                    f"[{store.cross_entity_index}; setup+run {time.perf_counter() - started:.0f} s]"
                )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one short pass, for the tests")
    parser.add_argument("--backend", action="append", choices=sorted(BACKENDS))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    print(
        f"target: recall p95 at 10,000 records < {TARGET_P95_S:g} s; "
        f"recall@10 across entities >= {TARGET_RECALL}"
    )
    for name in args.backend or (["memory", "sqlite"] if args.quick else list(BACKENDS)):
        with contextlib.ExitStack() as stack:
            try:
                uri = BACKENDS[name](stack)
            except ServiceUnavailableError as exc:
                print(f"{name:18} skipped: {exc}")
                continue
            for line in asyncio.run(_bench(name, uri, args.quick)):
                print(line, flush=True)


if __name__ == "__main__":
    main()
