"""What a park writes, and what a failed re-run puts back: the core against recording cells."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from apache_beam.pvalue import TaggedOutput

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, intent_id
from beam_agents.memory import Memory
from beam_agents.model import FakeLLM
from beam_agents.model.replay import ReplayLimits
from beam_agents.proto.beam_agents_pb2 import Continuation, MemoryBlob
from beam_agents.runtime._calls.driver import LoopDriver
from beam_agents.runtime._cells import encode_seq
from beam_agents.runtime._paths.activator import Activator, KeyCells, Setup
from tests.runtime import agents
from tests.runtime.recording import recording_cells

KEY = b"k"


def _activator(agent: object, name: str, inflight: int) -> Activator:
    provider = FakeLLM(name=name, latency_s=0.01, default=b"fine", fail_pattern="boom|no")
    provider.reset()
    return Activator(
        Setup(
            agent=agent,  # type: ignore[arg-type]
            config=AgentConfig(provider_factory=provider, max_inflight_calls=inflight),
            token=f"state-{name}",
            clock_ms=lambda: 0,
            driver=LoopDriver(),
            provider=provider,
            limits=ReplayLimits(),
        )
    )


def _state(cells: KeyCells) -> dict[str, object]:
    """Every cell's bytes, and where each timer was left (its last set or clear)."""
    state: dict[str, object] = {
        name: getattr(cells, name).value
        for name in ("memory", "seq", "cache", "continuation", "pending")
    }
    for name in ("ttl_timer", "hitl_timer"):
        ops = getattr(cells, name).ops
        last = ops[-1] if ops else "clear"
        state[name] = None if last == "clear" else last  # cleared or never set: no timer
    return state


def _parked(cells: KeyCells) -> Continuation | None:
    raw = cells.continuation.value  # type: ignore[attr-defined]
    if raw is None:
        return None
    continuation = Continuation.FromString(raw)
    return continuation if continuation.HasField("parked") else None


def _plain(outputs: list[object]) -> list[object]:
    """Outputs comparable by value: a tagged output as its tag and value."""
    return [(o.tag, o.value) if isinstance(o, TaggedOutput) else o for o in outputs]


def _settle(activator: Activator, cells: KeyCells) -> list[object]:
    """Fire the poll until the key no longer waits on the model, as the runner would."""
    out: list[object] = []
    while _parked(cells) is not None:
        out.extend(activator.on_hitl(KEY, cells))
    return out


def test_a_re_run_that_fails_leaves_the_cells_as_a_failure_in_place_does() -> None:
    serial, parked = (
        _activator(agents.ask_model, "fail-1", 1),
        _activator(agents.ask_model, "fail-256", 256),
    )
    serial_cells, parked_cells = recording_cells(), recording_cells()

    for time_ms, event in ((1_000, b"first"), (2_000, b"boom"), (3_000, b"third")):
        expected = serial.on_event(KEY, event, time_ms, serial_cells)
        got = parked.on_event(KEY, event, time_ms, parked_cells) + _settle(parked, parked_cells)
        assert _plain(got) == _plain(expected)
        assert _state(parked_cells) == _state(serial_cells)
        assert _parked(parked_cells) is None


def test_a_resumed_suspension_whose_call_fails_is_live_again_byte_for_byte() -> None:
    serial = _activator(agents.ask_again_on_answer, "resume-1", 1)
    parked = _activator(agents.ask_again_on_answer, "resume-256", 256)
    serial_cells, parked_cells = recording_cells(), recording_cells()
    ask = intent_id(KEY, 1, 0)
    # Another key's call, in place, shows that the provider waits.
    parked.on_event(b"other", b"warm up", 500, recording_cells())
    assert parked.on_event(KEY, b"q", 1_000, parked_cells) == []  # parked on its call
    assert _parked(parked_cells) is not None
    serial.on_event(KEY, b"q", 1_000, serial_cells)
    _settle(parked, parked_cells)
    assert _state(parked_cells) == _state(serial_cells)  # suspended alike

    for answer, at_ms in ((b"no", 2_000), (b"yes", 3_000)):  # "no" fails its call
        expected = serial.on_answer(KEY, ask, answer, at_ms, serial_cells)
        assert parked.on_answer(KEY, ask, answer, at_ms, parked_cells) == []
        assert _parked(parked_cells) is not None  # the resumed run parked on its call
        got = _settle(parked, parked_cells)
        assert _plain(got) == _plain(expected)
        assert _state(parked_cells) == _state(serial_cells)


