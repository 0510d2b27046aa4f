"""Follow-ups: a wake an agent schedules fires once, at its due time, on every runner.

The agent (`tests.runtime.follow_up_agents.follow_up`) outputs one line per
activation naming what it ran for, its clock, its seq and a digest of the
memory it commits, so a wake lost, doubled, run early or out of order
changes what these tests compare.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.window import FixedWindows, TimestampedValue

from beam_agents import AgentConfig, FlushToLongterm, RunAgent, intent_id
from beam_agents.memory.stores.factory import open_store
from beam_agents.model import FakeLLM
from beam_agents.runtime.wakes import MAX_PENDING_WAKES, MAX_WAKE_PAYLOAD_BYTES
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime.collect import Collect, take_run
from tests.runtime.follow_up_agents import command, follow_up

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


def _wake(name: str, *, after_ms: int | None = None, **more: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, **more}
    if after_ms is not None:
        spec["after_ms"] = after_ms
    return spec


def _woke(outputs: Sequence[tuple[bytes, bytes]]) -> list[bytes]:
    return [
        line.split(b" model=")[0].rsplit(b" ", 1)[0]
        for _, line in outputs
        if line.startswith(b"woke")
    ]


def _wake_kinds(run: StreamRun) -> list[tuple[str, int, str]]:
    return [
        (e.kind, e.event_time_ms, e.detail) for e in run.lifecycle if e.kind.startswith("wake_")
    ]


# -- the streaming DirectRunner, TestStream --------------------------------------------------


def test_a_scheduled_wake_fires_once_at_its_due_event_time() -> None:
    script = (
        Script()
        .events(("k", command(schedule=[_wake("recheck", after_ms=5_000, payload="p1")]), 1_000))
        .watermark(5_999)
        .events(("k", command(), 5_500))
        .watermark(6_000)
        .events(("k", command(), 7_000))
        .watermark(60_000)
    )

    run = run_script(follow_up, AgentConfig(), script, lifecycle=True)

    assert run.errors == []
    assert [line.split(b" ")[0] for _, line in run.outputs] == [
        b"event",
        b"event",
        b"woke",
        b"event",
    ]
    assert _woke(run.outputs) == [b"woke recheck payload=p1 due=6000 now=6000 seq=3"]
    assert _wake_kinds(run) == [
        ("wake_scheduled", 1_000, '{"name": "recheck", "due_ms": 6000, "time": "event"}'),
        ("wake_fired", 6_000, '{"name": "recheck", "due_ms": 6000, "time": "event"}'),
    ]
    assert run.counter(RUNTIME, "wakes_scheduled") == 1
    assert run.counter(RUNTIME, "wakes_fired") == 1


def test_scheduling_a_name_again_replaces_the_pending_wake() -> None:
    script = (
        Script()
        .events(("k", command(schedule=[_wake("recheck", after_ms=5_000, payload="old")]), 1_000))
        .watermark(2_000)
        .events(("k", command(schedule=[_wake("recheck", after_ms=10_000, payload="new")]), 3_000))
        .watermark(60_000)
    )

    run = run_script(follow_up, AgentConfig(), script, lifecycle=True)

    assert _woke(run.outputs) == [b"woke recheck payload=new due=13000 now=13000 seq=3"]
    assert [kind for kind, _, _ in _wake_kinds(run)] == [
        "wake_scheduled",
        "wake_scheduled",
        "wake_fired",
    ]


def test_a_cancelled_wake_never_runs_and_its_cancel_is_recorded() -> None:
    script = (
        Script()
        .events(
            ("k", command(schedule=[_wake("a", after_ms=5_000), _wake("b", after_ms=6_000)]), 1_000)
        )
        .watermark(2_000)
        .events(("k", command(cancel=["a", "never-scheduled"]), 3_000))
        .watermark(60_000)
    )

    run = run_script(follow_up, AgentConfig(), script, lifecycle=True)

    assert _woke(run.outputs) == [b"woke b payload= due=7000 now=7000 seq=3"]
    assert ("wake_cancelled", 3_000, '{"name": "a"}') in _wake_kinds(run)
    assert run.counter(RUNTIME, "wakes_cancelled") == 1


def test_wakes_due_together_run_in_due_order_then_name() -> None:
    schedule = [_wake("c", after_ms=2_000), _wake("b", after_ms=1_000), _wake("a", after_ms=2_000)]
    script = Script().events(("k", command(schedule=schedule), 1_000)).watermark(60_000)

    run = run_script(follow_up, AgentConfig(), script)

    assert _woke(run.outputs) == [
        b"woke b payload= due=2000 now=2000 seq=2",
        b"woke a payload= due=3000 now=3000 seq=3",
        b"woke c payload= due=3000 now=3000 seq=4",
    ]


def test_a_wake_can_schedule_the_next_one_and_a_chain_ends_when_the_agent_stops() -> None:
    again = command(schedule=[_wake("second", after_ms=1_000)])
    first = _wake("first", after_ms=1_000, payload=again.decode())
    script = Script().events(("k", command(schedule=[first]), 1_000)).watermark(60_000)

    run = run_script(follow_up, AgentConfig(), script)

    assert [line.split(b" payload=")[0] for line in _woke(run.outputs)] == [
        b"woke first",
        b"woke second",
    ]
    assert _woke(run.outputs)[1].endswith(b"due=3000 now=3000 seq=3")


def _suspend_then(wake_commands: dict[str, Any]) -> Script:
    """A wake due at 3 s while the key waits on an approval asked at 1.5 s, answered at 6 s."""
    return (
        Script()
        .events(("k", command(schedule=[_wake("recheck", after_ms=2_000, payload="due")]), 1_000))
        .watermark(1_200)
        .events(("k", command(suspend=True, **wake_commands), 1_500))
        .watermark(5_000)
        .events(("k", command(), 5_500))
        .watermark(5_600)
        .answers(("k", intent_id(b"k", 2, 0), b"yes", 6_000))
        .watermark(60_000)
    )


def test_a_wake_due_during_a_suspension_is_buffered_and_runs_after_the_answer() -> None:
    run = run_script(follow_up, AgentConfig(), _suspend_then({}), lifecycle=True)

    assert run.errors == []
    heads = [line.split(b" seq=")[0] for _, line in run.outputs]
    assert heads == [
        b'event {"schedule": [{"after_ms": 2000, "name": "recheck", "payload": "due"}]}',
        b'event {"suspend": true}',  # resumed by the answer at 6 s
        b"woke recheck payload=due due=3000 now=3000",  # waited behind it, in order
        b"event {}",
    ]
    assert run.kinds().count("buffered") == 2  # the wake, then the event
    assert run.counter(RUNTIME, "wakes_buffered") == 1


def test_a_cancel_wins_over_a_wake_that_waits_in_a_buffer() -> None:
    run = run_script(
        follow_up, AgentConfig(), _suspend_then({"cancel": ["recheck"]}), lifecycle=True
    )

    assert _woke(run.outputs) == []
    assert [kind for kind, _, _ in _wake_kinds(run)] == ["wake_scheduled", "wake_cancelled"]
    assert run.counter(RUNTIME, "wakes_fired") == 0


def test_a_pending_wake_holds_the_ttl_off_and_on_expire_sees_what_it_left() -> None:
    uri = f"memory://wakes-{uuid.uuid4().hex}"
    config = AgentConfig(ttl_ms=10_000, longterm_memory=uri, on_expire=FlushToLongterm())
    script = (
        Script()
        .events(("k", command(schedule=[_wake("late", after_ms=60_000)]), 1_000))
        .watermark(200_000)
    )

    run = run_script(follow_up, config, script, lifecycle=True)

    assert _woke(run.outputs) == [b"woke late payload= due=61000 now=61000 seq=2"]
    expiry = [e for e in run.lifecycle if e.kind == "ttl_expired"]
    assert [(e.event_time_ms, e.seq) for e in expiry] == [(71_000, 2)]
    flushed = _rows(uri)
    blob = flushed[b"k"]["working_memory"]
    assert b"late" in blob  # the wake's activation wrote `woke`, and the flush kept it


def _rows(uri: str) -> dict[bytes, dict[str, bytes]]:
    async def scan() -> dict[bytes, dict[str, bytes]]:
        store = open_store(uri)
        found: dict[bytes, dict[str, bytes]] = {}
        async for entity_key, record in store.scan():
            found.setdefault(entity_key, {})[record.key] = record.value
        await store.close()
        return found

    return asyncio.run(scan())


# -- byte-identical results ------------------------------------------------------------------


def _busy_script() -> Script:
    """Three keys, each scheduling wakes that ask the model, one replaced and one cancelled."""
    script = Script()
    for i, key in enumerate(["a", "b", "c"]):
        t = 1_000 + i
        schedule = [
            _wake("ask-1", after_ms=2_000, payload="ask one"),
            _wake("ask-2", after_ms=4_000, payload="ask two"),
            _wake("gone", after_ms=3_000),
        ]
        script.events((key, command(schedule=schedule), t))
    script.watermark(1_500)
    script.events(*[(key, command(cancel=["gone"]), 1_600) for key in "abc"])
    script.watermark(3_500).processing_time(1_000)
    script.events(*[(key, command(), 3_600) for key in "abc"])
    return script.watermark(120_000).processing_time(1_000)


def _busy_run(inflight: int, uri: str) -> StreamRun:
    provider = FakeLLM(name=f"wakes-{uuid.uuid4().hex}", default=b"answer", latency_s=0.01)
    config = AgentConfig(
        provider_factory=provider, max_inflight_calls=inflight, longterm_memory=uri
    )
    return run_script(follow_up, config, _busy_script(), lifecycle=True)


@pytest.mark.parametrize("fault", [None, (b"b", 3), (b"a", 5)])
def test_wakes_give_byte_identical_results_with_1_and_256_calls_in_flight_and_failed_bundles(
    fault: tuple[bytes, int] | None,
) -> None:
    """(b, 3) is a wake's commit (a's and b's seq 3 is ask-1), (a, 5) the last wake's."""
    clean_uri, serial_uri, parked_uri = (f"memory://wakes-{uuid.uuid4().hex}" for _ in range(3))
    clean = _busy_run(1, clean_uri)
    with _maybe_fail(fault) as fired:
        serial = _busy_run(1, serial_uri)
    with _maybe_fail(fault) as fired_parked:
        parked = _busy_run(256, parked_uri)

    assert clean.errors == []
    assert len(_woke(clean.outputs)) == 6
    assert _without_parks(serial) == _without_parks(clean)
    assert _without_parks(parked) == _without_parks(clean)
    assert parked.counter(RUNTIME, "parks") > 0
    assert _rows(serial_uri) == _rows(clean_uri) == _rows(parked_uri)
    if fault is not None:
        assert fired == [fault]
        assert fired_parked == [fault]


def _without_parks(run: StreamRun) -> Any:
    """The run's fingerprint, but for `parked` records: how many calls wait is the runner's."""
    lifecycle = [e for e in run.lifecycle if e.kind != "parked"]
    return StreamRun(**{**vars(run), "lifecycle": lifecycle}).fingerprint()


class _NoFault:
    def __enter__(self) -> list[Any]:
        return []

    def __exit__(self, *exc: object) -> None:
        return None


def _maybe_fail(fault: tuple[bytes, int] | None) -> Any:
    if fault is None:
        return _NoFault()
    return _Fired(fail_commit_once(*fault))


class _Fired:
    """`fail_commit_once`, yielding the list of what it failed (filled as it fires)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __enter__(self) -> list[Any]:
        return self._inner.__enter__().fired  # type: ignore[no-any-return]

    def __exit__(self, *exc: object) -> None:
        self._inner.__exit__(*exc)


