"""End to end on TestStream: the triage pipeline over slices of the bundled data."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from app.triage.agent import APPROVAL_TIMEOUT_MS, EXPIRED_KEY
from app.triage.decision import FOLLOW_UP_OUTCOMES
from app.triage.pipeline import TIER1_TARGET_BYTES
from beam_agents.proto import MemoryBlob
from beam_agents.testing.chaos import fail_commit_once
from tests.app.triage_replays import SCENARIO_HOURS, SCENARIOS, Replayed, ReplayFactory

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def scenarios(replay_slice: ReplayFactory) -> Replayed:
    return replay_slice(SCENARIOS, SCENARIO_HOURS, "scenarios")


def _alert_time(run: Replayed, alert_id: str) -> int:
    (alert,) = [a for a in run.alerts if a.alert_id == alert_id]
    return alert.event_time_ms


def _decided(run: Replayed, service: str) -> list[dict[str, object]]:
    """The service's alert decisions, without its follow-ups' rows."""
    return [o for o in run.outputs(service) if o["decision"] not in FOLLOW_UP_OUTCOMES]


def test_an_approved_p1_pages_the_on_call(scenarios: Replayed) -> None:
    (page,) = scenarios.intents("page_oncall")
    approvals = [i for i in scenarios.intents("approval") if i["service"] == "svc-000"]

    assert (page["service"], page["args"]["alert_id"]) == ("svc-000", "svc-000-0003")
    assert [a["seq"] for a in approvals] == [page["seq"]]
    assert page["index"] == 1  # numbered after the approval that resumed it
    (decision,) = [o for o in _decided(scenarios, "svc-000") if o["alert_id"] == "svc-000-0003"]
    assert decision["decision"] == "paged"


def test_a_denied_p1_leaves_a_note_and_pages_nobody(scenarios: Replayed) -> None:
    (decision,) = [o for o in scenarios.outputs("svc-001") if o["class"] == "P1"]

    assert decision["decision"] == "denied"
    assert str(decision["note"]).startswith("deny")
    tools = {
        i["tool"] for i in map(json.loads, scenarios.result.intents) if i["service"] == "svc-001"
    }
    assert tools == {"approval"}


def test_an_unanswered_p1_times_out_and_the_pipeline_escalates_it(scenarios: Replayed) -> None:
    timeouts = [
        json.loads(e)
        for e in scenarios.result.errors
        if json.loads(e)["reason"] == "suspension_timeout"
    ]
    (escalation,) = [
        i
        for i in scenarios.intents("escalate")
        if i["args"]["reason"] == "no answer to the approval before its deadline"
    ]

    assert [json.loads(t["payload"])["alert_id"] for t in timeouts] == ["svc-002-0002"]
    deadline = _alert_time(scenarios, "svc-002-0002") + APPROVAL_TIMEOUT_MS
    assert timeouts[0]["event_time_ms"] == deadline
    assert escalation["service"] == "svc-002"
    assert escalation["args"]["alert_id"] == "svc-002-0002"
    assert escalation["event_time_ms"] == deadline
    assert not [o for o in scenarios.outputs("svc-002") if o["alert_id"] == "svc-002-0002"]


def test_an_alert_arriving_while_a_p1_waits_is_held_and_triaged_after_the_timeout(
    scenarios: Replayed,
) -> None:
    held = [r["event_time_ms"] for r in scenarios.lifecycle("svc-002", "buffered")]
    (timeout,) = [e for e in map(json.loads, scenarios.result.errors) if e["service"] == "svc-002"]
    (triaged,) = [o for o in scenarios.outputs("svc-002") if o["alert_id"] == "svc-002-0003"]

    assert _alert_time(scenarios, "svc-002-0003") in held
    assert timeout["reason"] == "suspension_timeout"
    assert triaged["seq"] == 3  # after the P1's seq 2, in arrival order
    drained = [r for r in scenarios.lifecycle("svc-002", "activated") if r["seq"] == 3]
    assert [r["detail"] for r in drained] == ["drained"]


def test_ttl_expiry_flushes_memory_and_a_later_alert_rehydrates_the_profile(
    scenarios: Replayed,
) -> None:
    returning = _alert_time(scenarios, "svc-003-0003")
    expiries = [r for r in scenarios.lifecycle("svc-003", "ttl_expired")]
    flushes = scenarios.lifecycle("svc-003", "expire_flushed")
    outputs = {o["alert_id"]: o for o in _decided(scenarios, "svc-003")}
    rows = {key: value for entity, key, value, _, _ in scenarios.rows if entity == b"svc-003"}

    assert any(int(str(r["event_time_ms"])) < returning for r in expiries)
    assert any(int(str(r["event_time_ms"])) < returning for r in flushes)
    assert EXPIRED_KEY in rows  # recall is on: the flush goes where recall reads
    assert [outputs[f"svc-003-000{n}"]["rehydrated"] for n in (1, 2, 3, 4)] == [
        False,
        False,
        True,
        False,
    ]
    profile = json.loads(rows["profile"])
    assert profile["alerts"] == len(outputs)  # counted across the wipes, none twice
    assert profile["rehydrations"] >= 2
    assert {f"case/{alert_id}" for alert_id in outputs} <= set(rows)


def test_lifecycle_records_agree_with_the_runtime_counters(scenarios: Replayed) -> None:
    kinds = Counter(json.loads(line)["kind"] for line in scenarios.result.lifecycle)
    failed = Counter(
        json.loads(line)["detail"]
        for line in scenarios.result.lifecycle
        if json.loads(line)["kind"] == "failed"
    )
    details: Counter[str] = Counter()
    for line in scenarios.result.lifecycle:
        record = json.loads(line)
        if record["kind"] in ("longterm_flushed", "summarized"):
            details[record["kind"]] += int(record["detail"])
    counter = scenarios.result.counter

    assert kinds["activated"] + kinds["resumed"] == counter("beam_agents.runtime/activations")
    assert kinds["suspended"] == counter("beam_agents.runtime/suspensions")
    assert kinds["resumed"] == counter("beam_agents.runtime/resumptions")
    assert kinds["ttl_expired"] == counter("beam_agents.runtime/ttl_wipes")
    assert kinds["expire_flushed"] == counter("beam_agents.runtime/expire_flushes")
    assert details["longterm_flushed"] == counter("beam_agents.runtime/longterm_upserts")
    assert sum(failed.values()) == counter("beam_agents.runtime/errors")
    for reason, count in failed.items():
        assert count == counter(f"beam_agents.runtime/errors_{reason}")
    # Every alert ran once, unless it reached a suspended key without a buffer to wait in;
    # each follow-up that fired ran once besides.
    ran = kinds["activated"] - kinds["wake_fired"] + failed["event_while_suspended"]
    assert ran == scenarios.result.events == counter("beam_agents.local/events")
    assert ran == len(scenarios.alerts)
    # A follow-up due while its service waits is held in the same buffer, and counted there.
    assert kinds["buffered"] == counter("beam_agents.runtime/suspension_buffered")
    assert counter("beam_agents.runtime/wakes_buffered") <= kinds["buffered"]


def test_follow_up_records_agree_with_the_runtime_counters(scenarios: Replayed) -> None:
    kinds = Counter(json.loads(line)["kind"] for line in scenarios.result.lifecycle)
    counter = scenarios.result.counter

    assert kinds["wake_scheduled"] == counter("beam_agents.runtime/wakes_scheduled") > 0
    assert kinds["wake_cancelled"] == counter("beam_agents.runtime/wakes_cancelled") > 0
    assert kinds["wake_fired"] == counter("beam_agents.runtime/wakes_fired") > 0


def test_a_forced_bundle_retry_changes_no_output_intent_lifecycle_record_or_row(
    scenarios: Replayed, replay_slice: ReplayFactory
) -> None:
    # svc-000's fifth alert (its sixth activation: a recheck escalated its page before)
    # comes back after a TTL wipe and rehydrates its profile: the retry reads back the
    # profile row its failed attempt already flushed.
    with fail_commit_once(b"svc-000", 6) as failpoint:
        faulty = replay_slice(SCENARIOS, SCENARIO_HOURS, "faulty")

    assert failpoint.fired
    assert faulty.result.outputs == scenarios.result.outputs
    assert faulty.result.intents == scenarios.result.intents
    assert faulty.result.errors == scenarios.result.errors
    assert faulty.result.lifecycle == scenarios.result.lifecycle
    assert faulty.rows == scenarios.rows


NOISY_HOURS = 4.75
"""Enough of svc-042 for its working memory to reach the soft cap once."""


def test_the_noisy_service_runs_both_compaction_tiers(replay_slice: ReplayFactory) -> None:
    noisy = replay_slice(("svc-042",), NOISY_HOURS, "noisy")
    summaries = noisy.lifecycle("svc-042", "summarized")
    compactions = noisy.lifecycle("svc-042", "compacted")
    rows = {key: value for _, key, value, _, _ in noisy.rows}

    assert summaries, "tier 2 never folded the alert ring"
    assert compactions, "tier 1 never ran"
    assert noisy.lifecycle("svc-042", "soft_cap")
    folded = sum(int(str(r["detail"])) for r in summaries)
    assert folded == noisy.result.counter("beam_agents.runtime/summarizations")
    assert len(noisy.lifecycle("svc-042", "soft_cap")) == noisy.result.counter(
        "beam_agents.memory/soft_cap_warnings"
    )
    first_compaction = min(int(str(r["event_time_ms"])) for r in compactions)
    assert min(int(str(r["event_time_ms"])) for r in summaries) < first_compaction
    for record in compactions:
        evicted = json.loads(str(record["detail"]))
        assert evicted
        assert all(key.startswith("case/") for key in evicted)  # profile, summary protected
        assert int(str(record["memory_bytes"])) <= TIER1_TARGET_BYTES
    # The end of the replay expires the service: its flushed memory holds the summary.
    blob = MemoryBlob.FromString(rows[EXPIRED_KEY])
    keys = {entry.key for entry in blob.entries}
    assert {"alerts", "summary", "profile"} <= keys
    (summary,) = [e.value for e in blob.entries if e.key == "summary"]
    assert b"folded" in summary
