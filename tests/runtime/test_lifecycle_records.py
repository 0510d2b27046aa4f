"""Lifecycle records: what `.lifecycle` says, and that it agrees with the rest."""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest
from apache_beam.coders.typecoders import registry as coder_registry

from beam_agents import AgentConfig, FlushToLongterm, LifecycleEvent, intent_id
from beam_agents.memory import SummarizeCompactor
from beam_agents.model import FakeLLM
from beam_agents.runtime.lifecycle import KINDS, LifecycleEventCoder
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


def _events(*events: tuple[str, bytes, int]) -> Script:
    script = Script()
    for event in events:
        script.events(event).watermark(event[2] + 1)
    return script


def _by_kind(run: StreamRun, kind: str) -> list[LifecycleEvent]:
    return [event for event in run.lifecycle if event.kind == kind]


def _provider(name: str, default: bytes = b"draft-{n}") -> FakeLLM:
    provider = FakeLLM(name=name, default=default)
    provider.reset()
    return provider


def test_each_completed_activation_is_activated_then_completed_at_its_event_time() -> None:
    run = run_script(
        agents.remember,
        AgentConfig(),
        _events(("k", b"1", 1_000), ("k", b"2", 2_000)),
        lifecycle=True,
    )

    assert run.lifecycle == [
        LifecycleEvent(b"k", "activated", 1_000, 1, 3, ""),
        LifecycleEvent(b"k", "completed", 1_000, 1, 3, ""),
        LifecycleEvent(b"k", "activated", 2_000, 2, 5, ""),
        LifecycleEvent(b"k", "completed", 2_000, 2, 5, ""),
        # The stream ends with the watermark at infinity: the idle key's TTL fires.
        LifecycleEvent(b"k", "ttl_expired", 2_000 + 3_600_000, 2, 0, ""),
    ]


def test_a_failed_activation_emits_only_failed_with_its_reason() -> None:
    run = run_script(
        agents.explode_on_boom,
        AgentConfig(),
        _events(("k", b"one", 1_000), ("k", b"boom", 2_000)),
        lifecycle=True,
    )

    assert run.kinds() == ["activated", "completed", "failed", "ttl_expired"]
    failed = run.lifecycle[2]
    assert (failed.seq, failed.event_time_ms, failed.detail) == (2, 2_000, "activation_error")
    # Nothing was committed: memory is still what seq 1 left.
    assert failed.memory_bytes == run.lifecycle[1].memory_bytes


def test_suspend_and_resume_are_recorded_with_the_approval_intent() -> None:
    approval = intent_id(b"k", 1, 1)
    script = (
        Script()
        .events(("k", b"disk full", 1_000))
        .watermark(2_000)
        .answers(("k", approval, b"yes", 3_000))
    )

    run = run_script(
        agents.approve_then_act,
        AgentConfig(provider_factory=_provider("lc-resume")),
        script,
        clock_ms=agents.clock_at_zero,
        lifecycle=True,
    )

    assert [(e.kind, e.seq, e.detail) for e in run.lifecycle] == [
        ("activated", 1, ""),
        ("suspended", 1, approval),
        ("resumed", 1, approval),
        ("completed", 1, ""),
        ("ttl_expired", 1, ""),
    ]
    # A suspension commits no memory; the resumed completion does.
    assert [e.memory_bytes for e in run.lifecycle] == [0, 0, 11, 11, 0]


def test_a_suspension_timeout_is_recorded_as_failed() -> None:
    script = Script().events(("k", b"disk full", 1_000)).processing_time(61_000).watermark(5_000)

    run = run_script(
        agents.approve_then_act,
        AgentConfig(provider_factory=_provider("lc-timeout")),
        script,
        clock_ms=agents.clock_at_zero,
        lifecycle=True,
    )

    assert run.kinds() == ["activated", "suspended", "failed", "ttl_expired"]
    assert (run.lifecycle[2].detail, run.lifecycle[2].seq) == ("suspension_timeout", 1)


def test_tier_one_compaction_and_the_soft_cap_are_recorded_with_the_evicted_keys() -> None:
    """300 KB per event: the third write crosses the soft cap; LRU chunks go to 512 KiB."""
    run = run_script(
        agents.fill_past_soft_cap,
        AgentConfig(),
        _events(("k", b"a", 1_000), ("k", b"b", 2_000), ("k", b"c", 3_000)),
        lifecycle=True,
    )

    third = [e for e in run.lifecycle if e.seq == 3 and e.kind != "ttl_expired"]
    assert [e.kind for e in third] == ["activated", "compacted", "soft_cap", "completed"]
    assert json.loads(third[1].detail) == ["chunk-1", "chunk-2"]
    assert {e.memory_bytes for e in third} == {300_001}
    assert run.counter("beam_agents.memory", "soft_cap_warnings") == 1


def test_tier_two_summaries_are_recorded_with_how_many_rings_were_folded() -> None:
    summarizer = SummarizeCompactor(
        build_request=agents.summary_request,
        extract_summary=agents.summary_of,
        source_keys=("log",),
        keep_recent=2,
        trigger_bytes=60,
    )
    config = AgentConfig(provider_factory=_provider("lc-sum", b"S{n}"), summarizer=summarizer)
    events = [("k", b"event-%02d" % i, 1_000 * (i + 1)) for i in range(7)]

    run = run_script(agents.log_events, config, _events(*events), lifecycle=True)

    (summarized,) = _by_kind(run, "summarized")
    assert (summarized.seq, summarized.detail) == (7, "1")
    assert run.counter(RUNTIME, "summarizations") == 1


