"""Coalescing: events waiting behind a key's parked activation run as one activation."""

from __future__ import annotations

import pytest

from beam_agents import (
    ActivationContext,
    AgentConfig,
    Complete,
    LlmRequest,
    intent_id,
)
from beam_agents.errors import ConfigurationError
from beam_agents.model import FakeLLM
from beam_agents.proto.beam_agents_pb2 import BufferedEvent, WakeMarker
from beam_agents.runtime._paths.drain import coalesced
from beam_agents.testing.chaos import fail_commit_once, fail_park_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


async def decide_burst(ctx: ActivationContext) -> Complete:
    """One model call for every event the activation decides for; the output names them."""
    burst = b"|".join(ctx.events)
    answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[burst.decode()]))
    if b"boom" in burst:
        raise RuntimeError("the burst holds a boom")
    ctx.memory.set("last", burst)
    return Complete(b"%d:%s:%s" % (len(ctx.events), burst, answer.response))


async def decide_each(ctx: ActivationContext) -> Complete:
    """One model call for the burst, and each event's own output (`Complete.each`)."""
    burst = b"|".join(ctx.events)
    answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[burst.decode()]))
    return Complete.each([b"%s=%s/%d" % (e, answer.response, len(ctx.events)) for e in ctx.events])


async def one_output_only(ctx: ActivationContext) -> Complete:
    await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    return Complete.each([b"just one"])


def _provider(name: str) -> FakeLLM:
    provider = FakeLLM(name=name, latency_s=0.02, default=b"ok")
    provider.reset()
    return provider


def _script(*payloads: bytes) -> Script:
    """`k`'s first event parks; the rest arrive before any poll, so they wait behind it."""
    script = Script().events(("w", b"warm up", 500)).watermark(600)
    script.events(*[("k", payload, 1_000 + i) for i, payload in enumerate(payloads)])
    script.watermark(2_000).processing_time(1_000).processing_time(1_000)
    return script.watermark(10_000).processing_time(1_000)


def _run(
    name: str, payloads: tuple[bytes, ...], agent: object = decide_burst, **more: object
) -> tuple[StreamRun, FakeLLM]:
    provider = _provider(name)
    config = AgentConfig(provider_factory=provider, **more)  # type: ignore[arg-type]
    run = run_script(
        agent,  # type: ignore[arg-type]
        config,
        _script(*payloads),
        clock_ms=agents.clock_just_ahead,
        lifecycle=True,
    )
    return run, provider


def _outputs(run: StreamRun, key: bytes = b"k") -> list[bytes]:
    return [value for k, value in run.outputs if k == key]


BURST = (b"e1", b"e2", b"e3", b"e4", b"e5", b"e6")


def test_events_waiting_behind_a_parked_key_run_as_one_activation() -> None:
    """The first event parks; the five behind it run as one activation of up to four, then
    one of one: three model calls for six events, and an output for each event."""
    run, provider = _run("coalesce-on", BURST, coalesce_max=4)

    assert _outputs(run) == [
        b"1:e1:ok",
        *[b"4:e2|e3|e4|e5:ok"] * 4,
        b"1:e6:ok",
    ]
    seen = [request.messages[0] for request in provider.calls() if request.messages != ["warm up"]]
    assert seen == ["e1", "e2|e3|e4|e5", "e6"]
    assert run.counter(RUNTIME, "coalesced") == 3


def test_without_coalescing_every_waiting_event_runs_alone() -> None:
    run, provider = _run("coalesce-off", BURST)

    assert _outputs(run) == [b"1:%s:ok" % payload for payload in BURST]
    assert provider.call_count() == len(BURST) + 1  # and the warm-up
    assert run.counter(RUNTIME, "coalesced") == 0


def test_each_coalesced_event_has_its_own_activated_record_at_its_time() -> None:
    run, _ = _run("coalesce-records", BURST, coalesce_max=4)

    activated = [
        (event.event_time_ms, event.seq, event.detail)
        for event in run.lifecycle
        if event.entity_key == b"k" and event.kind == "activated"
    ]
    assert sorted(activated) == [
        (1_000, 1, ""),
        (1_001, 2, "drained"),
        (1_002, 2, "coalesced"),
        (1_003, 2, "coalesced"),
        (1_004, 2, "coalesced"),
        (1_005, 3, "drained"),
    ]
    at_two = [event.kind for event in run.lifecycle if event.entity_key == b"k" and event.seq == 2]
    assert at_two.count("completed") == 1  # one activation decided for four events


def test_a_failed_coalesced_activation_dead_letters_every_event_it_held() -> None:
    """Nothing commits; each event gets its own dead letter with its own payload and time."""
    payloads = (b"e1", b"e2", b"boom", b"e4", b"e5")
    run, _ = _run("coalesce-boom", payloads, coalesce_max=3)

    letters = [(e.payload, e.event_time_ms, e.reason) for e in run.errors if e.entity_key == b"k"]
    failed = [event.seq for event in run.lifecycle if event.kind == "failed"]
    assert failed == [2, 2, 2]
    assert letters == [
        (b"e2", 1_001, "activation_error"),
        (b"boom", 1_002, "activation_error"),
        (b"e4", 1_003, "activation_error"),
    ]
    assert _outputs(run) == [b"1:e1:ok", b"1:e5:ok"]


def test_coalescing_is_replay_exact_through_failed_commits_and_parks() -> None:
    """Bundles that fail at the coalesced activation's park and at its commit are retried
    from the same state, so they group the same events: outputs, errors, intents and
    lifecycle are byte-identical to the clean run."""
    clean, _ = _run("coalesce-clean", BURST, coalesce_max=4)
    with fail_park_once(b"k", 2) as parked, fail_commit_once(b"k", 2) as committed:
        faulty, _ = _run("coalesce-faulty", BURST, coalesce_max=4)

    assert parked.fired
    assert committed.fired
    assert faulty.fingerprint() == clean.fingerprint()