def test_a_failed_wake_activation_is_dead_lettered_once_and_does_not_fire_again() -> None:
    script = (
        Script()
        .events(("k", command(schedule=[_wake("bad", after_ms=1_000, payload="{not json")]), 1_000))
        .watermark(60_000)
    )

    run = run_script(follow_up, AgentConfig(), script, lifecycle=True)

    assert run.reasons() == ["activation_error"]
    assert run.errors[0].payload == b"{not json"
    assert [kind for kind, _, _ in _wake_kinds(run)] == ["wake_scheduled", "wake_fired"]


# -- limits ----------------------------------------------------------------------------------


def _refused(schedule: list[dict[str, Any]], at_ms: int = 1_000) -> str:
    script = Script().events(("k", command(schedule=schedule), at_ms)).watermark(60_000)
    run = run_script(follow_up, AgentConfig(), script)
    assert run.outputs == []
    assert run.reasons() == ["activation_error"]
    return run.errors[0].detail


def test_a_key_holds_at_most_the_documented_number_of_pending_wakes() -> None:
    many = [_wake(f"w{i:02d}", after_ms=1_000 + i) for i in range(MAX_PENDING_WAKES + 1)]

    detail = _refused(many)

    assert "WakeLimitError" in detail
    assert f"{MAX_PENDING_WAKES + 1} pending wakes, over the limit of {MAX_PENDING_WAKES}" in detail


