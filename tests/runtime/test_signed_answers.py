"""Answers under a signing key, on the streaming DirectRunner: forged ones resume nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
import pickle
import uuid
from collections.abc import Callable

import pytest

from beam_agents import AgentConfig, intent_id
from beam_agents.answer_signing import approval_intent_id, signed_answer_bytes
from beam_agents.errors import ConfigurationError
from beam_agents.proto.beam_agents_pb2 import Continuation, PendingIntents
from beam_agents.runtime._calls.driver import LoopDriver
from beam_agents.runtime._paths.activator import Activator, KeyCells, Setup
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents
from tests.runtime.recording import recording_cells

pytestmark = pytest.mark.pipeline

KEY_ENV = "BEAM_AGENTS_TEST_ANSWER_SIGNING_KEY"
KEY = "answer-signing-key-for-tests-0123456789abcdef"


def _ask(event: bytes = b"ask-1", event_time_ms: int = 1_000) -> str:
    """The approval `agents.log_then_approve` asks for at seq 1, as the pipeline names it."""
    return approval_intent_id(
        KEY.encode(),
        b"k",
        1,
        0,
        event=event,
        event_time_ms=event_time_ms,
        prompt=b"ok?",
        timeout_ms=60_000,
    )


ASK = _ask()
"""The approval the first event asks for, as the pipeline names it under KEY."""
LATER = 10_000_000
"""An expiry no test clock reaches."""


def clock_at_one_minute() -> int:
    """A processing-time clock standing at 60 s, past an answer that expired at 59.999 s."""
    return 60_000


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch) -> AgentConfig:
    monkeypatch.setenv(KEY_ENV, KEY)
    return AgentConfig(answer_signing_key=f"env:{KEY_ENV}")


def _answered(
    config: AgentConfig,
    answer: bytes,
    intent: str = ASK,
    *,
    event: bytes = b"ask-1",
    clock_ms: Callable[[], int] = agents.clock_at_zero,
) -> StreamRun:
    """`event` asking for approval at time 1 s, then `answer` to `intent` on the answers input."""
    script = Script()
    script.events(("k", event, 1_000)).watermark(2_000)
    script.answers(("k", intent, answer, 3_000)).watermark(4_000)
    return run_script(agents.log_then_approve, config, script, clock_ms=clock_ms, lifecycle=True)


def _refusals(run: StreamRun) -> list[str]:
    """The reasons of the dead letters at the answer's time (the end of the stream then
    wipes the still-suspended key: the answer resumed nothing)."""
    assert run.reasons()[-1] == "ttl_wiped_suspension"
    return [e.reason for e in run.errors if e.event_time_ms == 3_000]


def _signed(
    key: str,
    answer: str = "approve",
    approver: str = "ada@example.com",
    *,
    intent: str = ASK,
    expires_at_ms: int = LATER,
) -> bytes:
    return signed_answer_bytes(
        key.encode(),
        intent_id=intent,
        entity_key=b"k",
        answer=answer,
        approver=approver,
        expires_at_ms=expires_at_ms,
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


def test_an_answer_signed_for_an_earlier_deployment_does_not_resume_a_new_one_at_the_same_seq(
    config: AgentConfig,
) -> None:
    """A fresh state reaches seq 1 again; the old deployment's approve, replayed as it was
    or moved onto the new approval's id, resumes nothing."""
    old = _signed(KEY, intent=_ask(b"ask-1"))
    new_ask = _ask(b"ask-2")

    replayed = _answered(config, old, intent=ASK, event=b"ask-2")
    moved = _answered(config, old, intent=new_ask, event=b"ask-2")

    [approval] = [i for i in replayed.intents if i.awaits_answer]
    assert approval.intent_id == new_ask != ASK
    assert replayed.outputs == moved.outputs == []
    assert _refusals(replayed) == ["orphaned_answer"]
    assert _refusals(moved) == ["bad_answer_signature"]
    assert "resumed" not in replayed.kinds() + moved.kinds()


