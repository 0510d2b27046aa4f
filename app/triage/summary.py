"""summary.json: the run's figures, counted from what the pipeline itself emitted.

Nothing here re-simulates the run. Each figure is a count over the
pipeline's own records (outputs, intents, errors, lifecycle), a Beam
counter of the run (events in, model calls, cache hits, tokens per model),
or a count of the
long-term store's rows after it; `tests/app` checks that the lifecycle
counts agree with the runtime's Beam counters.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

from app.triage.decision import FOLLOW_UP_OUTCOMES
from app.triage.prompts import CLASSES
from app.triage.replay import ReplayResult
from beam_agents.memory.stores import open_store

__all__ = [
    "RECALL_EXAMPLES",
    "count_rows",
    "dead_letter_line",
    "follow_up_figures",
    "recall_figures",
    "row_prefix",
    "summarize",
]

RECALL_EXAMPLES = 5
"""How many decisions changed by recall summary.json (and the report) show."""
_RUNTIME = "beam_agents.runtime"
_MODEL = "beam_agents.model/"
"""The per-model counters' namespace prefix: `beam_agents.model/<model id>`."""
_FLOW = "beam_agents.model"
"""Flow control's counters (429s, retries, waits) are per process, not per model."""


def row_prefix(key: str) -> str:
    """The family of a long-term row: `case/` for `case/<alert_id>`, else the key itself."""
    head, slash, _ = key.partition("/")
    return head + slash


async def _rows(uri: str) -> AsyncIterator[tuple[bytes, str]]:
    async with open_store(uri) as store:
        async for entity_key, record in store.scan():
            yield entity_key, record.key


async def count_rows(uri: str) -> dict[str, int]:
    """Rows of the long-term store by prefix (`case/`, `profile`, `working_memory`)."""
    counts: Counter[str] = Counter()
    async for _, key in _rows(uri):
        counts[row_prefix(key)] += 1
    return dict(sorted(counts.items()))


def _count(lines: Iterable[bytes], field: str) -> dict[str, int]:
    return dict(sorted(Counter(str(json.loads(line)[field]) for line in lines).items()))


def dead_letter_line(errors: Sequence[bytes]) -> str:
    """The run's last line: its dead letters by reason (every run prints it, none or many)."""
    if not errors:
        return "dead letters: none"
    by_reason = _count(errors, "reason")
    parts = ", ".join(f"{reason} {count:,}" for reason, count in by_reason.items())
    return f"dead letters: {len(errors):,} ({parts})"


def flow_figures(counter: Callable[[str], int]) -> dict[str, int]:
    """What flow control did in the run: 429s met, calls retried, time waited for a turn.

    Zero with the offline model; with a real provider they show whether the
    rate limit holds the quota (429s near zero) and what it cost (the wait).
    """
    return {
        "provider_throttled": counter(f"{_FLOW}/provider_throttled"),
        "rate_limit_retries": counter(f"{_FLOW}/rate_limit_retries"),
        "rate_limit_wait_ms": counter(f"{_FLOW}/rate_limit_wait_ms"),
        "rate_limit_fallbacks": counter(f"{_FLOW}/rate_limit_fallbacks"),
    }


def _calls_by_model(counters: dict[str, int]) -> dict[str, int]:
    """Calls per model id (the chat model's and the embedder's), from the per-model counters."""
    found = {}
    for name, value in counters.items():
        model, _, counter = name.removeprefix(_MODEL).rpartition("/")
        if name.startswith(_MODEL) and counter == "model_calls":
            found[model] = value
    return dict(sorted(found.items()))


def _tokens(counters: dict[str, int]) -> dict[str, dict[str, int]]:
    """Input and output tokens per model id, from the runtime's per-model counters."""
    by_model: dict[str, dict[str, int]] = {}
    for name, value in counters.items():
        if not name.startswith(_MODEL):
            continue
        model, _, counter = name[len(_MODEL) :].rpartition("/")
        if counter in ("input_tokens", "output_tokens"):
            by_model.setdefault(model, {"input_tokens": 0, "output_tokens": 0})[counter] = value
    return dict(sorted(by_model.items()))


def follow_up_figures(
    kinds: Mapping[str, int], decided: Sequence[dict[str, Any]]
) -> dict[str, int]:
    """What the follow-ups did: rechecks scheduled, settled (cancelled), run, and escalated.

    Scheduled, fired and cancelled are the runtime's lifecycle records
    (`wake_scheduled`, `wake_fired`, `wake_cancelled`); the escalations are
    the follow-ups' own rows on the outputs (outcome `escalated`).
    """
    outcomes = Counter(d["decision"] for d in decided if d["decision"] in FOLLOW_UP_OUTCOMES)
    return {
        "follow_ups_scheduled": kinds["wake_scheduled"],
        "follow_ups_cancelled": kinds["wake_cancelled"],
        "follow_ups_fired": kinds["wake_fired"],
        "escalated_by_follow_up": outcomes["escalated"],
        "follow_ups_found_settled": outcomes["resolved"],
    }


