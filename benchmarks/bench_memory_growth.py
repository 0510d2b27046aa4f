"""Cost growth with working-memory size (docs/architecture.md, Performance aims).

Per-event cost on the streaming DirectRunner once each key's memory is full,
for two shapes of the same bytes:

- scalars: ~250-byte scalars (about 3,600 of them at ~900 KiB); every event
  rewrites four of them, so every activation changes memory;
- ring: one ring of 1 KiB items at its bound; every event appends one.

Each configuration runs 20 keys. A run first fills every key's memory with
one event, then sends the measured events; the fill-only run is subtracted,
so what is left is the steady-state cost per event. Sizes and shapes are
interleaved run by run and the medians reported, as ratios against the
1 KiB figure measured in the same run. Targets: ~900 KiB of ~3,600 entries
within 7.5x the 1 KiB cost (and at most 1.5 ms per event on the 2-core dev
machine); 64 KiB within 2x.

    python benchmarks/bench_memory_growth.py          # full run (make bench)
    python benchmarks/bench_memory_growth.py --quick  # one short pass (the tests)
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Timestamp

from beam_agents import ActivationContext, AgentConfig, Complete, RunAgent

KEYS = 20
SCALAR_BYTES = 250
RING_ITEM_BYTES = 1024
SIZES_KIB = (1, 64, 256, 900)
TARGETS = {"scalars@900_ratio": 7.5, "scalars@900_ms": 1.5, "scalars@64_ratio": 2.0}
FILL = b"fill"


def _scalars(count: int) -> Callable[[ActivationContext], object]:
    async def agent(ctx: ActivationContext) -> Complete:
        memory = ctx.memory
        if ctx.event == FILL:
            for i in range(count):
                memory.set(f"fact/{i:05d}", b"f" * SCALAR_BYTES)
        else:
            for j in range(4):
                memory.set(f"fact/{(ctx.seq * 4 + j) % count:05d}", b"u" * SCALAR_BYTES)
        return Complete(b"")

    return agent


def _ring(items: int) -> Callable[[ActivationContext], object]:
    async def agent(ctx: ActivationContext) -> Complete:
        memory = ctx.memory
        for _ in range(items if ctx.event == FILL else 1):
            memory.append("history", b"r" * RING_ITEM_BYTES, max_items=items)
        return Complete(b"")

    return agent


def _agent(shape: str, kib: int) -> Callable[[ActivationContext], object]:
    if shape == "scalars":
        return _scalars(max(1, kib * 1024 // (SCALAR_BYTES + 1)))
    return _ring(max(1, kib * 1024 // (RING_ITEM_BYTES + 2)))


def _seconds(shape: str, kib: int, events_per_key: int) -> float:
    elements = [
        TimestampedValue((f"key-{k}".encode(), FILL), Timestamp(micros=k)) for k in range(KEYS)
    ]
    elements += [
        TimestampedValue((f"key-{i % KEYS}".encode(), b"event"), Timestamp(micros=KEYS + i))
        for i in range(events_per_key * KEYS)
    ]
    stream = TestStream()
    for start in range(0, len(elements), 500):
        stream = stream.add_elements(elements[start : start + 500])
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    pipeline = beam.Pipeline(runner="DirectRunner", options=options)
    config = AgentConfig(compactor=None)
    _ = pipeline | stream.advance_watermark_to_infinity() | RunAgent(_agent(shape, kib), config)
    started = time.perf_counter()
    pipeline.run().wait_until_finish()
    return time.perf_counter() - started


def measure(events_per_key: int, repeats: int) -> dict[tuple[str, int], float]:
    """Median ms per steady-state event for every (shape, size), runs interleaved."""
    samples: dict[tuple[str, int], list[float]] = {
        (shape, kib): [] for shape in ("scalars", "ring") for kib in SIZES_KIB
    }
    for _ in range(repeats):
        for (shape, kib), values in samples.items():
            full = _seconds(shape, kib, events_per_key)
            fill_only = _seconds(shape, kib, 0)
            values.append(max(0.0, full - fill_only) / (events_per_key * KEYS) * 1e3)
    return {config: statistics.median(values) for config, values in samples.items()}


def report(per_event: dict[tuple[str, int], float]) -> str:
    header = "".join(f"{f'{kib} KiB':>16}" for kib in SIZES_KIB)
    lines = [f"{'shape':<10}{header}"]
    for shape in ("scalars", "ring"):
        base = max(per_event[(shape, 1)], 1e-6)  # a --quick pass may measure ~0
        cells = "".join(
            f"{per_event[(shape, kib)]:>8.3f} ({per_event[(shape, kib)] / base:4.1f}x)"
            for kib in SIZES_KIB
        )
        lines.append(f"{shape:<10}{cells}")
    big, mid, base = (per_event[("scalars", kib)] for kib in (900, 64, 1))
    base = max(base, 1e-6)
    lines.append(
        f"ms per event once full, ratio to 1 KiB in the same run; scalars at 900 KiB: "
        f"{big:.3f} ms, {big / base:.1f}x (target <= {TARGETS['scalars@900_ratio']}x and "
        f"<= {TARGETS['scalars@900_ms']} ms); at 64 KiB {mid / base:.1f}x "
        f"(target <= {TARGETS['scalars@64_ratio']}x)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[tuple[str, int], float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short pass, for the tests")
    args = parser.parse_args(argv)
    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    # Memory above the soft cap with no compactor warns once per activation.
    logging.getLogger("beam_agents.memory").setLevel(logging.ERROR)
    per_event = measure(2 if args.quick else 100, 1 if args.quick else 3)
    print(report(per_event))
    return per_event


if __name__ == "__main__":
    main()
