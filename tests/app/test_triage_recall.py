"""The triage agent recalls its service's similar past incidents, and they change decisions.

The bundled data scripts two services whose history matters and labels the
alerts where it should (`data/labels.jsonl`): `svc-004`'s error-rate spike,
denied as a known flap, comes back twice; `svc-005`'s replication lag,
named as its outage's cause, comes back hours later. The same slice is
replayed with the embedder on and off: only the labelled decisions differ.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from app.triage.agent import EXPIRED_KEY
from app.triage.alerts import Alert
from app.triage.data import (
    DATA_DIR,
    FLAPPING_SERVICE,
    RECURRING_OUTAGE_SERVICE,
    Label,
    read_labels,
)
from app.triage.decision import FOLLOW_UP_OUTCOMES
from app.triage.model import HISTORY_MIN_SCORE, classify_with_history
from app.triage.pipeline import NO_EMBEDDER
from app.triage.replay import ReplayResult, replay
from tests.app.triage_replays import _dump, _provision, slice_of

RECURRING = (FLAPPING_SERVICE, RECURRING_OUTAGE_SERVICE)
HOURS = 6.5
"""Long enough for every labelled recurrence of the two services."""
SLOW_RULES = "py:tests.app.triage_replays:slow_rules"


def _replay(
    tmp_path: Path, embedder: str, *, inflight: int = 256, model: str = "rules"
) -> tuple[ReplayResult, list[tuple[bytes, str, bytes, int, int]]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite+aiosqlite:///{tmp_path / 'longterm.sqlite'}"
    asyncio.run(_provision(uri))
    alerts, answers = slice_of(RECURRING, HOURS)
    result = replay(
        alerts,
        answers,
        longterm_uri=uri,
        embedder_spec=embedder,
        max_inflight_calls=inflight,
        model_spec=model,
    )
    return result, asyncio.run(_dump(uri))


def _decided(result: ReplayResult) -> list[dict[str, Any]]:
    """The alerts' decisions, without the follow-ups' rows (they recall nothing)."""
    decided = map(json.loads, result.outputs)
    return [o for o in decided if o["decision"] not in FOLLOW_UP_OUTCOMES]


def _outputs(result: ReplayResult) -> dict[str, dict[str, Any]]:
    return {o["alert_id"]: o for o in _decided(result)}


@pytest.fixture(scope="module")
def labels() -> list[Label]:
    found = read_labels(DATA_DIR / "labels.jsonl")
    assert {label.scenario for label in found} == {"flap_repeat", "outage_recurrence"}
    return found


@pytest.fixture(scope="module")
def with_recall(tmp_path_factory: pytest.TempPathFactory) -> ReplayResult:
    return _replay(tmp_path_factory.mktemp("recall-on"), "fake")[0]


@pytest.fixture(scope="module")
def without_recall(tmp_path_factory: pytest.TempPathFactory) -> ReplayResult:
    return _replay(tmp_path_factory.mktemp("recall-off"), NO_EMBEDDER)[0]


@pytest.mark.pipeline
def test_recall_gives_each_labelled_recurrence_the_class_its_history_calls_for(
    with_recall: ReplayResult, labels: list[Label]
) -> None:
    outputs = _outputs(with_recall)

    for label in labels:
        decided = outputs[label.alert_id]
        assert decided["class"] == label.expected_class, decided
        effect = "downgraded" if label.scenario == "flap_repeat" else "escalated"
        assert decided["history"] == effect
        named = decided["reason"].split(" ")
        recalled = {r["key"] for r in decided["recalled"]}
        assert recalled & set(named), "the reason names an incident that was recalled"
    escalated = outputs[next(x for x in labels if x.scenario == "outage_recurrence").alert_id]
    assert escalated["decision"] == "paged"  # the on-call approved the escalated page


@pytest.mark.pipeline
def test_with_the_embedder_off_the_same_alerts_keep_their_message_class(
    without_recall: ReplayResult, labels: list[Label]
) -> None:
    outputs = _outputs(without_recall)
    timed_out = {
        json.loads(e["payload"])["alert_id"]
        for e in map(json.loads, without_recall.errors)
        if e["reason"] == "suspension_timeout"
    }

    for label in labels:
        if label.message_class == "P1":  # it asked for a page nobody answered
            assert label.alert_id in timed_out
            assert label.alert_id not in outputs
        else:
            assert outputs[label.alert_id]["class"] == label.message_class
    assert all("recalled" not in o and "history" not in o for o in outputs.values())


@pytest.mark.pipeline
def test_recall_changes_exactly_the_labelled_decisions(
    with_recall: ReplayResult, without_recall: ReplayResult, labels: list[Label]
) -> None:
    """Off against on, over the same alerts: every other decision is the same."""
    on, off = _outputs(with_recall), _outputs(without_recall)
    changed = {
        alert_id
        for alert_id in on
        if alert_id not in off
        or (on[alert_id]["class"], on[alert_id]["decision"])
        != (off[alert_id]["class"], off[alert_id]["decision"])
    }
    said_changed = {a for a, o in on.items() if o["history"] != "none"}

    assert changed == said_changed == {label.alert_id for label in labels}


@pytest.mark.pipeline
def test_an_alert_recalls_only_its_own_services_records(with_recall: ReplayResult) -> None:
    outputs = _decided(with_recall)
    first_flap = next(o for o in outputs if o["service"] == FLAPPING_SERVICE and o["class"] == "P1")
    earlier_elsewhere = [
        o
        for o in outputs
        if o["service"] == RECURRING_OUTAGE_SERVICE
        and o["event_time_ms"] < first_flap["event_time_ms"]
        and o["decision"] in ("paged", "denied")
    ]

    for decided in outputs:
        for recalled in decided["recalled"]:
            key = recalled["key"]
            assert key == EXPIRED_KEY or key.startswith(f"history/{decided['service']}-"), key
    assert earlier_elsewhere, "the other service had incidents to leak"
    assert first_flap["recalled"] == []


@pytest.mark.pipeline
def test_recall_replays_the_same_bytes_parked_and_with_one_call_in_flight(
    tmp_path: Path,
) -> None:
    serial, serial_rows = _replay(tmp_path / "serial", "fake", inflight=1, model=SLOW_RULES)
    parked, parked_rows = _replay(tmp_path / "parked", "fake", inflight=256, model=SLOW_RULES)

    assert parked.counter("beam_agents.runtime/parks") > 0
    assert parked.outputs == serial.outputs
    assert parked.intents == serial.intents
    assert parked.errors == serial.errors
    assert parked_rows == serial_rows
    assert any(o["history"] != "none" for o in _decided(parked))


def _incident(**fields: object) -> dict[str, object]:
    return {"kind": "incident", "key": "case/svc-9-0001", **fields}


def test_an_incident_below_the_similarity_floor_changes_nothing() -> None:
    denied = _incident(
        message="api: error rate 9% on public endpoints (5xx)",
        decision="denied",
        note="deny: known flap",
        score=HISTORY_MIN_SCORE - 0.01,
    )

    assert classify_with_history("api: error rate 7% on public endpoints (5xx)", [denied]) == (
        "P1",
        "matched 'error rate'",
        "none",
    )


def test_a_denial_that_calls_no_flap_does_not_downgrade_a_repeat() -> None:
    denied = _incident(
        message="api: error rate 9% on public endpoints (5xx)",
        decision="denied",
        note="deny (on-call lead)",
        score=0.9,
    )

    label, _, history = classify_with_history("api: error rate 7% on public endpoints", [denied])

    assert (label, history) == ("P1", "none")


def test_an_outage_whose_note_names_another_cause_does_not_escalate() -> None:
    outage = _incident(
        message="api: full outage: health checks failing in 2 of 3 zones",
        decision="paged",
        note="approve: root cause was disk usage on the primary",
        score=0.9,
    )

    label, _, history = classify_with_history("api: replication lag 300s on shard 2", [outage])

    assert (label, history) == ("P2", "none")


def test_labelled_alerts_have_the_message_class_their_label_says() -> None:
    alerts = {a.alert_id: a for a in _bundled_alerts()}
    from app.triage.model import classify

    for label in read_labels(DATA_DIR / "labels.jsonl"):
        assert classify(alerts[label.alert_id].message)[0] == label.message_class
        assert label.expected_class != label.message_class


def _bundled_alerts() -> list[Alert]:
    from app.triage.alerts import read_alerts

    return read_alerts(DATA_DIR / "alerts.jsonl")