def test_the_wake_limit_counts_what_the_key_already_holds() -> None:
    first = [_wake(f"w{i:02d}", after_ms=50_000) for i in range(MAX_PENDING_WAKES)]
    script = (
        Script()
        .events(("k", command(schedule=first), 1_000))
        .watermark(2_000)
        .events(("k", command(schedule=[_wake("one-more", after_ms=1_000)]), 3_000))
        .watermark(4_000)
        .events(("k", command(cancel=["w00"], schedule=[_wake("instead", after_ms=1_000)]), 5_000))
        .watermark(200_000)
    )

    run = run_script(follow_up, AgentConfig(), script)

    assert run.reasons() == ["activation_error"]
    assert "over the limit of 64" in run.errors[0].detail
    assert len(_woke(run.outputs)) == MAX_PENDING_WAKES  # 63 of the first and "instead"


def test_a_payload_over_the_limit_is_refused_naming_it() -> None:
    detail = _refused([_wake("big", after_ms=1_000, payload="x" * (MAX_WAKE_PAYLOAD_BYTES + 1))])

    assert f"payload of {MAX_WAKE_PAYLOAD_BYTES + 1} bytes is over the" in detail


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (_wake("", after_ms=1_000), "wake name must be 1 to 256 UTF-8 bytes, got 0"),
        (_wake("n" * 257, after_ms=1_000), "got 257"),
        (_wake("zero", after_ms=0), "after= must be at least 1 ms"),
        (_wake("past", at_ms=1_000), "is not after this activation's event time 1000"),
        (_wake("both", after_ms=5, at_ms=9_000), "exactly one of after= and at_ms="),
        (_wake("neither"), "exactly one of after= and at_ms="),
    ],
)
def test_a_wake_that_cannot_be_scheduled_is_refused_with_what_was_wrong(
    spec: dict[str, Any], says: str
) -> None:
    assert says in _refused([spec])


