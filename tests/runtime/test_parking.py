"""Parking: model calls that wait overlap across keys, and nothing committed changes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from beam_agents import AgentConfig, FlushToLongterm, RunAgent, intent_id
from beam_agents.memory import SummarizeCompactor
from beam_agents.memory.stores.memory import InMemoryMemoryStore
from beam_agents.model import FakeLLM, Rule
from beam_agents.testing.chaos import fail_park_once, lose_call_at_poll
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


def _provider(name: str, latency_s: float = 0.05) -> FakeLLM:
    # Answers depend on the request only (no call counter): calls overlap in
    # any order once parked, and the answers must not care.
    provider = FakeLLM(
        name=name,
        latency_s=latency_s,
        default=b"ok",
        rules=(Rule(pattern="prior", response=b"S"), Rule(pattern="ask", response=b"sure")),
        fail_pattern="boom",
    )
    provider.reset()
    return provider


def _spread(keys: int, per_key: int, at_ms: int = 1_000) -> Script:
    events = [(f"k{i % keys}", f"e{i}".encode(), at_ms + i) for i in range(keys * per_key)]
    return Script().events(*events).watermark(at_ms + keys * per_key).processing_time(1_000)


def test_a_call_that_answers_without_waiting_never_parks() -> None:
    provider = FakeLLM(name="park-instant", default=b"at once")
    provider.reset()
    run = run_script(
        agents.ask_model,
        AgentConfig(provider_factory=provider),
        _spread(4, 3),
        clock_ms=agents.clock_just_ahead,
    )

    assert len(run.outputs) == 12
    assert run.counter(RUNTIME, "parks") == 0
    assert run.counter(RUNTIME, "model_calls") == 12


def test_max_inflight_calls_of_one_runs_every_call_in_place() -> None:
    config = AgentConfig(provider_factory=_provider("park-serial", 0.01), max_inflight_calls=1)
    run = run_script(agents.ask_model, config, _spread(3, 2), clock_ms=agents.clock_just_ahead)

    assert len(run.outputs) == 6
    assert run.counter(RUNTIME, "parks") == 0


def test_waiting_calls_of_different_keys_overlap_on_the_streaming_direct_runner() -> None:
    """Overlap as the provider saw it: a call started before an earlier one had ended."""
    provider = _provider("park-overlap", latency_s=0.2)
    config = AgentConfig(provider_factory=provider)
    run = run_script(agents.ask_model, config, _spread(40, 1), clock_ms=agents.clock_just_ahead)

    assert sorted(run.outputs) == sorted((f"k{i}".encode(), b"ok") for i in range(40))
    # The first call runs in place (it shows the provider waits); the rest park.
    assert run.counter(RUNTIME, "parks") == 39
    assert provider.call_count() == 40
    assert provider.call_steps()[:2] == [("start", 1), ("end", 1)]
    assert provider.peak_in_flight() > 1


_OUT: list[tuple[bytes, bytes]] = []


def _collect(element: tuple[bytes, bytes]) -> None:
    _OUT.append(element)


def _fnapi(
    max_inflight_calls: int, name: str, keys: int, per_key: int
) -> tuple[list[tuple[bytes, bytes]], FakeLLM]:
    _OUT.clear()
    provider = _provider(name, 0.1)
    config = AgentConfig(provider_factory=provider, max_inflight_calls=max_inflight_calls)
    events = [(f"k{i % keys}".encode(), f"e{i}".encode()) for i in range(keys * per_key)]
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = pipeline | beam.Create(events) | RunAgent(agents.ask_and_fingerprint, config)
        result.outputs | beam.Map(_collect)
    return list(_OUT), provider


def test_parked_activations_overlap_and_match_the_serial_run_on_the_fnapi_runner() -> None:
    """Overlap as the provider saw it: one call at a time in place, several at once parked."""
    serial, serial_provider = _fnapi(1, "park-fn-serial", keys=6, per_key=3)
    parked, parked_provider = _fnapi(256, "park-fn-parked", keys=6, per_key=3)
    overlapped, many_provider = _fnapi(256, "park-fn-many", keys=60, per_key=2)

    assert sorted(parked) == sorted(serial)
    assert serial_provider.call_count() == parked_provider.call_count() == 18
    assert serial_provider.peak_in_flight() == 1
    assert parked_provider.peak_in_flight() > 1
    assert len(overlapped) == 120
    assert many_provider.peak_in_flight() > 1


def test_past_the_in_flight_limit_a_call_runs_in_place_and_nothing_is_lost() -> None:
    provider = _provider("park-limit", latency_s=0.3)
    config = AgentConfig(provider_factory=provider, max_inflight_calls=2)
    run = run_script(agents.ask_model, config, _spread(12, 1), clock_ms=agents.clock_just_ahead)

    assert sorted(run.outputs) == sorted((f"k{i}".encode(), b"ok") for i in range(12))
    # One call in place shows the provider waits; then two park, and while both are in
    # flight the next element's call runs in place (by then both have answered).
    assert 2 <= run.counter(RUNTIME, "parks") <= 8
    assert provider.call_count() == 12


def test_an_agents_broad_except_cannot_swallow_a_park() -> None:
    config = AgentConfig(provider_factory=_provider("park-except"))
    run = run_script(
        agents.ask_inside_a_broad_except, config, _spread(5, 2), clock_ms=agents.clock_just_ahead
    )

    assert sorted(out for _, out in run.outputs) == [b"ok"] * 10
    assert run.counter(RUNTIME, "parks") > 0


def test_concurrent_calls_in_a_task_group_park_and_complete() -> None:
    config = AgentConfig(provider_factory=_provider("park-group"))
    run = run_script(
        agents.ask_twice_at_once, config, _spread(5, 2), clock_ms=agents.clock_just_ahead
    )

    assert sorted(out for _, out in run.outputs) == [b"ok+ok"] * 10
    assert run.errors == []
    assert run.counter(RUNTIME, "parks") > 0


def test_a_park_is_a_lifecycle_record_and_a_metric() -> None:
    config = AgentConfig(provider_factory=_provider("park-lifecycle"))
    run = run_script(
        agents.ask_model, config, _spread(4, 2), clock_ms=agents.clock_just_ahead, lifecycle=True
    )

    parked = [e for e in run.lifecycle if e.kind == "parked"]
    assert len(parked) == run.counter(RUNTIME, "parks") > 0
    assert all(len(e.detail) == 64 for e in parked)  # the call's replay-cache key
    # Nothing staged is committed at a park: each parked seq completes once, later.
    completed = [(e.entity_key, e.seq) for e in run.lifecycle if e.kind == "completed"]
    assert len(completed) == len(set(completed)) == 8
    assert {(e.entity_key, e.seq) for e in parked} <= set(completed)


def test_a_task_group_that_fails_beside_a_call_is_the_dead_letter_it_is_in_place() -> None:
    events = [("k1", b"warm up", 1_000), ("k2", b"bad", 1_001), ("k3", b"fine", 1_002)]
    script = Script().events(*events).watermark(2_000).processing_time(1_000)

    def run(inflight: int) -> StreamRun:
        provider = _provider(f"park-group-fail-{inflight}")
        config = AgentConfig(provider_factory=provider, max_inflight_calls=inflight)
        return run_script(
            agents.ask_while_a_sibling_fails, config, script, clock_ms=agents.clock_just_ahead
        )

    serial, parked = run(1), run(256)

    assert sorted(parked.outputs) == [(b"k1", b"ok"), (b"k3", b"ok")]
    assert parked.reasons() == ["activation_error"]
    assert parked.fingerprint() == serial.fingerprint()
    assert parked.counter(RUNTIME, "parks") > 0


def test_answers_whose_resumed_runs_call_the_model_park_and_match_the_serial_run() -> None:
    """The resumed run asks the model about the answer: that call parks too; an answer
    whose call fails leaves the suspension live for the next answer."""
    script = Script().events(("w", b"warm up", 500), ("a", b"qa", 1_000), ("b", b"qb", 1_001))
    script.watermark(2_000).processing_time(1)
    script.answers(
        ("a", intent_id(b"a", 1, 0), b"yes", 3_000),
        ("b", intent_id(b"b", 1, 0), b"boom", 3_001),  # its call fails: model_error
        ("b", intent_id(b"b", 1, 0), b"fine", 3_002),
    )
    script.events(("a", b"after", 3_003), ("b", b"after", 3_004))
    script.watermark(5_000).processing_time(1_000)

    def run(inflight: int) -> StreamRun:
        config = AgentConfig(
            provider_factory=_provider(f"park-resume-{inflight}"), max_inflight_calls=inflight
        )
        return run_script(
            agents.ask_again_on_answer, config, script, clock_ms=agents.clock_just_ahead
        )

    serial, parked = run(1), run(256)

    assert parked.fingerprint() == serial.fingerprint()
    # The "after" events suspend in turn; the end of the stream wipes them with the key.
    assert serial.reasons()[0] == "model_error"
    assert sorted(k for k, _ in serial.outputs) == [b"a", b"b"]
    assert parked.counter(RUNTIME, "parks") >= 4


def test_a_re_run_that_asks_something_new_runs_in_place_instead_of_parking_forever() -> None:
    """An impure prompt asks a new question on every re-run, so no answer would ever
    replay; the poll notices and runs that activation in place, as without parking."""
    provider = FakeLLM(name="park-impure", latency_s=0.02, default=b"S")
    provider.reset()
    summarizer = SummarizeCompactor(
        build_request=agents.impure_summary_request,
        extract_summary=agents.summary_of,
        source_keys=("log",),
        keep_recent=2,
        trigger_bytes=1,
    )
    config = AgentConfig(provider_factory=provider, summarizer=summarizer)
    events = [("k", f"e{i}".encode(), 1_000 + i) for i in range(6)]
    script = Script().events(*events).watermark(2_000).processing_time(1_000)

    run = run_script(agents.log_events, config, script, clock_ms=agents.clock_just_ahead)

    assert [out.split(b":")[0] for _, out in run.outputs] == [b"1", b"2", b"3", b"4", b"5", b"6"]
    assert run.errors == []
    assert run.counter(RUNTIME, "parks") > 0


# -- the invariant: byte-identical results with 1 and 256 calls in flight ------------


def _mixed_script() -> Script:
    """Mixed keys, approvals and a timeout, full buffers, model errors, TTL expiries."""
    script = Script().events(
        ("a", b"a1", 1_000),
        ("b", b"b1", 1_001),
        ("c", b"c1", 1_002),
        ("c", b"c2", 1_003),
        ("c", b"c3", 1_004),
        ("c", b"c4", 1_005),  # the buffer holds two: c waits for its parked activation
        ("d", b"ask-d", 1_006),  # suspends; never answered
        ("e", b"e1 boom", 1_007),  # a model error
        ("a", b"ask-a", 1_008),  # suspends; answered below
        ("b", b"b2", 1_009),
        ("e", b"e2", 1_010),
    )
    script.watermark(5_000).processing_time(1)
    script.events(
        ("a", b"a3", 6_000),
        ("d", b"d2", 6_001),
        ("d", b"d3", 6_002),
        ("d", b"d4", 6_003),  # past the suspension's buffer: dead-lettered
        ("b", b"b3", 6_004),
        ("c", b"c5", 6_005),
    )
    script.answers(("a", intent_id(b"a", 2, 0), b"yes", 7_000)).watermark(8_000)
    script.processing_time(100_000)  # d's approval times out; d2 and d3 drain
    script.events(("b", b"b4", 9_000)).watermark(50_000)  # TTL expiries, flushed
    probes = [(key, b"probe", 60_000) for key in "abcde"]
    return script.events(*probes).watermark(100_000)


Row = tuple[bytes, str, bytes, int, int]


def _rows(namespace: str) -> list[Row]:
    async def scan() -> list[Row]:
        store = InMemoryMemoryStore.shared(namespace)
        return [(k, r.key, r.value, r.seq, r.updated_at_ms) async for k, r in store.scan()]

    return sorted(asyncio.run(scan()))


def _mixed_run(
    max_inflight_calls: int,
) -> tuple[StreamRun, list[tuple[bytes, str, bytes, int, int]]]:
    namespace = f"parking-{max_inflight_calls}-{uuid.uuid4().hex}"
    config = AgentConfig(
        provider_factory=_provider(f"park-mixed-{max_inflight_calls}"),
        summarizer=SummarizeCompactor(
            build_request=agents.summary_request,
            extract_summary=agents.summary_of,
            source_keys=("log",),
            keep_recent=2,
            trigger_bytes=1,
        ),
        longterm_memory=f"memory://{namespace}",
        on_expire=FlushToLongterm(),
        ttl_ms=20_000,
        suspended_event_buffer=2,
        max_inflight_calls=max_inflight_calls,
    )
    run = run_script(
        agents.triage_and_save,
        config,
        _mixed_script(),
        clock_ms=agents.clock_just_ahead,
    )
    return run, _rows(namespace)


def _seqs_by_key(run: StreamRun) -> Iterator[list[int]]:
    for key in {k for k, _ in run.outputs}:
        yield [int(out.split(b":")[0]) for k, out in run.outputs if k == key]


def test_results_state_and_longterm_rows_are_identical_with_1_and_256_calls_in_flight() -> None:
    """Each output carries its seq and a digest of the committed memory its activation
    started from, and every key ends with a probe, so any difference in committed state
    (a lost, doubled or reordered commit, a missed wipe) changes the fingerprint."""
    serial, serial_rows = _mixed_run(1)
    parked, parked_rows = _mixed_run(256)

    assert parked.fingerprint() == serial.fingerprint()
    assert parked_rows == serial_rows
    assert serial.counter(RUNTIME, "parks") == 0
    assert parked.counter(RUNTIME, "parks") > 5
    # What the script meant to exercise did happen.
    reasons = set(serial.reasons())
    assert {"model_error", "suspension_timeout", "event_while_suspended"} <= reasons
    assert serial.counter(RUNTIME, "summarizations") > 0
    assert serial.counter(RUNTIME, "ttl_wipes") > 0
    assert any(row[1] == "working_memory" for row in serial_rows)
    for seqs in _seqs_by_key(parked):
        assert seqs == sorted(seqs)


# -- chaos -----------------------------------------------------------------------------


def _chaos_run(name: str) -> tuple[StreamRun, FakeLLM]:
    provider = _provider(name)
    config = AgentConfig(provider_factory=provider)
    script = _spread(3, 3)
    run = run_script(agents.ask_and_fingerprint, config, script, clock_ms=agents.clock_just_ahead)
    return run, provider


def test_a_bundle_that_fails_after_its_call_started_converges_without_asking_again() -> None:
    clean, clean_provider = _chaos_run("park-chaos-clean")
    with fail_park_once(b"k1", 1) as fault:
        faulty, faulty_provider = _chaos_run("park-chaos-park")

    assert fault.fired == [(b"k1", 1)]
    assert faulty.fingerprint() == clean.fingerprint()
    assert faulty_provider.call_count() == clean_provider.call_count() == 9


def test_a_poll_that_finds_no_known_call_issues_it_again_and_converges() -> None:
    clean, clean_provider = _chaos_run("park-lost-clean")
    with lose_call_at_poll(b"k1", 1) as fault:
        faulty, faulty_provider = _chaos_run("park-lost-poll")

    assert fault.fired == [(b"k1", 1)]
    assert faulty.fingerprint() == clean.fingerprint()
    # At least once: the lost call was asked again.
    assert faulty_provider.call_count() == clean_provider.call_count() + 1
