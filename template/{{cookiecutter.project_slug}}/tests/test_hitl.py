{%- set store = cookiecutter.longterm_backend != "none" -%}
"""An action waits for a human: approve, reject, or no answer before the timeout."""

from __future__ import annotations

import json

from beam_agents import intent_id
from beam_agents.local import Script, run_agent

from {{ cookiecutter.package_name }}.agent import APPROVAL_TIMEOUT_MS, agent
from {{ cookiecutter.package_name }}.graph import SCRIPTED_MODEL, config

URGENT = b"urgent: outage in the payments service"
#: The approval is the activation's first intent: seq 1, index 0.
APPROVAL = intent_id(b"acct-5", 1, 0)


def _script(answer: bytes) -> Script:
    script = Script().events(("acct-5", URGENT, 1_000)).watermark(2_000)
    return script.answers(("acct-5", APPROVAL, answer, 3_000))


def test_an_approved_action_emits_its_intent_after_the_answer() -> None:
    run = run_agent(
        agent,
        config(SCRIPTED_MODEL{% if store %}, "memory://hitl-approve"{% endif %}),
        _script(b"approve"),
        clock_ms=lambda: 0,
    )

    assert run.errors == []
    approval, act = run.intents
    assert (approval.intent_id, approval.tool) == (APPROVAL, "approval")
    assert approval.awaits_answer
    assert URGENT in approval.prompt
    assert act.tool == "act"
    ((key, output),) = run.outputs
    assert key == b"acct-5"
    assert json.loads(output) == {
        "approved": True,
        "entity": "acct-5",
        "event_id": json.loads(output)["event_id"],
        "intent_id": act.intent_id,
        "label": "act",
    }


def test_a_rejected_action_emits_nothing_but_its_decision() -> None:
    run = run_agent(
        agent,
        config(SCRIPTED_MODEL{% if store %}, "memory://hitl-reject"{% endif %}),
        _script(b"no"),
        clock_ms=lambda: 0,
    )

    assert [intent.tool for intent in run.intents] == ["approval"]
    ((_, output),) = run.outputs
    assert json.loads(output)["approved"] is False


def test_an_unanswered_approval_times_out_to_the_errors_output() -> None:
    script = Script().events(("acct-5", URGENT, 1_000)).processing_time(APPROVAL_TIMEOUT_MS + 1)

    run = run_agent(
        agent,
        config(SCRIPTED_MODEL{% if store %}, "memory://hitl-timeout"{% endif %}),
        script,
        clock_ms=lambda: 0,
    )

    assert run.outputs == []
    assert [error.reason for error in run.errors] == ["suspension_timeout"]
    assert run.errors[0].payload == URGENT
