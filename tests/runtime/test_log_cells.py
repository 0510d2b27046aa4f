"""Cells as short logs on the portable SDK harness: newest value read, bounded, compacted.

Each test runs a stateful DoFn on the FnApiRunner (the harness Dataflow runs)
over one key, one element per step, so every step commits before the next
and reads what the runner stored, through the harness's state cache.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.coders.coders import BytesCoder
from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.worker import bundle_processor, statecache
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.utils.timestamp import Timestamp

from beam_agents import AgentConfig, RunAgent
from beam_agents.model import FakeLLM
from beam_agents.runtime._log_cell import LOG_BYTES, LOG_VALUES, Counted, LogCell, log_cell
from tests.runtime import agents

CELL = ReadModifyWriteStateSpec("cell", BytesCoder())
NEXT = TimerSpec("next", TimeDomain.WATERMARK)

Step = Callable[[Any, bytes], None]
"""What one element does to the cell (a LogCell, or Beam's own state)."""

_seen: dict[str, list[tuple[bytes | None, int]]] = {}
"""Per run: what each step read before acting, and how many values the bag held after."""

_STEPS: dict[str, Step] = {}


_VALUES: dict[str, list[bytes]] = {}


class _Steps(beam.DoFn):
    """Applies the named step to the cell once per value, each in a bundle of its own.

    The first value is the element's; each next one is a timer's, set by its
    predecessor: the FnApiRunner fires it in a later bundle, after the
    predecessor's state committed to the runner.
    """

    def __init__(self, run: str, step: str) -> None:
        self._run = run
        self._step = step

    def process(
        self,
        element: tuple[bytes, bytes],
        cell: Any = beam.DoFn.StateParam(CELL),
        next_step: Any = beam.DoFn.TimerParam(NEXT),
    ) -> list[Any]:
        # Beam reads a process method's return annotation as its outputs: an iterable.
        self._apply(0, cell, next_step)
        return []

    @on_timer(NEXT)
    def on_next(
        self,
        timestamp: Any = beam.DoFn.TimestampParam,
        cell: Any = beam.DoFn.StateParam(CELL),
        next_step: Any = beam.DoFn.TimerParam(NEXT),
    ) -> None:
        self._apply(int(timestamp), cell, next_step)

    def _apply(self, index: int, cell: Any, next_step: Any) -> None:
        value = _VALUES[self._run][index]
        bag = cell._underlying_bag_state
        assert not bag._added_elements, "each step starts from what the runner committed"
        assert not bag._cleared, "each step starts from what the runner committed"
        if value.startswith(b"old:"):  # the earlier layout: Beam's own read-modify-write
            cell.write(value)
            read: bytes | None = None
        else:
            logged = log_cell(cell)
            assert type(logged) is LogCell, "the portable harness's cell is a log"
            read = logged.read()
            _STEPS[self._step](logged, value)
            logged.settle()
        _seen[self._run].append((read, len(list(bag.read()))))
        if index + 1 < len(_VALUES[self._run]):
            next_step.set(Timestamp(index + 1))


def _run(step: Step, values: list[bytes]) -> list[tuple[bytes | None, int]]:
    """One key, one value per bundle, in order: each step sees its predecessors' commits."""
    run, name = uuid.uuid4().hex, uuid.uuid4().hex
    _STEPS[name] = step
    _VALUES[run] = values
    _seen[run] = []
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = pipeline | beam.Create([(b"k", b"")]) | beam.ParDo(_Steps(run, name))
    return _seen.pop(run)


def _write(cell: LogCell, value: bytes) -> None:
    cell.write(value)


def _clear_then_write(cell: LogCell, value: bytes) -> None:
    cell.clear()
    assert cell.read() is None, "a held clear reads as cleared"
    cell.write(value)


def _clear(cell: LogCell, _: bytes) -> None:
    cell.clear()


def test_a_cell_appends_each_value_and_reads_the_newest() -> None:
    values = [f"v{i}".encode() for i in range(5)]

    seen = _run(_write, values)

    assert [read for read, _ in seen] == [None, *values[:-1]]
    assert [held for _, held in seen] == [1, 2, 3, 4, 5]


def test_a_cell_compacts_to_one_value_once_it_holds_its_limit() -> None:
    values = [f"v{i}".encode() for i in range(LOG_VALUES + 3)]

    seen = _run(_write, values)

    assert [read for read, _ in seen] == [None, *values[:-1]]
    assert max(held for _, held in seen) == LOG_VALUES
    assert seen[LOG_VALUES][1] == 1, "the write past the limit leaves only itself"


def test_a_large_value_is_written_alone() -> None:
    large = b"x" * LOG_BYTES

    seen = _run(_write, [b"small", large, b"after"])

    assert [read for read, _ in seen] == [None, b"small", large]
    assert [held for _, held in seen] == [1, 1, 1]


def test_a_clear_then_a_write_in_one_element_appends() -> None:
    seen = _run(_clear_then_write, [b"a", b"b", b"c"])

    assert [read for read, _ in seen] == [None, b"a", b"b"]
    assert [held for _, held in seen] == [1, 2, 3]


def test_a_clear_with_no_write_after_it_empties_the_cell_when_the_element_ends() -> None:
    def clear_every_other(cell: LogCell, value: bytes) -> None:
        if value == b"clear":
            cell.clear()
        else:
            cell.write(value)

    seen = _run(clear_every_other, [b"a", b"b", b"clear", b"c"])

    assert [read for read, _ in seen] == [None, b"a", b"b", None]
    assert [held for _, held in seen] == [1, 2, 0, 1]


def test_a_value_the_earlier_layout_wrote_reads_as_it_was_and_is_replaced() -> None:
    """Before logs, every write cleared the cell: one value, which an updated job reads."""
    seen = _run(_write, [b"old:v0", b"v1", b"v2"])

    assert [read for read, _ in seen] == [None, b"old:v0", b"v1"]
    assert [held for _, held in seen] == [1, 2, 3]


def test_a_cell_written_without_a_read_counts_its_log_first_and_appends() -> None:
    def blind(cell: LogCell, value: bytes) -> None:
        fresh = LogCell(cell._bag)  # the same bag, as a step that never read it
        fresh.write(value)
        fresh.settle()

    seen = _run(blind, [b"a", b"b", b"c"])

    assert [read for read, _ in seen] == [None, b"a", b"b"]
    assert [held for _, held in seen] == [1, 2, 3]


def test_a_cell_wrongly_said_empty_still_reads_its_newest_value() -> None:
    """`known_empty` skips the count; the newest value is what a read takes regardless."""

    def said_empty(cell: LogCell, value: bytes) -> None:
        fresh = LogCell(cell._bag)
        fresh.known_empty()
        fresh.write(value)
        fresh.settle()

    seen = _run(said_empty, [b"a", b"b", b"c"])

    assert [read for read, _ in seen] == [None, b"a", b"b"]
    assert [held for _, held in seen] == [1, 2, 3]


def test_cells_off_the_portable_harness_are_used_as_they_are_their_writes_counted() -> None:
    class Plain:
        def __init__(self) -> None:
            self.ops: list[object] = []

        def read(self) -> bytes | None:
            self.ops.append("read")
            return b"held"

        def write(self, value: bytes) -> None:
            self.ops.append(value)

        def clear(self) -> None:
            self.ops.append("clear")

    plain = Plain()
    cell = log_cell(plain)

    assert cell.read() == b"held"
    cell.write(b"abc")
    cell.clear()
    cell.write(b"de")
    assert plain.ops == ["read", b"abc", "clear", b"de"]
    assert isinstance(cell, Counted)
    assert cell.written == 5


_agent_out: list[tuple[bytes, bytes]] = []


def _collect(element: tuple[bytes, bytes]) -> None:
    _agent_out.append(element)


def _agent_run(
    inflight: int, commits: list[tuple[str, bool, int]] | None
) -> list[tuple[bytes, bytes]]:
    """RunAgent on the FnApiRunner, 2 keys of 5 events whose calls take 50 ms.

    With `commits`, each committed cell is noted: its name, whether the
    commit cleared it, and how many values it appended.
    """
    provider = FakeLLM(name=f"log-cells-{uuid.uuid4().hex}", latency_s=0.05, default=b"ok")
    provider.reset()
    config = AgentConfig(provider_factory=provider, max_inflight_calls=inflight)
    events = [(f"k{i % 2}".encode(), f"e{i}".encode()) for i in range(10)]
    commit = bundle_processor.SynchronousBagRuntimeState.commit

    def noted(state: Any) -> None:
        if commits is not None and (state._cleared or state._added_elements):
            name = state._state_key.bag_user_state.user_state_id
            commits.append((name, state._cleared, len(state._added_elements)))
        commit(state)

    _agent_out.clear()
    bundle_processor.SynchronousBagRuntimeState.commit = noted  # type: ignore[method-assign]
    try:
        with beam.Pipeline(runner=FnApiRunner()) as pipeline:
            result = pipeline | beam.Create(events) | RunAgent(agents.ask_and_fingerprint, config)
            result.outputs | beam.Map(_collect)
    finally:
        bundle_processor.SynchronousBagRuntimeState.commit = commit  # type: ignore[method-assign]
    return sorted(_agent_out)


def test_a_parked_key_appends_to_its_cells_instead_of_rewriting_them() -> None:
    """Completions append to MEMORY or MEMORY_LOG, most parks to CONTINUATION (FnApiRunner)."""
    commits: list[tuple[str, bool, int]] = []

    parked = _agent_run(256, commits)

    memory = [
        (cleared, added) for name, cleared, added in commits if name in ("memory", "memory_log")
    ]
    continuation = [(cleared, added) for name, cleared, added in commits if name == "continuation"]
    assert [c for c in memory if c[0] and c[1]] == [], "no memory write cleared the cell first"
    assert len([c for c in memory if c[1]]) >= 8, "completions appended their memory"
    rewrites = [c for c in continuation if c[0] and c[1]]
    appends = [c for c in continuation if not c[0] and c[1]]
    assert len(appends) > len(rewrites), "most parks append (a log compacts at its limit)"
    assert parked == _agent_run(1, None), "outputs are the serial run's"


_bundle_reads: dict[str, list[bytes | None]] = {}


class _KnownEmptyThenWrite(beam.DoFn):
    """Each element of the key reads the cell, then writes its own value; the first
    element knows the cell empty (as a key without SEQ knows it), so it does not read."""

    def __init__(self, run: str) -> None:
        self._run = run

    def process(
        self, element: tuple[bytes, bytes], cell: Any = beam.DoFn.StateParam(CELL)
    ) -> list[Any]:
        logged = log_cell(cell)
        assert type(logged) is LogCell
        reads = _bundle_reads[self._run]
        if not reads:
            logged.known_empty()
            reads.append(None)
        else:
            reads.append(logged.read())
        logged.write(element[1])
        logged.settle()
        return []


def test_a_key_s_next_element_in_the_bundle_reads_what_the_last_wrote_without_a_fetch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The harness caches a cell when it is read and then sizes every write of it: a cell
    this bundle only wrote is neither fetched nor cached, so its write costs no sizing."""
    fetched: list[str] = []
    sized: list[str] = []
    get, put = statecache.StateCache.get, statecache.StateCache.put

    def _name(key: Any) -> str:
        return str(beam_fn_api_pb2.StateKey.FromString(key[0]).bag_user_state.user_state_id)

    def counted_get(self: Any, key: Any, loading_fn: Any) -> Any:
        def load(k: Any) -> Any:
            fetched.append(_name(key))
            return loading_fn(k)

        return get(self, key, load)

    def counted_put(self: Any, key: Any, value: Any) -> None:
        sized.append(_name(key))
        put(self, key, value)

    monkeypatch.setattr(statecache.StateCache, "get", counted_get)
    monkeypatch.setattr(statecache.StateCache, "put", counted_put)
    run = uuid.uuid4().hex
    _bundle_reads[run] = []
    values = [b"a", b"b", b"c", b"d"]
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = (
            pipeline
            | beam.Create([(b"k", value) for value in values])
            | beam.ParDo(_KnownEmptyThenWrite(run))
        )

    assert _bundle_reads.pop(run) == [None, b"a", b"b", b"c"]
    assert "cell" not in fetched
    assert "cell" not in sized
