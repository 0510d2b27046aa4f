"""The chaos retry gate: a commit that fails once converges on byte-identical results."""

from __future__ import annotations

import pytest

from beam_agents import AgentConfig
from beam_agents.model import FakeLLM
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline


def _script() -> Script:
    script = Script()
    for i, key in enumerate(["a", "b", "a", "a", "b", "a"]):
        t = 1_000 * (i + 1)
        script.events((key, f"event-{i}".encode(), t)).watermark(t + 1)
    # A last look at every key's committed memory, after the fault.
    return script.events(("a", b"probe", 50_000), ("b", b"probe", 50_000))


def test_a_failed_commit_is_retried_into_byte_identical_outputs_intents_and_state() -> None:
    """Each output carries a digest of the committed memory its activation started from,
    and FakeLLM numbers its answers, so a lost or doubled commit, or a provider call
    repeated by the retry, would change the fingerprint."""
    provider = FakeLLM(name="chaos-clean", default=b"answer-{n}")
    provider.reset()
    clean = run_script(
        agents.ask_and_fingerprint, AgentConfig(provider_factory=provider), _script()
    )

    chaotic_provider = FakeLLM(name="chaos-faulty", default=b"answer-{n}")
    chaotic_provider.reset()
    with fail_commit_once(b"a", 3) as fault:
        faulty = run_script(
            agents.ask_and_fingerprint, AgentConfig(provider_factory=chaotic_provider), _script()
        )

    assert fault.fired == [(b"a", 3)]
    assert len(clean.outputs) == 8
    assert faulty.fingerprint() == clean.fingerprint()
    assert chaotic_provider.call_count() == provider.call_count() == 8
