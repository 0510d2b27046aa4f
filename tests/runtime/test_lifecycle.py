"""The activation lifecycle on the streaming DirectRunner."""

from __future__ import annotations

import pytest

from beam_agents import AgentConfig
from beam_agents.memory import SOFT_CAP_BYTES
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


def test_memory_persists_across_a_keys_events_and_is_isolated_between_keys() -> None:
    script = (
        Script()
        .events(("a", b"1", 1_000), ("b", b"x", 1_000))
        .watermark(2_000)
        .events(("a", b"2", 3_000), ("b", b"y", 3_000))
        .watermark(4_000)
        .events(("a", b"3", 5_000))
    )

    run = run_script(agents.remember, AgentConfig(), script)

    by_key: dict[bytes, list[bytes]] = {}
    for key, output in run.outputs:
        by_key.setdefault(key, []).append(output)
    assert by_key == {b"a": [b"1:1", b"2:1,2", b"3:1,2,3"], b"b": [b"1:x", b"2:x,y"]}
    assert run.errors == []


def test_a_raising_agent_commits_nothing_and_emits_one_activation_error() -> None:
    """Writes are staged: the failed activation leaves no memory, seq or intent behind."""
    script = (
        Script()
        .events(("k", b"one", 1_000))
        .watermark(2_000)
        .events(("k", b"boom", 3_000))
        .watermark(4_000)
        .events(("k", b"two", 5_000))
    )

    run = run_script(agents.explode_on_boom, AgentConfig(), script)

    assert run.outputs == [(b"k", b"1:one"), (b"k", b"2:one,two")]
    assert run.reasons() == ["activation_error"]
    error = run.errors[0]
    assert (error.entity_key, error.event_time_ms, error.payload) == (b"k", 3_000, b"boom")
    assert "agent failed on purpose" in error.detail
    assert [i.seq for i in run.intents] == [1, 2]
    assert run.counter(RUNTIME, "errors_activation_error") == 1


def test_a_slow_agent_emits_activation_timeout() -> None:
    script = Script().events(("k", b"slow", 1_000)).watermark(2_000).events(("k", b"fast", 3_000))

    run = run_script(agents.sleepy, AgentConfig(activation_timeout_s=0.3), script)

    assert run.reasons() == ["activation_timeout"]
    assert run.errors[0].payload == b"slow"
    assert run.outputs == [(b"k", b"fast")]


def test_only_read_activations_do_not_write_state() -> None:
    script = (
        Script()
        .events(("k", b"write", 1_000))
        .watermark(2_000)
        .events(("k", b"read", 3_000))
        .watermark(4_000)
        .events(("k", b"read", 5_000))
    )

    run = run_script(agents.read_only, AgentConfig(), script)

    assert [o for _, o in run.outputs] == [b"1", b"1", b"1"]
    assert run.counter(RUNTIME, "memory_writes") == 1


def test_unconfigured_pipelines_behave_exactly_as_today() -> None:
    """No store, and ctx.memory.longterm names AgentConfig.longterm_memory."""
    run = run_script(agents.touch_longterm, AgentConfig(), Script().events(("k", b"v", 1_000)))

    ((key, message),) = run.outputs
    assert key == b"k"
    assert b"AgentConfig.longterm_memory" in message
    assert run.errors == []


def test_soft_cap_warnings_from_an_activation_land_in_pipeline_metrics() -> None:
    events = [("k", b"e", 1_000 * i) for i in range(1, 5)]
    script = Script()
    for event in events:
        script.events(event).watermark(event[2] + 1)

    run = run_script(agents.fill_past_soft_cap, AgentConfig(compactor=None, ttl_ms=10**9), script)

    sizes = [int(o) for _, o in run.outputs]
    assert sizes[1] < SOFT_CAP_BYTES <= sizes[2]
    assert run.counter("beam_agents.memory", "soft_cap_warnings") == 1
    # compactor=None is strict overflow: the fourth write would pass the hard cap.
    assert run.reasons() == ["memory_overflow"]


def test_invalid_events_are_dead_lettered_and_the_rest_still_run() -> None:
    script = Script().events(("k", 42, 1_000), (7, b"x", 1_000), ("k", "text", 1_000))

    run = run_script(agents.remember, AgentConfig(), script)

    assert run.outputs == [(b"k", b"1:text")]
    assert run.reasons() == ["invalid_event", "invalid_event"]
    assert {e.entity_key for e in run.errors} == {b"k", b"7"}
    assert {e.payload for e in run.errors} == {b'["k",42]', b"(7, b'x')"}


def test_an_agent_returning_neither_complete_nor_suspend_is_an_activation_error() -> None:
    run = run_script(agents.returns_garbage, AgentConfig(), Script().events(("k", b"v", 1_000)))

    assert run.outputs == []
    assert run.reasons() == ["activation_error"]
    assert "expected Complete or Suspend" in run.errors[0].detail


def test_idle_key_is_wiped_at_ttl_and_its_seq_continues() -> None:
    script = (
        Script()
        .events(("k", b"1", 1_000))
        .watermark(2_000)
        .events(("k", b"2", 3_000))
        .watermark(20_000)  # TTL fires at 3_000 + 10_000
        .events(("k", b"3", 21_000))
    )

    run = run_script(agents.remember, AgentConfig(ttl_ms=10_000), script)

    assert [o for _, o in run.outputs] == [b"1:1", b"2:1,2", b"3:3"]
    assert run.counter(RUNTIME, "ttl_wipes") == 2  # the second at the end of the stream


def test_activity_before_the_ttl_re_arms_it() -> None:
    script = Script()
    for t in range(1_000, 40_000, 8_000):  # gaps shorter than the TTL
        script.events(("k", b"e", t)).watermark(t + 1)

    run = run_script(agents.remember, AgentConfig(ttl_ms=10_000), script)

    assert run.outputs[-1] == (b"k", b"5:e,e,e,e,e")
    assert run.counter(RUNTIME, "ttl_wipes") == 1
