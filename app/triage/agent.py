"""The triage agent: one per service, deciding what each alert needs.

Working memory of a service (`ctx.memory`):

- `alerts`: a bounded ring of the recent alerts, as compact JSON;
- `summary`: what the tier-2 summarizer folded out of `alerts`;
- `case/<alert_id>`: one scalar per open case (P1 paged, P2 ticket), holding
  the decision and the evidence the agent saw (the alerts before it);
- `profile`: the service's running totals, also kept in long-term memory.

Per alert: rehydrate `profile` from long-term memory if working memory is
empty (the TTL wiped it, or the service is new) — explicitly, since the two memory tiers
are separate: nothing is hydrated behind the agent's back; classify through
`ctx.call_model`, whose answer is a validated `Classification` (an answer
that does not fit it is re-asked once, then the alert is dead-lettered
`output_invalid`: no class is guessed); P1 suspends for a human approval (approved → a
`page_oncall` intent, denied → a note); P2 opens a ticket (`open_ticket`);
P3 and noise are only remembered. Every decision is saved to long-term
memory under `case/<alert_id>`, and `profile` with it. The agent completes
with a typed `Decision`, which the pipeline's outputs carry as a Beam row.

With recall on (the pipeline's embedder), each alert first recalls the
service's past incidents most similar to its message, under `history/`
(`ctx.memory.longterm.recall`): resolved incidents, which the agent saves
there with `text=` (what happened, its class, the outcome and the human's
note), and what the TTL flushed when the service last went idle
(`FlushToLongterm(key="history/working_memory", text="alerts")`). A prefix
of their own keeps each recall's read to those few rows, not every decision
of a busy service. They go into the classification request with their
scores, and the model's answer says whether they changed its class
(`history`). Recall is per service: an entity's records only.

When the pipeline configures the tools (`ctx.tool_names`), a page or a
ticket is also delivered, once, with `ctx.call_tool` (`app.triage.delivery`),
and the id the pager or tracker answered is saved in the case as
`delivered`. The intent is emitted either way: it is the decision's record
on the intents output.

A page or a ticket is followed up (`app.triage.follow_ups`): the agent
schedules `recheck/<alert_id>` `recheck_after_ms` of event time later, the
service's next triaged alert settles it (and cancels the recheck), and a
recheck that runs with its case still open escalates it. A recheck's
activation has `ctx.wake` set and the case as its event, so the agent
branches on it before reading any alert; it asks no model.

The agent imports only beam-agents' public API, and everything it writes is
a function of the event, working memory and replay-cached model answers
(the blind-upsert discipline, docs/memory.md). The two long-term reads that
shape a write are made idempotent the same way: a row already carrying this
activation's seq is this activation's own earlier attempt (a retried bundle
that flushed, then failed to commit). The profile rehydration takes such a
row as the result instead of counting the alert twice; recall leaves it
out, so a retry recalls what the first attempt recalled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.triage.alerts import Alert, canonical_json
from app.triage.decision import AlertOutcome, Decision
from app.triage.delivery import deliver
from app.triage.follow_ups import follow_up, recheck
from app.triage.prompts import CLASSES, MAX_REASON_CHARS, Classification, classify_request
from beam_agents import ActivationContext, Complete, Suspend
from beam_agents.memory import Memory
from beam_agents.proto import MemoryBlob

__all__ = [
    "APPROVAL_TIMEOUT_MS",
    "CASE_PREFIX",
    "EVIDENCE_ITEMS",
    "EXPIRED_KEY",
    "HISTORY_PREFIX",
    "PROFILE_KEY",
    "RECALL_K",
    "RECHECK_AFTER_MS",
    "RING_KEY",
    "RING_MAX_ITEMS",
    "SUMMARY_KEY",
    "triage_agent",
]

RING_KEY = "alerts"
SUMMARY_KEY = "summary"
PROFILE_KEY = "profile"
CASE_PREFIX = "case/"
HISTORY_PREFIX = "history/"
"""Where recallable records live: resolved incidents and what expired."""
EXPIRED_KEY = f"{HISTORY_PREFIX}working_memory"
"""The row the TTL flushes working memory to when recall is on."""
RING_MAX_ITEMS = 64
"""Recent alerts kept verbatim; the summarizer folds all but the newest few."""
EVIDENCE_ITEMS = 48
"""How many recent alerts an open case keeps as the evidence the decision was made on."""
CONTEXT_ITEMS = 8
"""How many recent alerts the model sees beside the summary."""
APPROVAL_TIMEOUT_MS = 15 * 60_000
"""How long a P1 waits for a human before the pipeline escalates it."""
RECHECK_AFTER_MS = 15 * 60_000
"""How long after its alert (event time) a page or a ticket nobody settled is escalated.