def storm_figures(decided: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Storms: activations that decided several alerts at once, and the alerts they decided.

    A storm's rows share its service and seq; each lists the storm's alert ids.
    """
    storms = {(d["service"], d["seq"]): len(d["storm"]) for d in decided if "storm" in d}
    return {"storms_coalesced": len(storms), "alerts_in_storms": sum(storms.values())}


def recall_figures(outputs: Sequence[bytes]) -> dict[str, Any]:
    """What recall did: alerts that recalled, incidents recalled, decisions it changed.

    `decisions_changed_by_recall` counts the alerts whose class the model
    said past incidents changed (`history`); the first `RECALL_EXAMPLES` of
    them, in output order, are listed with what was recalled. Counted from
    the outputs, not from the runtime's recall counters, which a parked
    activation's re-run adds to again.
    """
    decided = [json.loads(line) for line in outputs]
    recalling = [d for d in decided if "recalled" in d]
    changed = [d for d in recalling if d.get("history", "none") != "none"]
    effects = Counter(str(d["history"]) for d in changed)
    examples = [
        {
            "service": d["service"],
            "alert_id": d["alert_id"],
            "history": d["history"],
            "class": d["class"],
            "decision": d["decision"],
            "reason": d["reason"],
            "recalled": d["recalled"],
        }
        for d in changed[:RECALL_EXAMPLES]
    ]
    return {
        "recall_alerts": len(recalling),
        "recalled_incidents": sum(len(d["recalled"]) for d in recalling),
        "alerts_with_history": sum(1 for d in recalling if d["recalled"]),
        "decisions_changed_by_recall": len(changed),
        "escalated_by_recall": effects["escalated"],
        "downgraded_by_recall": effects["downgraded"],
        "recall_examples": examples,
    }


def summarize(
    result: ReplayResult,
    rows_by_prefix: dict[str, int],
    deliveries: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Every figure of summary.json, in a stable key order.

    `deliveries` are what the demo's receiver recorded (none when nothing was
    delivered): `duplicate_deliveries` counts requests whose `Idempotency-Key`
    had arrived before, and `tool_retries` the tool calls a retried or re-run
    activation got back from the replay cache or the ledger instead of
    delivering them again (a parked activation's re-run replays them too).
    """
    kinds = Counter(json.loads(line)["kind"] for line in result.lifecycle)
    decided = [json.loads(line) for line in result.outputs]
    decisions = Counter(d["decision"] for d in decided)
    # The class of each triaged alert: a follow-up's row repeats its case's class.
    outcomes = Counter(d["class"] for d in decided if d["decision"] not in FOLLOW_UP_OUTCOMES)
    errors_by_reason = _count(result.errors, "reason")
    services = {d["service"] for d in decided}
    tokens = _tokens(result.counters)
    return {
        "events": result.events,
        "services": len(services),
        "activations": kinds["activated"] + kinds["resumed"],
        "completions": kinds["completed"],
        "model_calls": result.counter(f"{_RUNTIME}/model_calls"),
        "model_calls_by_model": _calls_by_model(result.counters),
        "cache_hits": result.counter(f"{_RUNTIME}/model_cache_hits"),
        "input_tokens": sum(t["input_tokens"] for t in tokens.values()),
        "output_tokens": sum(t["output_tokens"] for t in tokens.values()),
        "tokens_by_model": tokens,
        "tier1_compactions": kinds["compacted"],
        "tier2_summaries": kinds["summarized"],
        "soft_cap_crossings": kinds["soft_cap"],
        "ttl_expiries": kinds["ttl_expired"],
        "expire_flushes": kinds["expire_flushed"],
        "longterm_flushes": kinds["longterm_flushed"],
        "longterm_rows": sum(rows_by_prefix.values()),
        "longterm_rows_by_prefix": rows_by_prefix,
        "suspensions": kinds["suspended"],
        "resumptions": kinds["resumed"],
        "approved": decisions["paged"],
        "denied": decisions["denied"],
        "timed_out": errors_by_reason.get("suspension_timeout", 0),
        "buffered": kinds["buffered"],
        **follow_up_figures(kinds, decided),
        **storm_figures(decided),
        "intents": len(result.intents),
        "intents_by_tool": _count(result.intents, "tool"),
        "deliveries": len(deliveries),
        "duplicate_deliveries": sum(1 for d in deliveries if d["duplicate"]),
        "tool_retries": result.counter(f"{_RUNTIME}/tool_calls_replayed"),
        **flow_figures(result.counter),
        "errors": len(result.errors),
        "errors_by_reason": errors_by_reason,
        "outcomes": {label: outcomes[label] for label in CLASSES},
        **recall_figures(result.outputs),
        "lifecycle_by_kind": dict(sorted(kinds.items())),
    }