def test_a_coalesced_suspension_resumes_with_the_same_events() -> None:
    """A burst that asks for approval keeps its events in the continuation: the resumed
    run sees them all, and its output goes to each."""
    script = Script().events(("w", b"warm up", 500)).watermark(600)
    script.events(("k", b"first", 1_000), ("k", b"ask a", 1_001), ("k", b"b", 1_002))
    script.watermark(2_000).processing_time(1_000).processing_time(1_000)
    script.answers(("k", intent_id(b"k", 2, 0), b"yes", 3_000))
    script.watermark(10_000).processing_time(1_000).processing_time(1_000)
    config = AgentConfig(provider_factory=_provider("coalesce-ask"), coalesce_max=4)

    run = run_script(agents.ask_for_burst, config, script, clock_ms=agents.clock_just_ahead)

    assert _outputs(run) == [b"first", b"yes:ask a|b", b"yes:ask a|b"]


def test_complete_each_gives_every_coalesced_event_its_own_output() -> None:
    run, _ = _run("coalesce-each", BURST[:4], decide_each, coalesce_max=4)

    assert _outputs(run) == [b"e1=ok/1", b"e2=ok/3", b"e3=ok/3", b"e4=ok/3"]


def test_complete_each_with_the_wrong_count_fails_every_event_and_commits_nothing() -> None:
    run, _ = _run("coalesce-miscount", BURST[:4], one_output_only, coalesce_max=4)

    assert _outputs(run) == [b"just one"]
    letters = [(e.payload, e.reason) for e in run.errors if e.entity_key == b"k"]
    assert letters == [(payload, "activation_error") for payload in (b"e2", b"e3", b"e4")]
    assert all("Complete.each got 1 output(s) for the 3 event(s)" in e.detail for e in run.errors)


def test_complete_each_refuses_no_outputs_and_anything_but_outputs() -> None:
    with pytest.raises(ValueError, match="one output per event"):
        Complete.each([])
    with pytest.raises(TypeError, match=r"Complete\.each must be bytes"):
        Complete.each([b"fine", "a str"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"Complete\.each"):
        Complete(b"a", (b"b",))


def test_a_follow_up_in_the_buffer_runs_alone_and_ends_the_group_before_it() -> None:
    """Only plain events coalesce: a wake is its own activation, in its place."""
    plain = [BufferedEvent(event=b"e%d" % i) for i in range(5)]
    wake = BufferedEvent(event=b"recheck", wake=WakeMarker(name="recheck"))
    events = [plain[0], plain[1], wake, plain[2], plain[3], plain[4]]

    assert list(coalesced(events, 0, 4)) == [plain[1]]
    assert list(coalesced(events, 3, 2)) == [plain[3]]
    assert list(coalesced(events, 3, 8)) == [plain[3], plain[4]]
    assert list(coalesced(events, 0, 1)) == []


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "4", 1025])
def test_coalesce_max_out_of_range_is_refused_at_construction(value: object) -> None:
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.coalesce_max"):
        AgentConfig(coalesce_max=value)  # type: ignore[arg-type]


def test_on_the_portable_runner_a_key_s_waiting_events_coalesce_as_well() -> None:
    """The FnApiRunner in batch parks every first event and fires the polls once the input
    is read, so each key's later events all wait: one activation decides for them."""
    import apache_beam as beam
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.testing.util import assert_that, equal_to

    from beam_agents import RunAgent

    # The warm-up's call may run in place (a process's first call does, while the runtime
    # learns whether calls wait); every key after it parks on its first event.
    events = [(b"w", b"warm up")] + [(b"k%d" % (i % 2), b"e%d" % i) for i in range(8)]
    config = AgentConfig(provider_factory=_provider("coalesce-fnapi"), coalesce_max=8)
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        keyed = pipeline | beam.Create(events, reshuffle=False)
        result = keyed | RunAgent(decide_each, config)
        assert_that(
            result.outputs,
            equal_to(
                [
                    (b"w", b"warm up=ok/1"),
                    (b"k0", b"e0=ok/1"),
                    *[(b"k0", b"%s=ok/3" % e) for e in (b"e2", b"e4", b"e6")],
                    (b"k1", b"e1=ok/1"),
                    *[(b"k1", b"%s=ok/3" % e) for e in (b"e3", b"e5", b"e7")],
                ]
            ),
        )


def test_a_coalescing_agent_groups_the_same_events_with_calls_in_place() -> None:
    """With `max_inflight_calls=1` each call answers on the Beam thread and the key still
    parks, so the events behind it wait in its buffer and group as they do with calls in
    flight: outputs, errors, intents and lifecycle are byte-identical, failed bundles too."""
    parked, parked_llm = _run("coalesce-256", BURST, coalesce_max=4)
    in_place, in_place_llm = _run("coalesce-1", BURST, coalesce_max=4, max_inflight_calls=1)
    with fail_park_once(b"k", 2) as park_failed, fail_commit_once(b"k", 2) as commit_failed:
        faulty, _ = _run("coalesce-1-faulty", BURST, coalesce_max=4, max_inflight_calls=1)

    assert park_failed.fired
    assert commit_failed.fired
    assert in_place.fingerprint() == parked.fingerprint() == faulty.fingerprint()
    assert _outputs(in_place) == [b"1:e1:ok", *[b"4:e2|e3|e4|e5:ok"] * 4, b"1:e6:ok"]
    # Never more than one call in flight with calls in place; both asked the same calls.
    assert in_place_llm.peak_in_flight() == 1
    assert [r.messages for r in in_place_llm.calls()] == [r.messages for r in parked_llm.calls()]