The pipeline's default (`triage(recheck_after_ms=...)`); the bundled answers
count the rechecks this delay makes run (`app.triage.data`).
"""
RECALL_K = 3
"""How many similar past incidents the model sees."""
_EXPIRED_ALERTS = 3
"""How many of an expired memory's last alerts a recalled one shows."""
_RESOLVED = ("paged", "denied")
"""Decisions that resolve an incident: a person answered its approval."""


def _new_profile(service: str) -> dict[str, Any]:
    return {
        "service": service,
        "alerts": 0,
        "by_class": {label: 0 for label in CLASSES},
        "first_seen_ms": 0,
        "last_seen_ms": 0,
        "last_seq": 0,
        "rehydrations": 0,
        "rehydrated_at_seq": 0,
        "rehydrated_from_seq": 0,
        "paged": 0,
        "denied": 0,
        "tickets": 0,
    }


async def _load_profile(ctx: ActivationContext, service: str) -> dict[str, Any]:
    """This service's profile: from working memory, or rehydrated from long-term memory."""
    held = ctx.memory.get(PROFILE_KEY)
    if held is not None:
        profile: dict[str, Any] = json.loads(held)
        return profile
    if ctx.memory.keys():
        return _new_profile(service)  # memory survived but lost the profile (tier-1 eviction)
    record = await ctx.memory.longterm.load(PROFILE_KEY)
    if record is None:
        return _new_profile(service)
    profile = json.loads(record.value)
    if record.seq < ctx.seq:  # a genuine rehydration, not our own earlier attempt's row
        profile["rehydrations"] += 1
        profile["rehydrated_at_seq"] = ctx.seq
        profile["rehydrated_from_seq"] = record.seq
    return profile


def _apply(
    profile: dict[str, Any], ctx: ActivationContext, label: str, decision: str, alerts: int = 1
) -> None:
    """Count this activation's alerts into the profile, once: a profile at this seq holds them.

    A storm's alerts (`alerts` > 1) share one class and one decision: one page or ticket.
    """
    if profile["last_seq"] >= ctx.seq:
        return
    profile["alerts"] += alerts
    profile["by_class"][label] += alerts
    profile["first_seen_ms"] = profile["first_seen_ms"] or ctx.now_ms
    profile["last_seen_ms"] = ctx.now_ms
    profile["last_seq"] = ctx.seq
    if decision == "paged":
        profile["paged"] += 1
    elif decision == "denied":
        profile["denied"] += 1
    elif decision == "ticket":
        profile["tickets"] += 1


def _decide(ctx: ActivationContext, label: str, args: dict[str, str]) -> AlertOutcome | Suspend:
    """What this alert needs: an intent, a suspension for approval, or nothing."""
    if label == "P1":
        if ctx.answer is None:
            prompt = canonical_json({"question": "page the on-call engineer?", **args})
            # The deadline is the pipeline's `hitl_timeout_ms` (APPROVAL_TIMEOUT_MS, or the
            # live run's window): the agent does not fix it, the run's clock does.
            return Suspend(prompt=prompt)
        answer = ctx.answer.decode("utf-8", "replace").strip()
        if answer.lower().startswith("approve"):
            ctx.emit_intent("page_oncall", args)
            return "paged"
        return "denied"
    if label == "P2":
        ctx.emit_intent("open_ticket", args)
        return "ticket"
    return "remembered"


def _expired_alerts(value: bytes) -> list[str]:
    """The last alerts of a flushed working memory, as `class message` lines."""
    try:
        ring = Memory(MemoryBlob.FromString(value), now_ms=0).ring(RING_KEY)
    except Exception:  # a row this agent did not write: shown without its alerts
        return []
    shown = []
    for item in ring[-_EXPIRED_ALERTS:]:
        data = json.loads(item)
        shown.append(f"{data.get('class', '?')} {data.get('message', '')}")
    return shown