def test_a_failed_activation_schedules_nothing() -> None:
    """The schedule is staged, the activation then fails: no wake, no record, no timer."""
    script = (
        Script()
        .events(
            ("k", command(schedule=[_wake("ok", after_ms=1_000), _wake("", after_ms=1)]), 1_000)
        )
        .watermark(60_000)
    )

    run = run_script(follow_up, AgentConfig(), script, lifecycle=True)

    assert _woke(run.outputs) == []
    assert _wake_kinds(run) == []


# -- processing time -------------------------------------------------------------------------


def _clock_at_ten_seconds() -> int:
    return 10_000


def test_a_processing_time_wake_fires_on_the_processing_clock() -> None:
    wake = _wake("clock", after_ms=5_000, processing_time=True)
    script = (
        Script()
        .events(("k", command(schedule=[wake]), 1_000))
        .watermark(1_000)
        .processing_time(14_000)
        .events(("k", command(), 2_000))
        .processing_time(2_000)
        .watermark(3_000)
    )

    run = run_script(follow_up, AgentConfig(), script, clock_ms=_clock_at_ten_seconds)

    heads = [line.split(b" seq=")[0] for _, line in run.outputs]
    assert heads[-1] == b"woke clock payload= due=15000 now=15000"
    assert len(heads) == 3


