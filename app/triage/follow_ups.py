"""Follow-ups: a page or a ticket nobody settled is looked at again, and escalated.

A page (an approved P1) or a ticket (a P2) opens a case nobody has yet
acknowledged. In the commit that opens it, the agent schedules the wake
`recheck/<alert_id>` (`ctx.schedule`), due the pipeline's recheck delay of
event time after the alert, with the case as its payload, and notes it in
working memory as the service's open follow-up (`follow_up`).

The service's next triaged alert settles that follow-up, whatever its
class, and cancels its recheck (`ctx.cancel`) in the same commit: a less
severe alert says the service has eased; one as severe or worse is a case of
its own, whose decision (a page, a ticket, a person's denial) stands from
then on and carries the follow-up if it has one. So an ongoing problem is
escalated once, from its latest case, rather than once per alert. A P1 that
waits for its approval settles nothing until the person answers, and one
nobody answers commits nothing: the case before it is still escalated when
its recheck comes due, besides the pipeline's own escalation of the P1.

When a recheck runs (`ctx.wake` set, `ctx.event` is the case, not an
alert), the agent looks at the open follow-up in working memory. Still this
case: it escalates, with an `escalate` intent (delivered with
`ctx.call_tool` when the pipeline configures the tool), the escalation
noted in the case in working memory and in long-term memory, and a
`Decision` whose outcome is `escalated`. Anything else means the case was
settled and the cancel did not reach this wake (a wake from before a
change of this rule, say): it completes `resolved` and emits nothing. A
recheck asks no model, so it is a pure function of memory and replays
exactly.

A recheck that runs is an activation of its key and takes the next seq:
the alerts after it have seqs one higher, and so do the approval intents
they ask for (`app.triage.data` counts them for the bundled answers).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, Final

from app.triage.alerts import canonical_json
from app.triage.decision import Decision, FollowUpOutcome
from app.triage.delivery import deliver
from beam_agents import ActivationContext, Complete, Wake

__all__ = [
    "FOLLOWED_UP",
    "FOLLOW_UP_KEY",
    "RECHECK_PREFIX",
    "follow_up",
    "recheck",
    "recheck_name",
]

FOLLOW_UP_KEY: Final = "follow_up"
"""Working memory: the alert id of the service's open follow-up, if it has one."""
RECHECK_PREFIX: Final = "recheck/"
FOLLOWED_UP: Final = frozenset({"paged", "ticket"})
"""Decisions that open a case nobody has acknowledged yet: each is rechecked."""
_MINUTE_MS = 60_000


def recheck_name(alert_id: str) -> str:
    """The wake that rechecks the case of `alert_id`: one per case, unique per service."""
    return f"{RECHECK_PREFIX}{alert_id}"


def follow_up(ctx: ActivationContext, case: dict[str, Any], after_ms: int) -> None:
    """At an alert's commit: settle the service's open follow-up, then open this case's.

    `case` is the decision as long-term memory keeps it; a page or a ticket
    is rechecked `after_ms` of event time after its alert.
    """
    memory = ctx.memory
    held = memory.get(FOLLOW_UP_KEY)
    if held is not None:
        ctx.cancel(recheck_name(held.decode()))
        memory.delete(FOLLOW_UP_KEY)
    if case["decision"] in FOLLOWED_UP:
        alert_id = str(case["alert_id"])
        ctx.schedule(
            recheck_name(alert_id),
            after=timedelta(milliseconds=after_ms),
            payload=canonical_json(case),
        )
        memory.set(FOLLOW_UP_KEY, alert_id.encode())


async def recheck(ctx: ActivationContext, wake: Wake, *, case_prefix: str) -> Complete:
    """The recheck `wake` (`ctx.wake`) came due: escalate its case if still the open follow-up.

    `case_prefix` is where the agent keeps cases (`case/<alert_id>`), in
    both memory tiers.
    """
    case: dict[str, Any] = json.loads(wake.payload)
    alert_id = str(case["alert_id"])
    if ctx.memory.get(FOLLOW_UP_KEY) != alert_id.encode():
        reason = "settled before its recheck ran: nothing to escalate"
        return Complete(output=_decision(ctx, case, "resolved", reason, ""))
    ctx.memory.delete(FOLLOW_UP_KEY)
    minutes = (ctx.now_ms - int(case["t"])) // _MINUTE_MS
    what = "page" if case["decision"] == "paged" else "ticket"
    reason = f"no later alert settled the {case['class']} {what} in {minutes} min"
    service = ctx.entity_key.decode("utf-8", "replace")
    args = {
        "service": service,
        "alert_id": alert_id,
        "message": str(case["message"]),
        "reason": reason,
    }
    ctx.emit_intent("escalate", args)
    delivered = await deliver(ctx, "escalated", args)
    escalation = {"t": ctx.now_ms, "seq": ctx.seq, "reason": reason}
    if delivered:
        escalation["delivered"] = delivered
    _note_escalation(ctx, f"{case_prefix}{alert_id}", case, escalation)
    return Complete(output=_decision(ctx, case, "escalated", reason, delivered))


def _note_escalation(
    ctx: ActivationContext, key: str, case: dict[str, Any], escalation: dict[str, Any]
) -> None:
    """The escalation in the case `key`: in working memory (unless evicted since) and long-term."""
    held = ctx.memory.get(key)
    if held is not None:
        ctx.memory.set(key, canonical_json({**json.loads(held), "escalated": escalation}))
    ctx.memory.longterm.save(key, canonical_json({**case, "escalated": escalation}))


def _decision(
    ctx: ActivationContext,
    case: dict[str, Any],
    outcome: FollowUpOutcome,
    reason: str,
    delivered: str,
) -> Decision:
    """A follow-up's row on the outputs: its case's alert and class, and what came of it."""
    return Decision(
        service=ctx.entity_key.decode("utf-8", "replace"),
        alert_id=str(case["alert_id"]),
        priority=case["class"],
        decision=outcome,
        reason=reason,
        note=delivered,
        seq=ctx.seq,
        event_time_ms=ctx.now_ms,
        rehydrated=False,
    )
