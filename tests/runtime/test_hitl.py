"""Suspend, answer, resume; suspension timeout and TTL against a live suspension."""

from __future__ import annotations

import pytest

from beam_agents import AgentConfig, intent_id
from beam_agents.model import FakeLLM
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

APPROVAL = intent_id(b"k", 1, 1)  # the draft intent took index 0


def _config(name: str, **overrides: int) -> AgentConfig:
    provider = FakeLLM(name=name, default=b"draft-{n}")
    provider.reset()
    return AgentConfig(provider_factory=provider, **overrides)  # type: ignore[arg-type]


def test_suspend_answer_resume_serves_model_calls_from_the_cache() -> None:
    config = _config("hitl-resume")
    script = (
        Script()
        .events(("k", b"disk full", 1_000))
        .watermark(2_000)
        .answers(("k", APPROVAL, b"yes", 3_000))
    )

    run = run_script(agents.approve_then_act, config, script, clock_ms=agents.clock_at_zero)

    assert run.outputs == [(b"k", b"draft-1/yes/1")]
    assert run.errors == []
    approval, draft, act = run.intents
    assert (approval.intent_id, approval.tool, approval.awaits_answer) == (
        APPROVAL,
        "approval",
        True,
    )
    assert approval.prompt == b"approve draft-1"
    assert (draft.tool, draft.index, draft.intent_id) == ("draft", 0, intent_id(b"k", 1, 0))
    assert (act.tool, act.index, act.intent_id) == ("act", 2, intent_id(b"k", 1, 2))
    assert FakeLLM(name="hitl-resume").call_count() == 1
    assert run.counter("beam_agents.runtime", "model_cache_hits") == 1


def test_suspension_timeout_fires_when_no_answer_arrives() -> None:
    config = _config("hitl-timeout")
    script = (
        Script()
        .events(("k", b"disk full", 1_000))
        .processing_time(61_000)
        .watermark(5_000)
        .answers(("k", APPROVAL, b"too late", 6_000))
        .events(("k", b"next", 7_000))
    )

    run = run_script(agents.approve_then_act, config, script, clock_ms=agents.clock_at_zero)

    assert run.reasons()[:2] == ["suspension_timeout", "orphaned_answer"]
    timeout = run.errors[0]
    assert (timeout.payload, timeout.event_time_ms) == (b"disk full", 60_000)
    # The key is free again: the next event runs (and suspends) at the next seq.
    assert [i.seq for i in run.intents if i.awaits_answer] == [1, 2]


def test_ttl_wipes_a_live_suspension_as_a_dead_letter() -> None:
    config = _config("hitl-ttl", ttl_ms=1_000)
    script = Script().events(("k", b"disk full", 1_000)).watermark(200_000)

    run = run_script(agents.approve_then_act, config, script, clock_ms=agents.clock_at_zero)

    assert run.reasons() == ["ttl_wiped_suspension"]
    error = run.errors[0]
    # TTL re-arms at event time + suspension timeout + ttl: GC never pre-empts it earlier.
    assert (error.payload, error.event_time_ms) == (b"disk full", 1_000 + 60_000 + 1_000)


def test_with_buffering_off_an_event_for_a_suspended_key_is_dead_lettered() -> None:
    """suspended_event_buffer=0 is the pre-buffer behaviour; the suspension stands."""
    config = _config("hitl-busy", suspended_event_buffer=0)
    script = (
        Script()
        .events(("k", b"disk full", 1_000))
        .watermark(2_000)
        .events(("k", b"another", 3_000))
        .watermark(4_000)
        .answers(("k", APPROVAL, b"yes", 5_000))
    )

    run = run_script(agents.approve_then_act, config, script, clock_ms=agents.clock_at_zero)

    assert run.reasons() == ["event_while_suspended"]
    assert run.errors[0].payload == b"another"
    assert "buffering is off" in run.errors[0].detail
    assert run.outputs == [(b"k", b"draft-1/yes/1")]
    assert run.counter("beam_agents.runtime", "suspension_buffer_overflows") == 0


def test_an_answer_without_a_live_suspension_is_orphaned() -> None:
    config = _config("hitl-orphan")
    script = Script().answers(("k", APPROVAL, b"yes", 1_000), ("other", "nope", b"x", 1_000))

    run = run_script(agents.approve_then_act, config, script, clock_ms=agents.clock_at_zero)

    assert sorted(run.reasons()) == ["orphaned_answer", "orphaned_answer"]
    assert {e.payload for e in run.errors} == {b"yes", b"x"}
    assert run.outputs == []
