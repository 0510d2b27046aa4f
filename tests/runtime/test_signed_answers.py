"""Answers under a signing key, on the streaming DirectRunner: forged ones resume nothing."""

from __future__ import annotations

import pickle

import pytest

from beam_agents import AgentConfig, intent_id
from beam_agents.answer_signing import approval_intent_id, signed_answer_bytes
from beam_agents.errors import ConfigurationError
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

KEY_ENV = "BEAM_AGENTS_TEST_ANSWER_SIGNING_KEY"
KEY = "answer-signing-key-for-tests-0123456789abcdef"
ASK = approval_intent_id(KEY.encode(), b"k", 1, 0)
"""The approval the first event asks for, as the pipeline names it under KEY."""


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch) -> AgentConfig:
    monkeypatch.setenv(KEY_ENV, KEY)
    return AgentConfig(answer_signing_key=f"env:{KEY_ENV}")


def _answered(config: AgentConfig, answer: bytes, intent: str = ASK) -> StreamRun:
    """One event asking for approval, then `answer` to `intent` on the answers input."""
    script = Script()
    script.events(("k", b"ask-1", 1_000)).watermark(2_000)
    script.answers(("k", intent, answer, 3_000)).watermark(4_000)
    return run_script(
        agents.log_then_approve, config, script, clock_ms=agents.clock_at_zero, lifecycle=True
    )


def _refusals(run: StreamRun) -> list[str]:
    """The reasons of the dead letters at the answer's time (the end of the stream then
    wipes the still-suspended key: the answer resumed nothing)."""
    assert run.reasons()[-1] == "ttl_wiped_suspension"
    return [e.reason for e in run.errors if e.event_time_ms == 3_000]


def _signed(key: str, answer: str = "approve", approver: str = "ada@example.com") -> bytes:
    return signed_answer_bytes(
        key.encode(), intent_id=ASK, entity_key=b"k", answer=answer, approver=approver
    )


def test_an_unsigned_answer_resumes_nothing_and_is_a_dead_letter(config: AgentConfig) -> None:
    run = _answered(config, b"approve")

    assert run.outputs == []
    assert _refusals(run) == ["unsigned_answer"]
    error = run.errors[0]
    assert (error.reason, error.entity_key, error.payload) == ("unsigned_answer", b"k", b"approve")
    assert "resumed" not in run.kinds()


def test_an_answer_signed_with_another_key_resumes_nothing(config: AgentConfig) -> None:
    forged = _signed("a-key-the-attacker-made-up-0123456789abcdef")

    run = _answered(config, forged)

    assert run.outputs == []
    assert _refusals(run) == ["bad_answer_signature"]
    assert run.errors[0].payload == forged
    assert KEY not in run.errors[0].detail


def test_a_signed_answer_with_its_text_changed_resumes_nothing(config: AgentConfig) -> None:
    tampered = _signed(KEY, answer="deny").replace(b'"deny"', b'"approve"')

    run = _answered(config, tampered)

    assert run.outputs == []
    assert _refusals(run) == ["bad_answer_signature"]


def test_a_correctly_signed_answer_resumes_and_records_its_approver(config: AgentConfig) -> None:
    run = _answered(config, _signed(KEY))

    assert run.errors == []
    assert run.outputs == [(b"k", b"1:-")]
    [resumed] = [e for e in run.lifecycle if e.kind == "resumed"]
    assert resumed.detail == f"{ASK} by ada@example.com"


def test_under_a_signing_key_approval_intent_ids_cannot_be_computed_from_published_parts(
    config: AgentConfig,
) -> None:
    run = _answered(config, _signed(KEY))

    [approval] = [i for i in run.intents if i.awaits_answer]
    assert approval.intent_id == ASK
    assert approval.intent_id != intent_id(b"k", 1, 0)
    # What an attacker would compute from the published entity key, seq and index:
    guessed = _answered(config, _signed(KEY), intent=intent_id(b"k", 1, 0))
    assert guessed.outputs == []
    assert _refusals(guessed) == ["bad_answer_signature"]


def test_the_signing_key_is_read_on_the_worker_and_never_pickled(config: AgentConfig) -> None:
    from beam_agents.runtime._dofn import AgentDoFn, wall_clock_ms

    dofn = AgentDoFn(agents.log_then_approve, config, token="t", clock_ms=wall_clock_ms)
    dofn.setup()
    try:
        shipped = pickle.dumps(dofn)
    finally:
        dofn.teardown()

    assert KEY.encode() not in shipped
    assert KEY not in repr(config)


def test_a_signing_key_source_that_is_a_value_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="answer_signing_key"):
        AgentConfig(answer_signing_key=KEY)


def _deployed_runner() -> object:
    """A runner from outside Beam's local ones: RunAgent treats it as a deployment."""
    from apache_beam.runners.runner import PipelineRunner

    class DeployedRunner(PipelineRunner):  # type: ignore[misc]
        def run_pipeline(self, pipeline: object, options: object) -> None:
            raise AssertionError("never run")

    return DeployedRunner()


@pytest.mark.parametrize("signed", [False, True])
def test_a_deployed_pipeline_taking_unsigned_answers_is_warned_about(
    signed: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import apache_beam as beam

    from beam_agents import RunAgent

    monkeypatch.setenv(KEY_ENV, KEY)
    config = AgentConfig(answer_signing_key=f"env:{KEY_ENV}" if signed else None)
    pipeline = beam.Pipeline(runner=_deployed_runner())
    events = pipeline | "Events" >> beam.Create([(b"k", b"e")])
    answers = pipeline | "Answers" >> beam.Create([(b"k", "i", b"a")])

    with caplog.at_level("WARNING", logger="beam_agents.runtime.transform"):
        _ = events | RunAgent(agents.log_then_approve, config, answers=answers)

    warned = [r for r in caplog.records if "answer_signing_key" in r.getMessage()]
    assert len(warned) == (0 if signed else 1)
