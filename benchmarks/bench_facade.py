"""Working-memory facade: per-operation cost against blob size.

The facade promises O(1) get/set/append and O(entries) blob (de)serialization.
This measures both on blobs from 1 KiB to ~1 MiB, side by side in one run,
and prints each op's cost with the ratio of the largest blob to the smallest:
a ratio near 1 means the op does not grow with the blob.

    python benchmarks/bench_facade.py            # full run (make bench)
    python benchmarks/bench_facade.py --quick    # one short pass (the test suite)
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from beam_agents.memory import Memory
from beam_agents.proto import MemoryBlob

KIB = 1024
BLOB_SIZES = {"1 KiB": KIB, "64 KiB": 64 * KIB, "512 KiB": 512 * KIB, "~1 MiB": 1_040_000}
ENTRY_BYTES = 256  # many entries: ~4k of them in the largest blob
SMALL = b"v" * 32
TARGETS = {"op_ratio_max": 2.0, "to_blob_1mib_ms_max": 5.0}


@dataclass(frozen=True)
class Row:
    blob: str
    entries: int
    ns_per_op: dict[str, float]


def _blob_of(total: int) -> MemoryBlob:
    memory = Memory(now_ms=0)
    n = max(1, total // (ENTRY_BYTES + 1))
    for i in range(n - 1):
        memory.set(f"entry-{i:06d}", b"e" * ENTRY_BYTES)
    for _ in range(8):
        memory.append("ring", SMALL, max_items=8)
    return memory.to_blob()


def _time_ns(op: Callable[[int], object], iterations: int) -> float:
    """Mean cost of one call over `iterations` calls, in ns."""
    start = time.perf_counter_ns()
    for i in range(iterations):
        op(i)
    return (time.perf_counter_ns() - start) / iterations


def _ops(blob: MemoryBlob) -> dict[str, tuple[Callable[[int], object], int]]:
    """The measured operations on one facade, with their iteration weight."""
    encoded = blob.SerializeToString(deterministic=True)
    memory = Memory(blob, now_ms=1)
    # An activation touches a handful of keys, wherever they sit in the blob:
    # eight keys spread evenly from least to most recently used.
    stored = [k for k in memory.keys() if k != "ring"]
    keys = stored[:: max(1, len(stored) // 8)][:8]
    n = len(keys)
    value = b"s" * ENTRY_BYTES
    return {
        "get": (lambda i: memory.get(keys[i % n]), 1),
        "set": (lambda i: memory.set(keys[i % n], value), 1),
        "append": (lambda i: memory.append("ring", SMALL, max_items=8), 1),
        "ring": (lambda i: memory.ring("ring"), 1),
        "to_blob": (lambda i: memory.to_blob(), 200),
        "load": (lambda i: Memory(MemoryBlob.FromString(encoded), now_ms=2), 200),
    }


def run(quick: bool) -> list[Row]:
    """Time every op on every blob size, interleaved so machine noise hits all alike."""
    iterations, repeats = (100, 1) if quick else (5_000, 15)
    blobs = {label: _blob_of(total) for label, total in BLOB_SIZES.items()}
    ops = {label: _ops(blob) for label, blob in blobs.items()}
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeats):
        for label, table in ops.items():
            for name, (op, weight) in table.items():
                ns = _time_ns(op, max(1, iterations // weight))
                samples.setdefault((label, name), []).append(ns)
    return [
        Row(
            label,
            len(blobs[label].entries),
            {name: statistics.median(samples[(label, name)]) for name in ops[label]},
        )
        for label in blobs
    ]


def report(rows: list[Row]) -> str:
    ops = list(rows[0].ns_per_op)
    head = f"{'op':<8}" + "".join(f"{r.blob + f' ({r.entries})':>22}" for r in rows)
    lines = [head + f"{'largest/smallest':>18}"]
    for op in ops:
        cells = []
        for r in rows:
            ns = r.ns_per_op[op]
            cells.append(f"{ns / 1e6:>19.3f} ms" if ns >= 1e5 else f"{ns:>19.0f} ns")
        ratio = rows[-1].ns_per_op[op] / rows[0].ns_per_op[op]
        lines.append(f"{op:<8}" + "".join(f"{c:>22}" for c in cells) + f"{ratio:>17.2f}x")
    small_ratio = max(
        rows[-1].ns_per_op[o] / rows[0].ns_per_op[o] for o in ("get", "set", "append")
    )
    to_blob_ms = rows[-1].ns_per_op["to_blob"] / 1e6
    lines.append("")
    lines.append(
        f"small get/set/append on ~1 MiB vs 1 KiB: worst {small_ratio:.2f}x "
        f"(target <= {TARGETS['op_ratio_max']}x)"
    )
    lines.append(
        f"to_blob of ~1 MiB: {to_blob_ms:.2f} ms (target < {TARGETS['to_blob_1mib_ms_max']} ms)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short pass, for the tests")
    args = parser.parse_args(argv)
    # The ~1 MiB blob sits above the soft cap; its one warning is not news here.
    logging.getLogger("beam_agents.memory").setLevel(logging.ERROR)
    rows = run(args.quick)
    print(report(rows))
    return rows


if __name__ == "__main__":
    main()
