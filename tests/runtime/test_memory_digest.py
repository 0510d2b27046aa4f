"""An activation opens its key's memory by the digest SEQ (or its park) recorded.

The process that committed a key's memory keeps it decoded; SEQ says which
memory is committed, so the next activation reuses it without reading
MEMORY, where a read would cache the cell on the portable harness and make
every later write of it a sized cache update. Anything else (another
process's commit, a retried bundle, a wipe, a SEQ from before the digest)
reads what is stored.
"""

from __future__ import annotations

from apache_beam.pvalue import TaggedOutput

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.memory import Memory
from beam_agents.memory.resident import EMPTY_DIGEST, whole_digest
from beam_agents.model import FakeLLM
from beam_agents.model.replay import ReplayLimits
from beam_agents.proto.beam_agents_pb2 import Continuation, SeqState
from beam_agents.runtime._calls.driver import LoopDriver
from beam_agents.runtime._cells import encode_seq
from beam_agents.runtime._log_cell import LOG_BYTES, LOG_VALUES, LogCell
from beam_agents.runtime._paths.activator import Activator, KeyCells, Setup
from tests.runtime.recording import recording_cells

KEY = b"k"


async def _remember(ctx: ActivationContext) -> Complete:
    """Appends its event; the output is every event the memory holds, so a stale one shows."""
    ctx.memory.append("events", ctx.event, max_items=16)
    return Complete(b"|".join(ctx.memory.ring("events")))


async def _remember_and_ask(ctx: ActivationContext) -> Complete:
    """The same, after a model call, so the activation parks."""
    answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    ctx.memory.append("events", ctx.event, max_items=16)
    return Complete(b"|".join((*ctx.memory.ring("events"), answer.response)))


def _activator(agent: object, name: str, inflight: int = 1, ttl_ms: int = 1_800_000) -> Activator:
    provider = FakeLLM(name=name, latency_s=0.01, default=b"fine")
    provider.reset()
    config = AgentConfig(provider_factory=provider, max_inflight_calls=inflight, ttl_ms=ttl_ms)
    return Activator(
        Setup(
            agent=agent,  # type: ignore[arg-type]
            config=config,
            token=f"digest-{name}",
            clock_ms=lambda: 0,
            driver=LoopDriver(),
            provider=provider,
            limits=ReplayLimits(),
        )
    )


def _plain(outputs: list[object]) -> list[object]:
    return [(o.tag, o.value) if isinstance(o, TaggedOutput) else o for o in outputs]


def _memory_reads(cells: KeyCells) -> int:
    return cells.memory.reads + cells.memory_head.reads  # type: ignore[attr-defined,no-any-return]


def _parked(cells: KeyCells) -> bool:
    raw = cells.continuation.value  # type: ignore[attr-defined]
    return raw is not None and Continuation.FromString(raw).HasField("parked")


def _seq(cells: KeyCells) -> SeqState:
    return SeqState.FromString(cells.seq.value)  # type: ignore[attr-defined]


def test_a_key_this_process_committed_never_reads_memory_in_place_or_parked() -> None:
    serial = _activator(_remember_and_ask, "own-1", 1)
    parked = _activator(_remember_and_ask, "own-256", 256)
    serial_cells, parked_cells = recording_cells(), recording_cells()
    parked.on_event(b"other", b"warm up", 500, recording_cells())  # the provider waits
    expected: list[object] = []
    got: list[object] = []
    parks = 0
    for time_ms, event in ((1_000, b"a"), (2_000, b"b"), (3_000, b"c"), (4_000, b"d")):
        expected += serial.on_event(KEY, event, time_ms, serial_cells)
        got += parked.on_event(KEY, event, time_ms, parked_cells)
        parks += _parked(parked_cells)
        while _parked(parked_cells):
            got += parked.on_hitl(KEY, parked_cells)

    assert parks == 4
    assert _memory_reads(serial_cells) == 0
    assert _memory_reads(parked_cells) == 0
    assert _plain(got) == _plain(expected)
    assert parked_cells.memory.value == serial_cells.memory.value  # type: ignore[attr-defined]
    assert parked_cells.seq.value == serial_cells.seq.value  # type: ignore[attr-defined]
    stored = parked_cells.memory.value  # type: ignore[attr-defined]
    assert _seq(parked_cells).memory_digest == whole_digest(stored)


def test_a_memory_another_process_committed_is_read_not_taken_from_this_ones() -> None:
    here = _activator(_remember, "here")
    there = _activator(_remember, "there")  # another transform token: another process's cache
    alone = _activator(_remember, "alone")
    cells, alone_cells = recording_cells(), recording_cells()
    expected = [
        alone.on_event(KEY, event, t, alone_cells)
        for t, event in ((1_000, b"a"), (2_000, b"b"), (3_000, b"c"))
    ]

    first = here.on_event(KEY, b"a", 1_000, cells)
    second = there.on_event(KEY, b"b", 2_000, cells)  # the key moved, and came back
    reads = _memory_reads(cells)
    third = here.on_event(KEY, b"c", 3_000, cells)

    assert _memory_reads(cells) == reads + 1  # its snapshot of "a" is not what SEQ names
    assert [first, second, third] == expected
    assert third[0] == (KEY, b"a|b|c")