def _incident_json(key: str, value: bytes, score: float, updated_at_ms: int) -> bytes:
    """One recalled record as the classification request lists it."""
    shown: dict[str, Any] = {"key": key, "score": round(score, 6), "t": updated_at_ms}
    if key != EXPIRED_KEY and not key.startswith(f"{EXPIRED_KEY}/"):
        case = json.loads(value)
        shown["kind"] = "incident"
        for field in ("message", "class", "decision", "note"):
            shown[field] = case.get(field, "")
    else:  # what the TTL flushed when the service went idle
        shown["kind"] = "expired memory"
        shown["alerts"] = _expired_alerts(value)
    return canonical_json(shown)


async def _recall(ctx: ActivationContext, alert: Alert) -> list[bytes]:
    """The service's past incidents most similar to this alert, best first.

    Rows at this activation's seq are its own earlier attempt's (a retried
    bundle that flushed before failing): left out, so every attempt sees the
    same incidents and builds the same request.
    """
    found = await ctx.memory.longterm.recall(alert.message, RECALL_K + 1, prefix=HISTORY_PREFIX)
    past = [r for r in found if r.record.seq < ctx.seq][:RECALL_K]
    return [
        _incident_json(r.record.key, r.record.value, r.score, r.record.updated_at_ms) for r in past
    ]


def _incident_text(alert: Alert, label: str, decision: str, note: str) -> str:
    """What a resolved incident is recalled by: what happened, its class, the outcome."""
    text = f"{alert.message}. Classified {label}, {decision}."
    return f"{text} Note: {note}" if note else text


async def triage_agent(
    ctx: ActivationContext, recall: bool = False, recheck_after_ms: int = RECHECK_AFTER_MS
) -> Complete | Suspend:
    """Triage one alert (or a storm of them, each with its own row), or recheck one case.

    Module level: pickled by reference. Completes with a `Decision`: run it
    with `RunAgent(..., output_type=Decision)`.

    `recall`: recall similar past incidents and save incidents recallable;
    needs an embedder in the pipeline's `AgentConfig` (the pipeline binds it
    with `functools.partial`, as it binds `recheck_after_ms`, the event time
    after its alert a page or a ticket is rechecked).
    """
    if ctx.wake is not None:  # a recheck: its event is the case, not an alert
        return await recheck(ctx, ctx.wake, case_prefix=CASE_PREFIX)
    # One alert, or a storm (`coalesce_max`): the alerts that waited behind the service,
    # decided at once. The first is the one the model is asked about and the case's.
    alerts = [Alert.from_bytes(event) for event in ctx.events]
    alert = alerts[0]
    storm = [each.alert_id for each in alerts] if len(alerts) > 1 else None
    memory = ctx.memory
    profile = await _load_profile(ctx, alert.service)
    recent = memory.ring(RING_KEY)
    incidents: Sequence[bytes] | None = await _recall(ctx, alert) if recall else None
    # A storm's other alerts follow the recent ones the model sees: their class is the question.
    shown = [*recent[-CONTEXT_ITEMS:], *(_storm_item(each) for each in alerts[1:])]
    response = await ctx.call_model(
        classify_request(alert, memory.get(SUMMARY_KEY), shown, incidents)
    )
    classified: Classification = response.parsed
    args = {
        "service": alert.service,
        "alert_id": alert.alert_id,
        "message": alert.message,
        "reason": classified.reason[:MAX_REASON_CHARS],
    }
    if storm is not None:
        args["storm"] = ",".join(storm)
    decision = _decide(ctx, classified.priority, args)
    if isinstance(decision, Suspend):
        return decision  # nothing above is committed; the resumed run recomputes it
    delivered = await deliver(ctx, decision, args)
    case = _case(ctx, alert, classified, decision, delivered)
    if storm is not None:
        case["storm"] = storm
    profile_bytes = _remember(ctx, alerts, case, recent, profile)
    follow_up(ctx, case, recheck_after_ms)
    changed = classified.history != "none"
    recallable = recall and (decision in _RESOLVED or changed)
    _save_longterm(ctx, alert, case, profile_bytes, recallable=recallable)
    outputs = [_output(ctx, each, case, profile, classified, incidents, storm) for each in alerts]
    return Complete.each(outputs) if storm is not None else Complete(output=outputs[0])