def _ttl_ms(cells: KeyCells) -> int | None:
    """Where the key's TTL timer was left, in ms (None: not set)."""
    ops = cells.ttl_timer.ops  # type: ignore[attr-defined]
    last = ops[-1] if ops else "clear"
    return None if last == "clear" else int(last.micros // 1000)


def _expiry_after_a_park(second: bytes) -> None:
    """The TTL armed by `first` fires while `second` is parked (its event time is past it)."""
    serial = _activator(agents.ask_model, f"ttl-1-{second.decode()}", 1)
    parked = _activator(agents.ask_model, f"ttl-256-{second.decode()}", 256)
    serial.instance.config = parked.instance.config = _with_ttl(parked.instance.config)
    serial_cells, parked_cells = recording_cells(), recording_cells()

    expected = serial.on_event(KEY, b"first", 1_000, serial_cells)
    expected += serial.on_event(KEY, second, 5_000, serial_cells)
    expected += serial.on_ttl(KEY, _ttl_ms(serial_cells) or 0, serial_cells)

    got = parked.on_event(KEY, b"first", 1_000, parked_cells)  # in place: the provider waits
    armed = _ttl_ms(parked_cells)
    assert armed is not None
    assert parked.on_event(KEY, second, 5_000, parked_cells) == []
    assert _parked(parked_cells) is not None
    assert parked.on_ttl(KEY, armed, parked_cells) == []  # waits for the parked activation
    got += _settle(parked, parked_cells)
    rearmed = _ttl_ms(parked_cells)
    if rearmed is not None and rearmed > armed:  # the runner fires it in its time
        got += parked.on_ttl(KEY, rearmed, parked_cells)

    assert _plain(got) == _plain(expected)
    assert _state(parked_cells) == _state(serial_cells)
    assert parked_cells.memory.value is None  # type: ignore[attr-defined]  # wiped


def _with_ttl(config: AgentConfig) -> AgentConfig:
    return dataclasses.replace(config, ttl_ms=2_000)


def test_a_ttl_firing_on_a_parked_key_waits_for_the_activation_it_parked() -> None:
    _expiry_after_a_park(b"second")


def test_a_ttl_firing_on_a_parked_key_expires_it_once_its_re_run_fails() -> None:
    _expiry_after_a_park(b"boom")


def test_on_a_deployed_runner_the_poll_is_due_when_the_call_should_have_answered() -> None:
    """A poll due at once would hold a worker thread for the rest of the call."""
    provider = FakeLLM(name="deployed-poll", latency_s=0.05)
    provider.reset()
    activator = Activator(
        Setup(
            agent=agents.ask_model,
            config=AgentConfig(provider_factory=provider),
            token="state-deployed-poll",
            clock_ms=lambda: 1_000_000,
            driver=LoopDriver(),
            provider=provider,
            poll_clock_ms=lambda: 1_000_000,
            poll_after_call=True,
        )
    )
    # Each call's duration, as the runtime measures it, lies inside the span the test
    # sees around it: the bound is what this run took, not a budget for the machine.
    spans_ms = []
    started = time.monotonic()
    activator.on_event(b"warm", b"up", 500, recording_cells())  # in place: it waits
    spans_ms.append((time.monotonic() - started) * 1000)
    first, second = recording_cells(), recording_cells()

    started = time.monotonic()
    activator.on_event(KEY, b"one", 1_000, first)  # no call has answered on the loop yet
    _settle(activator, first)
    spans_ms.append((time.monotonic() - started) * 1000)
    activator.on_event(KEY, b"two", 2_000, second)

    assert first.hitl_timer.ops[0].micros // 1000 == 1_000_000  # type: ignore[attr-defined]
    due = second.hitl_timer.ops[0].micros // 1000 - 1_000_000  # type: ignore[attr-defined]
    assert 40 <= due <= max(spans_ms)  # the calls' average: 50 ms each, and what waiting took
    assert [out for _, out in _settle(activator, second)] == [b"ok"]  # type: ignore[misc]
    assert _parked(second) is None


def test_only_runners_in_this_process_fire_polls_at_once() -> None:
    from apache_beam.runners.dataflow.dataflow_runner import DataflowRunner
    from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner, DirectRunner
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from beam_agents.runtime.transform import deployed_runner

    assert not deployed_runner(DirectRunner())
    assert not deployed_runner(BundleBasedDirectRunner())
    assert not deployed_runner(FnApiRunner())
    assert deployed_runner(DataflowRunner())


def test_a_poll_whose_key_parks_again_leaves_seq_unwritten() -> None:
    """Only the poll that ends a chain of parked events writes SEQ, with the in-place bytes.

    The chain includes a re-run that fails, whose restored SEQ the next park keeps.
    """
    serial = _activator(agents.ask_model, "chain-1", 1)
    parked = _activator(agents.ask_model, "chain-256", 256)
    serial_cells, parked_cells = recording_cells(), recording_cells()
    parked.on_event(b"other", b"warm up", 500, recording_cells())  # the provider waits
    events = ((1_000, b"first"), (1_001, b"boom"), (1_002, b"third"), (1_003, b"fourth"))
    expected: list[object] = []
    got: list[object] = []
    for time_ms, event in events:
        expected += serial.on_event(KEY, event, time_ms, serial_cells)
        got += parked.on_event(KEY, event, time_ms, parked_cells)
    assert got == []  # the first parked, the rest wait behind it
    seq_ops = parked_cells.seq.ops  # type: ignore[attr-defined]
    before = len(seq_ops)

    polls = 0
    while _parked(parked_cells) is not None:
        got += parked.on_hitl(KEY, parked_cells)
        polls += 1

    assert polls == len(events)
    assert seq_ops[before:] == ["write"]
    assert _plain(got) == _plain(expected)
    assert _state(parked_cells) == _state(serial_cells)


def test_a_ttl_firing_on_a_parked_key_reads_neither_llm_cache_nor_pending() -> None:
    """The expiry waits for the poll, so the cells only a wipe needs are not fetched."""
    parked = _activator(agents.ask_model, "ttl-reads-256", 256)
    parked.instance.config = _with_ttl(parked.instance.config)
    cells = recording_cells()
    parked.on_event(KEY, b"first", 1_000, cells)  # in place: the provider waits
    armed = _ttl_ms(cells)
    assert armed is not None
    assert parked.on_event(KEY, b"second", 5_000, cells) == []
    assert _parked(cells) is not None
    reads = cells.cache.reads, cells.pending.reads  # type: ignore[attr-defined]

    assert parked.on_ttl(KEY, armed, cells) == []

    assert (cells.cache.reads, cells.pending.reads) == reads  # type: ignore[attr-defined]
    assert _parked(cells).parked.expire_at_ms == armed  # type: ignore[union-attr]


async def _ask_twice(ctx: ActivationContext) -> Complete:
    """Two model calls per event: a park on the second keeps the first answer in LLM_CACHE."""
    first = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    second = await ctx.call_model(
        LlmRequest(model_id="fake-1", messages=["again", first.response.decode()])
    )
    ctx.memory.append("answers", second.response)
    return Complete(second.response)


def test_the_poll_of_a_park_that_kept_no_answer_does_not_read_llm_cache() -> None:
    """The park says in CONTINUATION that LLM_CACHE is empty, so no poll fetches it."""
    serial = _activator(agents.ask_model, "known-1", 1)
    parked = _activator(agents.ask_model, "known-256", 256)
    serial_cells, cells = recording_cells(), recording_cells()
    parked.on_event(b"other", b"warm up", 500, recording_cells())  # the provider waits
    expected: list[object] = []
    got: list[object] = []
    for time_ms, event in ((1_000, b"first"), (1_001, b"second"), (1_002, b"third")):
        expected += serial.on_event(KEY, event, time_ms, serial_cells)
        got += parked.on_event(KEY, event, time_ms, cells)
    first_park = _parked(cells)
    assert first_park is not None
    assert first_park.parked.cache_clear

    got += _settle(parked, cells)

    assert cells.cache.reads == 0  # type: ignore[attr-defined]
    assert _plain(got) == _plain(expected)
    assert _state(cells) == _state(serial_cells)


async def _echo(ctx: ActivationContext) -> Complete:
    """One model call; the output names the event, so the order of outputs shows."""
    answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    ctx.memory.append("events", ctx.event)
    return Complete(ctx.event + b": " + answer.response)


def test_a_park_written_before_cache_clear_existed_reads_llm_cache_and_completes() -> None:
    """An updated job keeps its parked calls: a park without the flag is read as before,
    and the events buffered behind it run after it, in order."""
    serial = _activator(_echo, "old-park-1", 1)
    parked = _activator(_echo, "old-park-256", 256)
    serial_cells, cells = recording_cells(), recording_cells()
    parked.on_event(b"other", b"warm up", 500, recording_cells())
    expected: list[object] = []
    for time_ms, event in ((1_000, b"first"), (1_001, b"second"), (1_002, b"third")):
        expected += serial.on_event(KEY, event, time_ms, serial_cells)
        assert parked.on_event(KEY, event, time_ms, cells) == []
    old = _parked(cells)
    assert old is not None
    assert len(old.buffered) == 2
    old.parked.ClearField("cache_clear")  # as a version before the flag wrote it
    cells.continuation.value = old.SerializeToString(deterministic=True)  # type: ignore[attr-defined]

    got = parked.on_hitl(KEY, cells)
    assert cells.cache.reads == 1  # type: ignore[attr-defined]
    got += _settle(parked, cells)

    assert [output for _, output in got] == [b"first: fine", b"second: fine", b"third: fine"]  # type: ignore[misc]
    assert _plain(got) == _plain(expected)
    assert _state(cells) == _state(serial_cells)


def test_a_park_that_kept_an_answer_replays_it_from_llm_cache() -> None:
    """The flag is unset when LLM_CACHE holds answers: the re-run reads and replays them."""
    serial = _activator(_ask_twice, "kept-1", 1)
    parked = _activator(_ask_twice, "kept-256", 256)
    serial_cells, cells = recording_cells(), recording_cells()
    parked.on_event(b"other", b"warm up", 500, recording_cells())
    expected = serial.on_event(KEY, b"first", 1_000, serial_cells)
    assert parked.on_event(KEY, b"first", 1_000, cells) == []
    parked.on_hitl(KEY, cells)  # the first call answered: parks on the second
    second_park = _parked(cells)
    assert second_park is not None
    assert not second_park.parked.cache_clear
    assert cells.cache.value  # type: ignore[attr-defined]

    got = _settle(parked, cells)

    assert cells.cache.reads >= 1  # type: ignore[attr-defined]
    assert _plain(got) == _plain(expected)
    assert _state(cells) == _state(serial_cells)


def test_a_stored_first_event_park_runs_with_its_buffered_event_after_it() -> None:
    """The golden park of a first event, as a job updated in place finds it: polled to the end."""
    golden = Path(__file__).parents[1] / "golden" / "v1" / "continuation_parked_fresh.bin"
    stored = Continuation.FromString(golden.read_bytes())
    serial = _activator(agents.ask_model, "golden-park-1", 1)
    parked = _activator(agents.ask_model, "golden-park-256", 256)
    serial_cells, cells = recording_cells(), recording_cells()
    expected = serial.on_event(KEY, stored.event, stored.event_time_ms, serial_cells)
    for held in stored.buffered:
        expected += serial.on_event(KEY, held.event, held.event_time_ms, serial_cells)
    cells.seq.value = encode_seq(0, False)  # type: ignore[attr-defined]  # what the park wrote
    cells.continuation.value = golden.read_bytes()  # type: ignore[attr-defined]

    got = _settle(parked, cells)  # the call is unknown here: the re-run asks again

    assert [output for _, output in got] == [b"fine", b"fine"]  # type: ignore[misc]
    assert _plain(got) == _plain(expected)
    assert _state(cells)["memory"] == _state(serial_cells)["memory"]
    assert Memory(MemoryBlob.FromString(cells.memory.value), now_ms=0).ring("answers") == (  # type: ignore[attr-defined]
        b"fine",
        b"fine",
    )


def test_a_poll_writes_each_timer_once_where_it_leaves_it() -> None:
    """A poll that completes one event and parks the next sets the poll timer without a clear."""
    serial = _activator(agents.ask_model, "timers-1", 1)
    parked = _activator(agents.ask_model, "timers-256", 256)
    serial_cells, cells = recording_cells(), recording_cells()
    parked.on_event(b"other", b"warm up", 500, recording_cells())
    expected: list[object] = []
    for time_ms, event in ((1_000, b"first"), (1_001, b"second"), (1_002, b"third")):
        expected += serial.on_event(KEY, event, time_ms, serial_cells)
        assert parked.on_event(KEY, event, time_ms, cells) == []
    hitl, ttl = cells.hitl_timer.ops, cells.ttl_timer.ops  # type: ignore[attr-defined]
    got: list[object] = []
    writes: list[tuple[list[object], list[object]]] = []
    while _parked(cells) is not None:
        before = len(hitl), len(ttl)
        got += parked.on_hitl(KEY, cells)
        writes.append((hitl[before[0] :], ttl[before[1] :]))

    assert [len(h) for h, _ in writes] == [1, 1, 1]
    assert [h[0] == "clear" for h, _ in writes] == [False, False, True]  # parked again twice
    assert [len(t) for _, t in writes] == [1, 1, 1]  # the TTL each completion re-arms
    assert _plain(got) == _plain(expected)
    assert _state(cells) == _state(serial_cells)


async def _write_read_then_ask(ctx: ActivationContext) -> Complete:
    """Changes memory before its call (a scalar, the ring, a read that stamps) and after it."""
    memory = ctx.memory
    if ctx.event == b"fill":
        for i in range(40):
            memory.set(f"fact/{i:02d}", b"f%02d" % i)
        return Complete(b"filled")
    memory.set(f"fact/{ctx.seq % 40:02d}", ctx.event)  # not the newest: the order moves
    memory.append("history", ctx.event, max_items=3)  # drops the oldest once full
    seen = memory.get("fact/00") or b"-"
    response = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    memory.set("last", response.response)
    return Complete(b"|".join((seen, *memory.ring("history"), response.response)))


def test_a_parked_re_run_reuses_the_memory_its_parked_attempt_changed_and_put_back() -> None:
    """Each park gives the resident memory back as committed: its re-run decodes nothing,
    and the key ends byte for byte where calls in place leave it."""
    from beam_agents.memory.resident import shared_resident

    resident = shared_resident()
    serial = _activator(_write_read_then_ask, "give-back-1", 1)
    parked = _activator(_write_read_then_ask, "give-back-256", 256)
    serial_cells, parked_cells = recording_cells(), recording_cells()
    expected = serial.on_event(KEY, b"fill", 1_000, serial_cells)
    got = parked.on_event(KEY, b"fill", 1_000, parked_cells)
    parked.on_event(b"other", b"warm up", 500, recording_cells())  # the provider waits

    misses, parks = resident.misses, 0
    for time_ms, event in ((2_000, b"a"), (3_000, b"b"), (4_000, b"c"), (5_000, b"d")):
        expected += serial.on_event(KEY, event, time_ms, serial_cells)
        got += parked.on_event(KEY, event, time_ms, parked_cells)
        parks += _parked(parked_cells) is not None
        got += _settle(parked, parked_cells)

    assert parks == 4
    assert resident.misses == misses  # every parked attempt's re-run found the snapshot
    assert _plain(got) == _plain(expected)
    assert _state(parked_cells) == _state(serial_cells)
