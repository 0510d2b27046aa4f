{%- set store = cookiecutter.longterm_backend != "none" -%}
"""An action waits for a human: approve, reject, or no answer before the timeout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from beam_agents import intent_id
from beam_agents.answer_signing import signed_answer_bytes
from beam_agents.local import Script, run_agent

from {{ cookiecutter.package_name }}.agent import APPROVAL_TIMEOUT_MS, Decision, agent
from {{ cookiecutter.package_name }}.graph import SCRIPTED_MODEL, config

URGENT = b"urgent: outage in the payments service"
#: The approval is the activation's first intent: seq 1, index 0.
APPROVAL = intent_id(b"acct-5", 1, 0)


#: The environment variable the signed tests' key lives in (`env:NAME`, as on a launcher).
SIGNING_ENV = "{{ cookiecutter.package_name | upper }}_TEST_ANSWER_SIGNING_KEY"
#: A test key: at least 32 bytes, as `beam_agents.answer_signing` requires.
SIGNING_KEY = "test-only-answer-signing-key-0123456789abcdef"


def _script(answer: bytes, approval: str = APPROVAL) -> Script:
    script = Script().events(("acct-5", URGENT, 1_000)).watermark(2_000)
    return script.answers(("acct-5", approval, answer, 3_000))


def test_an_approved_action_emits_its_intent_after_the_answer() -> None:
    run = run_agent(
        agent,
        config(SCRIPTED_MODEL{% if store %}, "memory://hitl-approve"{% endif %}),
        _script(b"approve"),
        clock_ms=lambda: 0,
        output_type=Decision,
    )

    assert run.errors == []
    approval, act = run.intents
    assert (approval.intent_id, approval.tool) == (APPROVAL, "approval")
    assert approval.awaits_answer
    assert URGENT in approval.prompt
    assert act.tool == "act"
    ((key, decision),) = run.outputs
    assert key == b"acct-5"
    assert decision == Decision(
        entity="acct-5",
        event_id=decision.event_id,
        label="act",
        approved=True,
        intent_id=act.intent_id,
    )


def test_a_rejected_action_emits_nothing_but_its_decision() -> None:
    run = run_agent(
        agent,
        config(SCRIPTED_MODEL{% if store %}, "memory://hitl-reject"{% endif %}),
        _script(b"no"),
        clock_ms=lambda: 0,
        output_type=Decision,
    )

    assert [intent.tool for intent in run.intents] == ["approval"]
    ((_, decision),) = run.outputs
    assert (decision.approved, decision.intent_id) == (False, None)


def test_an_unanswered_approval_times_out_to_the_errors_output() -> None:
    script = Script().events(("acct-5", URGENT, 1_000)).processing_time(APPROVAL_TIMEOUT_MS + 1)

    run = run_agent(
        agent,
        config(SCRIPTED_MODEL{% if store %}, "memory://hitl-timeout"{% endif %}),
        script,
        clock_ms=lambda: 0,
        output_type=Decision,
    )

    assert run.outputs == []
    assert [error.reason for error in run.errors] == ["suspension_timeout"]
    assert run.errors[0].payload == URGENT


def _signed_run(
    monkeypatch: pytest.MonkeyPatch, answer: bytes | Callable[[str], bytes], store: str
) -> Any:
    """The agent under an answer signing key, given `answer` (or `answer(approval id)`).

    Under a key an approval's id binds the question asked (the event, the prompt),
    so the run is asked once first, unanswered: being deterministic, it asks the
    same question again under the same id.
    """
    monkeypatch.setenv(SIGNING_ENV, SIGNING_KEY)
    asking = config(SCRIPTED_MODEL, {% if store %}f"memory://{store}-asked"{% else %}None{% endif %}, f"env:{SIGNING_ENV}")
    asked = Script().events(("acct-5", URGENT, 1_000)).watermark(2_000)
    approval = run_agent(agent, asking, asked, clock_ms=lambda: 0, output_type=Decision)
    approval_id = approval.intents[0].intent_id
    signed = config(SCRIPTED_MODEL, {% if store %}f"memory://{store}"{% else %}None{% endif %}, f"env:{SIGNING_ENV}")
    payload = answer(approval_id) if callable(answer) else answer
    script = _script(payload, approval_id)
    return run_agent(agent, signed, script, clock_ms=lambda: 0, output_type=Decision)


def test_an_unsigned_answer_is_dead_lettered_under_a_signing_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `answer_signing_key` set, a bare `approve` resumes nothing.

    The approval keeps waiting, until the key's TTL wipes it at the end of the run.
    """
    run = _signed_run(monkeypatch, b"approve", "hitl-unsigned")

    assert [intent.tool for intent in run.intents] == ["approval"]
    assert run.outputs == []
    reasons = [error.reason for error in run.errors]
    assert reasons == ["unsigned_answer", "ttl_wiped_suspension"]
    assert run.errors[0].payload == b"approve"


def test_a_signed_answer_resumes_the_approval(monkeypatch: pytest.MonkeyPatch) -> None:
    """The console's signed answer, under the same key, approves the action."""

    def answer(approval: str) -> bytes:
        return signed_answer_bytes(
            SIGNING_KEY.encode(),
            intent_id=approval,
            entity_key=b"acct-5",
            answer="approve",
            approver="approver@example.com",
            expires_at_ms=APPROVAL_TIMEOUT_MS,
        )

    run = _signed_run(monkeypatch, answer, "hitl-signed")

    assert run.errors == []
    assert [intent.tool for intent in run.intents] == ["approval", "act"]
    ((_, decision),) = run.outputs
    assert decision.approved is True