def test_a_retried_bundle_reads_memory_rather_than_what_the_failed_attempt_kept() -> None:
    agent = _activator(_remember, "retry")
    alone = _activator(_remember, "retry-alone")
    cells, alone_cells = recording_cells(), recording_cells()
    expected = [
        alone.on_event(KEY, event, t, alone_cells) for t, event in ((1_000, b"a"), (2_000, b"b"))
    ]
    agent.on_event(KEY, b"a", 1_000, cells)
    # The attempt commits into cells the runner then discards (its bundle failed).
    discarded = recording_cells()
    for name in ("memory", "seq"):
        getattr(discarded, name).value = getattr(cells, name).value
    agent.on_event(KEY, b"x", 2_000, discarded)
    reads = _memory_reads(cells)

    retried = agent.on_event(KEY, b"b", 2_000, cells)

    assert _memory_reads(cells) == reads + 1
    assert retried == expected[1]
    assert cells.memory.value == alone_cells.memory.value  # type: ignore[attr-defined]


def test_a_wiped_key_comes_back_to_an_empty_memory_without_reading_it() -> None:
    agent = _activator(_remember, "wiped", ttl_ms=1_000)
    cells = recording_cells()
    agent.on_event(KEY, b"a", 1_000, cells)
    agent.on_ttl(KEY, 2_000, cells)
    assert cells.memory.value is None  # type: ignore[attr-defined]
    assert _seq(cells).memory_digest == EMPTY_DIGEST
    reads = _memory_reads(cells)

    assert agent.on_event(KEY, b"b", 5_000, cells) == [(KEY, b"b")]
    assert _memory_reads(cells) == reads


def test_a_ttl_firing_on_a_parked_key_reads_no_memory_and_no_follow_ups() -> None:
    agent = _activator(_remember_and_ask, "ttl-parked", 256, ttl_ms=2_000)
    cells = recording_cells()
    agent.on_event(b"other", b"warm up", 500, recording_cells())  # the provider waits
    agent.on_event(KEY, b"a", 1_000, cells)
    while _parked(cells):
        agent.on_hitl(KEY, cells)
    agent.on_event(KEY, b"b", 5_000, cells)
    assert _parked(cells)
    reads = _memory_reads(cells), cells.wakes.reads  # type: ignore[attr-defined]

    assert agent.on_ttl(KEY, 3_000, cells) == []

    assert (_memory_reads(cells), cells.wakes.reads) == reads  # type: ignore[attr-defined]
    assert Continuation.FromString(cells.continuation.value).parked.expire_at_ms == 3_000  # type: ignore[attr-defined]


def test_a_seq_written_before_the_digest_reads_memory_and_then_records_one() -> None:
    agent = _activator(_remember, "old-seq")
    cells = recording_cells()
    before = Memory(None, now_ms=0)
    before.append("events", b"old", max_items=16)
    cells.memory.value = before.to_bytes()  # type: ignore[attr-defined]
    cells.seq.value = encode_seq(7, True)  # type: ignore[attr-defined]

    assert agent.on_event(KEY, b"new", 1_000, cells) == [(KEY, b"old|new")]
    assert cells.memory.reads == 1  # type: ignore[attr-defined]
    stored = cells.memory.value  # type: ignore[attr-defined]
    assert _seq(cells).memory_digest == whole_digest(stored)


class _Bag:
    """The harness's bag underneath a cell: values in order."""

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.reads = 0

    def read(self) -> list[bytes]:
        self.reads += 1
        return list(self.values)

    def add(self, value: bytes) -> None:
        self.values.append(value)

    def clear(self) -> None:
        self.values.clear()


def test_a_log_cell_predicts_what_its_write_leaves_in_the_bag() -> None:
    bag = _Bag()
    sizes = [10, 4_000, 9_000, 1, LOG_BYTES, 3, *([7] * (LOG_VALUES + 3))]
    for size in sizes:
        cell = LogCell(bag)
        cell.read()
        predicted = cell.after_write(size)
        cell.write(b"v" * size)
        cell.settle()
        assert predicted == (len(bag.values), sum(map(len, bag.values)))
        assert predicted is not None
        reads = bag.reads
        told = LogCell(bag)
        told.known_log(*predicted)
        told.write(b"w")
        told.settle()  # counted from what it was told: the bag is not read
        assert bag.reads == reads
        assert bag.values[-1] == b"w"