# -- batch runners and a downstream aggregation ---------------------------------------------


def _batch_events() -> list[TimestampedValue]:
    events = []
    for i in range(4):
        key = f"k{i}".encode()
        schedule = [_wake("one", after_ms=2_000), _wake("two", after_ms=3_000)]
        events.append(TimestampedValue((key, command(schedule=schedule)), 1 + i))  # seconds
        events.append(TimestampedValue((key, command(cancel=["two"])), 2 + i))
    return events


def _batch(make: Callable[[], beam.Pipeline], streaming_windows: bool = False) -> dict[str, Any]:
    run_id = uuid.uuid4().hex
    pipeline = make()
    result = (
        pipeline
        | beam.Create(_batch_events())
        | RunAgent(follow_up, AgentConfig(ttl_ms=60_000), lifecycle=True)
    )
    kinds = result.lifecycle | "Kinds" >> beam.Map(lambda record: (record.kind, 1))
    if streaming_windows:
        kinds = kinds | beam.WindowInto(FixedWindows(3600))
    _ = kinds | beam.CombinePerKey(sum) | "CollectKinds" >> beam.ParDo(Collect(run_id, "kinds"))
    woke = result.outputs | beam.Filter(lambda kv: kv[1].startswith(b"woke"))
    _ = (
        woke
        | "Heads" >> beam.Map(lambda kv: (kv[0], kv[1].split(b" seq=")[0]))
        | beam.GroupByKey()
        | beam.MapTuple(lambda key, lines: (key, sorted(lines)))
        | "CollectWoke" >> beam.ParDo(Collect(run_id, "woke"))
    )
    pipeline.run().wait_until_finish()
    return take_run(run_id)


@pytest.mark.parametrize(
    "make",
    [beam.Pipeline, lambda: beam.Pipeline(runner=FnApiRunner())],
    ids=["beam.Pipeline()", "FnApiRunner()"],
)
def test_wakes_reach_a_downstream_aggregation_on_the_default_and_fnapi_runners(
    make: Callable[[], beam.Pipeline],
) -> None:
    got = _batch(make)

    kinds = dict(got["kinds"])
    assert kinds["wake_scheduled"] == 8
    assert kinds["wake_cancelled"] == 4
    assert kinds["wake_fired"] == 4
    assert kinds["ttl_expired"] == 4
    woke = dict(got["woke"])
    assert woke == {
        f"k{i}".encode(): [b"woke one payload= due=%d now=%d" % ((3_000 + 1_000 * i,) * 2)]
        for i in range(4)
    }


def _fnapi_busy(inflight: int, uri: str) -> dict[str, Any]:
    """`_busy_script`'s keys on the FnApiRunner: every event first, then the wakes in due order."""
    provider = FakeLLM(name=f"wakes-fnapi-{uuid.uuid4().hex}", default=b"answer", latency_s=0.01)
    config = AgentConfig(
        provider_factory=provider,
        max_inflight_calls=inflight,
        longterm_memory=uri,
        ttl_ms=10_000,
        on_expire=FlushToLongterm(),
    )
    events = []
    for i, key in enumerate([b"a", b"b", b"c"]):
        schedule = [
            _wake("ask-1", after_ms=2_000, payload="ask one"),
            _wake("ask-2", after_ms=40_000, payload="ask two"),  # past the TTL of 10 s
            _wake("gone", after_ms=3_000),
        ]
        events.append(TimestampedValue((key, command(schedule=schedule)), 1 + i / 1000))
        events.append(TimestampedValue((key, command(cancel=["gone"])), 2))
    run_id = uuid.uuid4().hex
    pipeline = beam.Pipeline(runner=FnApiRunner())
    result = pipeline | beam.Create(events) | RunAgent(follow_up, config, lifecycle=True)
    _ = result.outputs | "CollectOutputs" >> beam.ParDo(Collect(run_id, "outputs"))
    _ = result.errors | "CollectErrors" >> beam.ParDo(Collect(run_id, "errors"))
    # How long a call keeps its key parked is the runner's: so is whether a wake that
    # came due meanwhile waited in the park's buffer (`buffered`) or ran after it.
    records = result.lifecycle | beam.Filter(lambda r: r.kind not in ("parked", "buffered"))
    _ = records | "CollectRecords" >> beam.ParDo(Collect(run_id, "lifecycle"))
    pipeline.run().wait_until_finish()
    got = take_run(run_id)
    return {
        "outputs": sorted(got.get("outputs", [])),
        "errors": got.get("errors", []),
        "lifecycle": sorted(
            (e.entity_key, e.seq, e.kind, _expiry_blind(e), e.detail) for e in got["lifecycle"]
        ),
    }