def test_long_term_flushes_and_ttl_expiry_are_recorded_with_row_counts() -> None:
    uri = f"memory://lifecycle-{uuid.uuid4().hex}"
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=10_000)
    script = _events(("k", b"1", 1_000), ("k", b"2", 2_000)).watermark(30_000)

    run = run_script(agents.save_case, config, script, lifecycle=True)

    assert [(e.seq, e.detail) for e in _by_kind(run, "longterm_flushed")] == [(1, "1"), (2, "1")]
    tail = run.lifecycle[-2:]
    assert [(e.kind, e.event_time_ms, e.seq, e.detail) for e in tail] == [
        ("expire_flushed", 12_000, 2, "1"),
        ("ttl_expired", 12_000, 2, ""),
    ]
    # The flush carries what it demoted; after the wipe the key holds nothing.
    assert (tail[0].memory_bytes, tail[1].memory_bytes) == (run.lifecycle[-3].memory_bytes, 0)


def test_lifecycle_counts_agree_with_the_pipeline_metrics() -> None:
    uri = f"memory://lifecycle-{uuid.uuid4().hex}"
    config = AgentConfig(longterm_memory=uri, ttl_ms=10_000)
    script = _events(
        ("a", b"1", 1_000), ("b", b"1", 1_500), ("a", b"2", 2_000), ("b", b"2", 2_500)
    ).watermark(40_000)
    script.events(("a", b"3", 41_000), ("c", 7, 41_000)).watermark(41_001)  # type: ignore[arg-type]

    run = run_script(agents.save_case, config, script, lifecycle=True)

    kinds = Counter(run.kinds())
    assert kinds["activated"] == run.counter(RUNTIME, "activations") == 5
    assert kinds["completed"] == 5
    assert kinds["failed"] == run.counter(RUNTIME, "errors") == 1
    # a and b idle out at 12 s; a again once the watermark reaches the end.
    assert kinds["ttl_expired"] == run.counter(RUNTIME, "ttl_wipes") == 3
    flushed_rows = sum(int(e.detail) for e in _by_kind(run, "longterm_flushed"))
    assert flushed_rows == run.counter(RUNTIME, "longterm_upserts") == 5
    failures = Counter(e.detail for e in _by_kind(run, "failed"))
    assert failures == Counter({"invalid_event": run.counter(RUNTIME, "errors_invalid_event")})


def test_a_retried_commit_emits_byte_identical_lifecycle_records() -> None:
    events = [("a", b"e1", 1_000), ("b", b"e2", 2_000), ("a", b"e3", 3_000), ("a", b"e4", 4_000)]

    def run(name: str) -> StreamRun:
        config = AgentConfig(provider_factory=_provider(name, b"answer-{n}"))
        return run_script(agents.ask_and_fingerprint, config, _events(*events), lifecycle=True)

    clean = run("lc-clean")
    with fail_commit_once(b"a", 2) as fault:
        faulty = run("lc-faulty")

    assert fault.fired == [(b"a", 2)]
    assert faulty.fingerprint() == clean.fingerprint()
    assert Counter(faulty.kinds()) == {"activated": 4, "completed": 4, "ttl_expired": 2}


def test_with_lifecycle_off_there_is_no_lifecycle_output_and_nothing_else_changes() -> None:
    script = _events(("k", b"one", 1_000), ("k", b"boom", 2_000), ("k", b"two", 3_000))

    off = run_script(agents.explode_on_boom, AgentConfig(), script)
    on = run_script(agents.explode_on_boom, AgentConfig(), script, lifecycle=True)

    assert off.lifecycle == []
    assert on.lifecycle != []
    assert off.fingerprint()[:3] == on.fingerprint()[:3]
    assert off.outputs == on.outputs


def test_the_result_has_no_lifecycle_collection_unless_asked() -> None:
    import apache_beam as beam

    from beam_agents import RunAgent

    with beam.Pipeline() as pipeline:
        events = pipeline | beam.Create([(b"k", b"e")])
        plain = events | "Plain" >> RunAgent(agents.remember, AgentConfig())
        traced = events | "Traced" >> RunAgent(agents.remember, AgentConfig(), lifecycle=True)
        assert plain.lifecycle is None
        assert traced.lifecycle is not None
        assert traced.lifecycle.element_type is LifecycleEvent


def test_lifecycle_must_be_a_bool() -> None:
    from beam_agents import RunAgent

    with pytest.raises(TypeError, match="lifecycle must be True or False"):
        RunAgent(agents.remember, AgentConfig(), lifecycle="yes")  # type: ignore[arg-type]


def test_lifecycle_events_encode_deterministically_and_round_trip() -> None:
    coder = coder_registry.get_coder(LifecycleEvent)
    event = LifecycleEvent(b"svc-1", "compacted", 12_000, 7, 524_288, '["a","b"]')

    assert isinstance(coder, LifecycleEventCoder)
    assert coder.is_deterministic()
    assert coder.decode(coder.encode(event)) == event
    assert coder.encode(event) == coder.encode(LifecycleEvent(*_fields(event)))


def test_an_unknown_kind_is_refused() -> None:
    assert "compacted" in KINDS
    with pytest.raises(ValueError, match="unknown LifecycleEvent kind 'exploded'"):
        LifecycleEvent(b"k", "exploded", 0, 0, 0)


def _fields(event: LifecycleEvent) -> tuple[object, ...]:
    return (
        event.entity_key,
        event.kind,
        event.event_time_ms,
        event.seq,
        event.memory_bytes,
        event.detail,
    )
