"""A per-key token budget over a sliding window of event time, kept in state."""

from __future__ import annotations

import pytest

from beam_agents import AgentConfig, TokenBudget
from beam_agents.errors import ConfigurationError
from beam_agents.model import FakeLLM
from beam_agents.proto.beam_agents_pb2 import SeqState
from beam_agents.runtime.agent import Agent
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

WINDOW_MS = 10_000
EVENTS = (
    ("k", b"e1", 1_000),
    ("k", b"e2", 2_000),
    ("other", b"o1", 2_500),
    ("k", b"e3", 3_000),  # the key spent its budget: refused
    ("k", b"e4", 11_500),  # e1's spend left the window
    ("k", b"e5", 11_600),  # e2's and e4's are in it: refused
)


def _tokens_per_call() -> int:
    """What one call of this script spends, measured through the counters."""
    provider = FakeLLM(name="budget-measure", default=b"an answer of forty bytes, give or take")
    provider.reset()
    run = run_script(
        agents.ask_model,
        AgentConfig(provider_factory=provider),
        Script().events(("k", b"e1", 1_000)),
    )
    model = "beam_agents.model/fake-1"
    return run.counter(model, "input_tokens") + run.counter(model, "output_tokens")


def _run(
    name: str,
    per_key: int,
    *,
    latency_s: float = 0.0,
    inflight: int = 1,
    agent: Agent = agents.ask_model,
) -> StreamRun:
    provider = FakeLLM(
        name=name, default=b"an answer of forty bytes, give or take", latency_s=latency_s
    )
    provider.reset()
    config = AgentConfig(
        provider_factory=provider,
        max_inflight_calls=inflight,
        token_budget=TokenBudget(per_key=per_key, window_ms=WINDOW_MS),
    )
    return run_script(agent, config, Script().events(*EVENTS))


@pytest.mark.pipeline
def test_calls_past_the_budget_are_dead_lettered_and_the_window_slides_on_event_time() -> None:
    per_call = _tokens_per_call()
    assert per_call > 0

    run = _run("budget-clean", per_key=2 * per_call)

    assert run.reasons() == ["budget_exceeded", "budget_exceeded"]
    assert [e.payload for e in run.errors] == [b"e3", b"e5"]
    assert f"spent {2 * per_call} of its {2 * per_call}-token budget" in run.errors[0].detail
    assert sorted(key for key, _ in run.outputs) == [b"k", b"k", b"k", b"other"]
    # Refused calls never reach the provider.
    assert FakeLLM(name="budget-clean").call_count() == 4


@pytest.mark.pipeline
def test_a_retried_bundle_refuses_exactly_the_same_calls() -> None:
    per_call = _tokens_per_call()
    clean = _run("budget-retry-clean", per_key=2 * per_call)
    with fail_commit_once(b"k", 2) as fault:
        retried = _run("budget-retry-faulty", per_key=2 * per_call)

    assert fault.fired == [(b"k", 2)]
    assert retried.fingerprint() == clean.fingerprint()
    assert retried.reasons() == ["budget_exceeded", "budget_exceeded"]


@pytest.mark.pipeline
def test_parked_calls_spend_as_calls_in_place_do() -> None:
    per_call = _tokens_per_call()
    in_place = _run("budget-in-place", per_key=2 * per_call)

    parked = _run("budget-parked", per_key=2 * per_call, latency_s=0.05, inflight=4)

    assert parked.fingerprint() == in_place.fingerprint()
    assert parked.counter("beam_agents.runtime", "parks") > 0


@pytest.mark.pipeline
def test_a_park_between_two_calls_carries_the_first_calls_spend() -> None:
    per_call = _tokens_per_call()
    budget, agent = 3 * per_call, agents.ask_twice
    in_place = _run("budget-twice-in-place", budget, agent=agent)

    parked = _run("budget-twice-parked", budget, latency_s=0.05, inflight=4, agent=agent)

    assert in_place.reasons() != []
    assert parked.fingerprint() == in_place.fingerprint()
    assert parked.counter("beam_agents.runtime", "parks") > 0


def test_the_spend_is_appended_to_seq_in_field_order() -> None:
    """SEQ with a spend decodes, and re-encodes to the same bytes (deterministic order)."""
    from beam_agents.budget import Meter
    from beam_agents.runtime._cells import encode_seq

    meter = Meter(TokenBudget(per_key=100, window_ms=1_000), None, 5_000)
    meter.add(42)
    raw = encode_seq(3, True) + meter.encoded()

    state = SeqState.FromString(raw)
    assert (state.seq, state.continuation_clear) == (3, True)
    assert [(s.event_time_ms, s.tokens) for s in state.spend] == [(5_000, 42)]
    assert state.SerializeToString(deterministic=True) == raw
    later = Meter(TokenBudget(per_key=100, window_ms=1_000), state, 6_000)
    assert later.spent_in_window() == 0  # 5_000 is not within (5_000, 6_000]


@pytest.mark.parametrize(
    ("per_key", "window_ms"), [(0, 1_000), (10, 0), (-1, 1_000), (True, 1_000), (10, 1.5)]
)
def test_a_budget_that_is_not_positive_ints_is_refused(per_key: object, window_ms: object) -> None:
    with pytest.raises(ConfigurationError, match="TokenBudget"):
        TokenBudget(per_key=per_key, window_ms=window_ms)  # type: ignore[arg-type]


def test_agent_config_refuses_a_budget_that_is_not_a_token_budget() -> None:
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.token_budget"):
        AgentConfig(token_budget=1000)  # type: ignore[arg-type]
