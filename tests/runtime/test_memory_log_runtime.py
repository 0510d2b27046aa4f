"""The runtime over MEMORY and MEMORY_LOG: old layouts carried forward, bytes written counted.

A commit appends what it changed to MEMORY_LOG instead of rewriting MEMORY
(`beam_agents.memory.delta`). These tests run the activation core over a
key written in the layout every earlier release wrote (MEMORY alone, the
golden blob), and whole pipelines on the FnApiRunner and the streaming
DirectRunner, reading the `state_bytes_written` distribution the cells
count at the coder.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing import test_stream
from apache_beam.transforms.window import TimestampedValue

from beam_agents import ActivationContext, AgentConfig, Complete, FlushToLongterm, RunAgent
from beam_agents.coders import encode_deterministic
from beam_agents.local import bundle_scoped_metrics
from beam_agents.memory import Memory
from beam_agents.memory.delta import fold_blob
from beam_agents.memory.stores.memory import InMemoryMemoryStore
from beam_agents.proto import MemoryBlob
from beam_agents.runtime._calls.driver import LoopDriver
from beam_agents.runtime._metrics import NAMESPACE
from beam_agents.runtime._paths.activator import Activator, Setup
from tests.runtime.collect import Collect, take
from tests.runtime.recording import recording_cells

GOLDEN_MEMORY = Path(__file__).parents[1] / "golden" / "v1" / "memory_blob.bin"
GOLDEN_SEQ = GOLDEN_MEMORY.with_name("seq_state.bin")
"""The SEQ every earlier release wrote beside MEMORY (seq 7, no memory digest)."""
BULK = b"n" * 20_000
FILL = b"fill"
SCALARS = 800
SCALAR_BYTES = 250


async def note_recent(ctx: ActivationContext) -> Complete:
    """Appends the event to the golden blob's ring (which holds an empty item) and reports it.

    The first event also notes 20 KiB: past LOG_FROM_BYTES, so commits write deltas."""
    if ctx.event == b"a":
        ctx.memory.set("notes", BULK)
    ctx.memory.append("recent", ctx.event)
    profile = ctx.memory.get("profile") or b""
    return Complete(b",".join(ctx.memory.ring("recent")) + b"|" + profile)


def _activator(agent: Callable[[ActivationContext], object]) -> Activator:
    return Activator(
        Setup(
            agent=agent,  # type: ignore[arg-type]
            config=AgentConfig(),
            token=f"memory-log-{uuid.uuid4().hex}",
            clock_ms=lambda: 0,
            driver=LoopDriver(),
            provider=None,
        )
    )


def test_a_key_written_in_the_old_layout_is_read_and_carried_forward() -> None:
    """MEMORY as every earlier release wrote it: read as it is, rewritten once, then deltas."""
    golden = GOLDEN_MEMORY.read_bytes()
    activator = _activator(note_recent)
    cells = recording_cells()
    cells.memory.value = golden  # type: ignore[attr-defined]
    cells.seq.value = GOLDEN_SEQ.read_bytes()  # type: ignore[attr-defined]
    reference = Memory(MemoryBlob.FromString(golden), now_ms=0)

    outputs = []
    for number, event in enumerate((b"a", b"b", b"c"), start=1):
        now_ms = 1_700_000_002_000 + number
        (out,) = [o for o in activator.on_event(b"k", event, now_ms, cells) if type(o) is tuple]
        outputs.append(out[1])
        reference = Memory(reference.to_blob(), now_ms=now_ms)
        if event == b"a":
            reference.set("notes", BULK)
        reference.append("recent", event)
        reference.get("profile")
        if number == 1:  # carried forward whole, with a head
            assert cells.memory.ops == ["write"]  # type: ignore[attr-defined]
            assert cells.memory_head.ops == ["write"]  # type: ignore[attr-defined]
        if number == 2:  # then only what changed
            assert cells.memory.ops == ["write"]  # type: ignore[attr-defined]
            assert cells.memory_log.ops == ["add"]  # type: ignore[attr-defined]

    assert outputs == [
        b"evt-1,,evt-3,a|tier=gold",
        b"evt-1,,evt-3,a,b|tier=gold",
        b"evt-1,,evt-3,a,b,c|tier=gold",
    ]
    base = MemoryBlob.FromString(cells.memory.value)  # type: ignore[attr-defined]
    folded = fold_blob(base, cells.memory_log.values)  # type: ignore[attr-defined]
    assert folded == reference.to_blob()

    reads = cells.memory.reads, cells.memory_log.reads  # type: ignore[attr-defined]
    activator.on_ttl(b"k", 1_800_000_000_000, cells)

    # No on_expire: the wipe needs the head alone, not the base or the log folded.
    assert (cells.memory.reads, cells.memory_log.reads) == reads  # type: ignore[attr-defined]
    assert cells.memory.ops[-1] == "clear"  # type: ignore[attr-defined]
    assert cells.memory.value is None  # type: ignore[attr-defined]
    assert cells.memory_log.ops[-1] == "clear"  # type: ignore[attr-defined]
    assert cells.memory_log.values == []  # type: ignore[attr-defined]
    assert cells.memory_head.value is None  # type: ignore[attr-defined]


def test_an_on_expire_flush_of_a_logged_key_writes_the_folded_memory() -> None:
    """With on_expire the wipe folds base and log: the row is the memory as committed."""
    namespace = f"memory-log-expire-{uuid.uuid4().hex}"
    activator = Activator(
        Setup(
            agent=note_recent,
            config=AgentConfig(
                longterm_memory=f"memory://{namespace}", on_expire=FlushToLongterm()
            ),
            token=f"memory-log-{uuid.uuid4().hex}",
            clock_ms=lambda: 0,
            driver=LoopDriver(),
            provider=None,
            store=InMemoryMemoryStore.shared(namespace),
        )
    )
    cells = recording_cells()
    for number, event in enumerate((b"a", b"b", b"c"), start=1):
        activator.on_event(b"k", event, 1_700_000_002_000 + number, cells)
    assert cells.memory_log.values  # type: ignore[attr-defined]
    base = MemoryBlob.FromString(cells.memory.value)  # type: ignore[attr-defined]
    committed = fold_blob(base, cells.memory_log.values)  # type: ignore[attr-defined]

    activator.on_ttl(b"k", 1_800_000_000_000, cells)

    async def rows() -> list[bytes]:
        store = InMemoryMemoryStore.shared(namespace)
        return [record.value async for _, record in store.scan()]

    (row,) = asyncio.run(rows())
    assert row == encode_deterministic(committed)
    assert cells.memory.value is None  # type: ignore[attr-defined]


async def fill_then_change(ctx: ActivationContext) -> Complete:
    """~200 KiB of scalars on the first event; each later event rewrites one of them."""
    memory = ctx.memory
    if ctx.event == FILL:
        for i in range(SCALARS):
            memory.set(f"fact/{i:04d}", b"f" * SCALAR_BYTES)
    else:
        memory.set(f"fact/{ctx.seq % SCALARS:04d}", b"u" * SCALAR_BYTES)
    return Complete(b"%d:%d" % (ctx.seq, memory.size_bytes))


EVENTS = 30


def _events() -> list[tuple[bytes, bytes]]:
    return [(b"key", FILL)] + [(b"key", b"e%d" % i) for i in range(EVENTS)]


def _fnapi(pipeline_events: list[tuple[bytes, bytes]]) -> tuple[beam.Pipeline, object]:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    return pipeline, pipeline | beam.Create(pipeline_events)


def _streaming(pipeline_events: list[tuple[bytes, bytes]]) -> tuple[beam.Pipeline, object]:
    pipeline = beam.Pipeline(runner="DirectRunner", options=PipelineOptions(streaming=True))
    stream = test_stream.TestStream()
    for i, element in enumerate(pipeline_events):
        stream = stream.add_elements([TimestampedValue(element, 1 + i)])
        stream = stream.advance_watermark_to(1 + i)
    return pipeline, pipeline | stream.advance_watermark_to_infinity()


@pytest.mark.parametrize(
    "make", [_fnapi, _streaming], ids=["FnApiRunner", "streaming DirectRunner"]
)
def test_a_full_key_writes_about_what_its_events_change_not_its_whole_memory(
    make: Callable[[list[tuple[bytes, bytes]]], tuple[beam.Pipeline, object]],
) -> None:
    """~200 KiB held, one 250-byte scalar changed an event: the state written follows the change."""
    run_id = uuid.uuid4().hex
    pipeline, events = make(_events())
    result = events | RunAgent(fill_then_change, AgentConfig(ttl_ms=10**12))  # type: ignore[operator]
    _ = result.outputs | beam.ParDo(Collect(run_id, "outputs"))
    with bundle_scoped_metrics():
        running = pipeline.run()
        running.wait_until_finish()

    outputs = sorted(take(run_id, "outputs"))
    held = SCALARS * (SCALAR_BYTES + 1)
    assert outputs == sorted((b"key", b"%d:%d" % (seq, held)) for seq in range(1, EVENTS + 2))
    query = MetricsFilter().with_namespace(NAMESPACE).with_name("state_bytes_written")
    (written,) = running.metrics().query(query)["distributions"]
    total = written.committed.sum
    blob = len(encode_deterministic(_filled().to_blob()))
    # The fill writes the blob once; a whole rewrite per event would add it EVENTS times more.
    per_event = (total - blob) / EVENTS
    assert blob < total
    assert per_event < 4 * 1024 + 2 * SCALAR_BYTES, per_event


def _filled() -> Memory:
    memory = Memory(now_ms=1)
    for i in range(SCALARS):
        memory.set(f"fact/{i:04d}", b"f" * SCALAR_BYTES)
    return memory