def _storm_item(alert: Alert) -> bytes:
    """A storm's alert among the recent alerts the model sees: not classified yet."""
    return canonical_json(
        {
            "alert_id": alert.alert_id,
            "class": "?",
            "message": alert.message,
            "t": alert.event_time_ms,
        }
    )


def _case(
    ctx: ActivationContext,
    alert: Alert,
    classified: Classification,
    decision: AlertOutcome,
    delivered: str,
) -> dict[str, Any]:
    """The decision's record: saved as the case, and what an incident is recalled as."""
    note = ""
    if decision in ("denied", "paged") and ctx.answer is not None:
        note = ctx.answer.decode("utf-8", "replace").strip()[:200]
    case = {
        "alert_id": alert.alert_id,
        "message": alert.message,
        "class": classified.priority,
        "decision": decision,
        "reason": classified.reason[:MAX_REASON_CHARS],
        "note": note,
        "t": ctx.now_ms,
        "seq": ctx.seq,
    }
    if delivered:
        case["delivered"] = delivered
    return case


def _remember(
    ctx: ActivationContext,
    alerts: Sequence[Alert],
    case: dict[str, Any],
    recent: Sequence[bytes],
    profile: dict[str, Any],
) -> bytes:
    """Working memory after the alert: the ring, an open case with its evidence, the profile.

    `alerts` are the activation's (more than one: a storm, whose case is its
    first alert's): each takes its place in the ring, and the profile counts
    them all. Returns the profile's bytes, which long-term memory keeps too.
    """
    memory = ctx.memory
    for each in alerts:
        item = canonical_json(
            {
                "alert_id": each.alert_id,
                "class": case["class"],
                "message": each.message,
                "t": ctx.now_ms,
            }
        )
        memory.append(RING_KEY, item, max_items=RING_MAX_ITEMS)
    if case["decision"] in ("paged", "ticket"):
        evidence = [json.loads(x) for x in recent[-EVIDENCE_ITEMS:]]
        case_key = f"{CASE_PREFIX}{alerts[0].alert_id}"
        memory.set(case_key, canonical_json({**case, "evidence": evidence}))
    _apply(profile, ctx, case["class"], case["decision"], len(alerts))
    profile_bytes = canonical_json(profile)
    memory.set(PROFILE_KEY, profile_bytes)
    return profile_bytes


def _save_longterm(
    ctx: ActivationContext,
    alert: Alert,
    case: dict[str, Any],
    profile_bytes: bytes,
    *,
    recallable: bool,
) -> None:
    """The decision in long-term memory: the case, the incident to recall, the profile."""
    ctx.memory.longterm.save(f"{CASE_PREFIX}{alert.alert_id}", canonical_json(case))
    if recallable:  # recallable from now on
        ctx.memory.longterm.save(
            f"{HISTORY_PREFIX}{alert.alert_id}",
            canonical_json(case),
            text=_incident_text(alert, case["class"], case["decision"], case["note"]),
        )
    ctx.memory.longterm.save(PROFILE_KEY, profile_bytes)


def _output(
    ctx: ActivationContext,
    alert: Alert,
    case: dict[str, Any],
    profile: dict[str, Any],
    classified: Classification,
    incidents: Sequence[bytes] | None,
    storm: list[str] | None = None,
) -> Decision:
    """The alert's decision on the outputs, and what was recalled for it."""
    recalled = None if incidents is None else [json.loads(shown) for shown in incidents]
    return Decision(
        service=alert.service,
        alert_id=alert.alert_id,
        priority=classified.priority,
        decision=case["decision"],
        reason=case["reason"],
        note=case["note"],
        seq=ctx.seq,
        event_time_ms=ctx.now_ms,
        rehydrated=profile["rehydrated_at_seq"] == ctx.seq,
        history=None if recalled is None else classified.history,
        recalled_keys=None if recalled is None else [shown["key"] for shown in recalled],
        recalled_scores=None if recalled is None else [shown["score"] for shown in recalled],
        storm=storm,
    )