def test_an_answer_past_its_signed_expiry_resumes_nothing(config: AgentConfig) -> None:
    expired = _signed(KEY, expires_at_ms=59_999)

    run = _answered(config, expired, clock_ms=clock_at_one_minute)

    assert run.outputs == []
    assert _refusals(run) == ["expired_answer"]
    assert run.errors[0].payload == expired
    assert "resumed" not in run.kinds()


def test_an_answer_within_its_signed_expiry_resumes(config: AgentConfig) -> None:
    run = _answered(config, _signed(KEY, expires_at_ms=60_000), clock_ms=clock_at_one_minute)

    assert run.errors == []
    assert run.outputs == [(b"k", b"1:-")]


def test_an_answer_without_an_expiry_to_a_decision_bound_approval_resumes_nothing(
    config: AgentConfig,
) -> None:
    """The older answer form (no `expires_at_ms`) is taken only for approvals named before
    ids were bound to their decision."""
    signed = json.loads(_signed(KEY))
    del signed["expires_at_ms"]

    run = _answered(config, json.dumps(signed).encode())

    assert run.outputs == []
    assert _refusals(run) == ["unsigned_answer"]


def test_a_retried_suspension_under_a_signing_key_emits_the_same_approval_bytes(
    config: AgentConfig,
) -> None:
    clean = _answered(config, _signed(KEY))
    with fail_commit_once(b"k", 1) as fault:
        retried = _answered(config, _signed(KEY))

    assert fault.fired == [(b"k", 1)]
    assert [i.SerializeToString(deterministic=True) for i in retried.intents] == [
        i.SerializeToString(deterministic=True) for i in clean.intents
    ]
    assert retried.outputs == clean.outputs == [(b"k", b"1:-")]


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


# -- a suspension committed before approval ids were bound to their decision ----------


def _legacy_intent_id() -> str:
    """The id the runtime gave seq 1's approval of b"k" before ids were bound to the decision."""
    message = json.dumps(
        ["beam-agents/approval-intent/v1", b"k".hex(), "1", "0"], separators=(",", ":")
    )
    digest = hmac.new(KEY.encode(), message.encode(), hashlib.sha256).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _legacy_answer(intent: str) -> bytes:
    """An answer as a console signed it before answers carried an expiry."""
    message = json.dumps(
        ["beam-agents/answer/v1", intent, b"k".hex(), "approve", "ada@example.com"],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    signature = hmac.new(KEY.encode(), message.encode(), hashlib.sha256).hexdigest()
    envelope = {"answer": "approve", "approver": "ada@example.com", "signature": signature}
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode()


def _legacy_suspension() -> tuple[Activator, KeyCells, str]:
    """A key suspended at seq 1 whose state names its approval by the older id."""
    activator = Activator(
        Setup(
            agent=agents.log_then_approve,
            config=AgentConfig(),
            token="unit",
            clock_ms=agents.clock_at_zero,
            driver=LoopDriver(),
            provider=None,
            answer_key=KEY.encode(),
        )
    )
    cells = recording_cells()
    activator.on_event(b"k", b"ask-1", 1_000, cells)
    legacy = _legacy_intent_id()
    continuation, pending = Continuation(), PendingIntents()
    continuation.ParseFromString(cells.continuation.read() or b"")
    pending.ParseFromString(cells.pending.read() or b"")
    assert continuation.intent_id == pending.intents[0].intent_id == ASK
    continuation.intent_id = pending.intents[0].intent_id = legacy
    cells.continuation.write(continuation.SerializeToString(deterministic=True))
    cells.pending.write(pending.SerializeToString(deterministic=True))
    return activator, cells, legacy


@pytest.mark.parametrize("form", ["older, without expiry", "current, with expiry"])
def test_a_suspension_committed_before_ids_were_bound_still_resolves(form: str) -> None:
    """State kept over `--update` names its approval by the older id: an answer signed for
    that id, by a console of either version, still resumes it."""
    activator, cells, legacy = _legacy_suspension()
    answer = (
        _legacy_answer(legacy)
        if form.startswith("older")
        else _signed(KEY, intent=legacy, expires_at_ms=LATER)
    )

    out = activator.on_answer(b"k", legacy, answer, 3_000, cells)

    assert out == [(b"k", b"1:-")]
    assert cells.continuation.read() is None