def _expiry_blind(record: Any) -> int:
    """A record's time, but -1 for an expiry's.

    In batch the FnApiRunner may deliver a TTL timer that a later callback of
    the same round re-armed (a wake's commit): the expiry then runs after
    every follow-up, as it must, but carries the earlier timer's time, and
    which of the two times depends on how the runner ordered its timers.
    """
    return -1 if record.kind in ("ttl_expired", "expire_flushed") else int(record.event_time_ms)


def test_on_the_fnapi_runner_wakes_fire_once_hold_the_ttl_and_match_with_1_and_256_in_flight() -> (
    None
):
    serial_uri, parked_uri = (f"memory://wakes-fnapi-{uuid.uuid4().hex}" for _ in range(2))

    serial = _fnapi_busy(1, serial_uri)
    parked = _fnapi_busy(256, parked_uri)

    assert serial["errors"] == []
    woke = [line.split(b" model=")[0] for key, line in serial["outputs"] if key == b"a"]
    assert [line for line in woke if line.startswith(b"woke")] == [
        b"woke ask-1 payload=ask one due=3000 now=3000 seq=3",
        b"woke ask-2 payload=ask two due=41000 now=41000 seq=4",
    ]
    kinds = [kind for key, _, kind, _, _ in serial["lifecycle"] if key == b"a"]
    assert kinds.count("ttl_expired") == 1
    # The TTL of 10 s passed long before ask-2 (41 s): the key was not wiped under it,
    # and what on_expire flushed is the memory ask-2's run left.
    flushed = _rows(serial_uri)[b"a"]["working_memory"]
    assert b"ask-2" in flushed
    assert parked == serial
    assert _rows(parked_uri) == _rows(serial_uri)


def test_a_processing_time_wake_the_clock_never_reaches_holds_the_key_and_ends_the_run() -> None:
    """At the end of the script the watermark passes every time but the clock stays: the
    key is not wiped under its follow-up, and the TTL does not fire again and again."""
    wake = _wake("clock", after_ms=3_600_000, processing_time=True)
    script = Script().events(("k", command(schedule=[wake]), 1_000)).watermark(10_000_000)

    run = run_script(
        follow_up,
        AgentConfig(ttl_ms=60_000),
        script,
        clock_ms=_clock_at_ten_seconds,
        lifecycle=True,
    )

    assert _woke(run.outputs) == []
    assert "ttl_expired" not in run.kinds()


def test_a_wake_buffered_behind_a_suspension_the_ttl_wipes_is_dead_lettered_with_it() -> None:
    script = (
        Script()
        .events(("k", command(schedule=[_wake("recheck", after_ms=2_000, payload="due")]), 1_000))
        .watermark(1_200)
        .events(("k", command(suspend=True), 1_500))
        .watermark(2_000_000)  # past the wake (3 s) and the suspended key's TTL; no answer
    )

    run = run_script(follow_up, AgentConfig(ttl_ms=60_000), script, lifecycle=True)

    assert run.reasons() == ["ttl_wiped_suspension", "ttl_wiped_suspension"]
    assert [e.payload for e in run.errors] == [command(suspend=True), b"due"]
    assert [kind for kind, _, _ in _wake_kinds(run)] == ["wake_scheduled", "wake_fired"]
    assert run.kinds()[-1] == "ttl_expired"
    assert _woke(run.outputs) == []
