"""Follow-ups: a page or a ticket nobody settles is rechecked after the delay and escalated.

The scripted services play every path: `svc-000`'s approved page and its
returning ticket are the last word of their service for fifteen minutes;
`svc-002`'s last ticket too; `svc-003`'s tickets are settled by the alerts
after them; `svc-002`'s first ticket comes due while its P1 waits for an
approval, behind an alert that settles it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest

from app.triage.agent import RECHECK_AFTER_MS
from app.triage.alerts import Alert
from app.triage.decision import Decision
from app.triage.pipeline import triage
from app.triage.replay import script
from beam_agents.errors import ConfigurationError
from beam_agents.local import run_locally
from beam_agents.testing.chaos import fail_commit_once
from tests.app.triage_replays import (
    SCENARIO_HOURS,
    SCENARIOS,
    Replayed,
    ReplayFactory,
    _provision,
)

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def scenarios(replay_slice: ReplayFactory) -> Replayed:
    return replay_slice(SCENARIOS, SCENARIO_HOURS, "follow-ups")


def _alert(run: Replayed, alert_id: str) -> Alert:
    (alert,) = [a for a in run.alerts if a.alert_id == alert_id]
    return alert


def _wakes(run: Replayed, kind: str, alert_id: str) -> list[dict[str, Any]]:
    """The `kind` records (`wake_scheduled`, ...) of the recheck of `alert_id`."""
    service = alert_id.rsplit("-", 1)[0]
    return [
        r
        for r in run.lifecycle(service, kind)
        if json.loads(str(r["detail"]))["name"] == f"recheck/{alert_id}"
    ]


def _escalations(run: Replayed, alert_id: str) -> list[dict[str, Any]]:
    return [i for i in run.intents("escalate") if i["args"]["alert_id"] == alert_id]


@pytest.mark.parametrize(
    ("alert_id", "priority", "seq", "what"),
    [("svc-000-0003", "P1", 4, "page"), ("svc-002-0004", "P2", 5, "ticket")],
)
def test_an_unacknowledged_p1_or_p2_is_escalated_after_the_delay(
    scenarios: Replayed, alert_id: str, priority: str, seq: int, what: str
) -> None:
    """Nothing of the service arrives in the fifteen minutes after the page or the ticket."""
    alert = _alert(scenarios, alert_id)
    due = alert.event_time_ms + RECHECK_AFTER_MS
    (scheduled,) = _wakes(scenarios, "wake_scheduled", alert_id)
    (fired,) = _wakes(scenarios, "wake_fired", alert_id)
    (escalation,) = _escalations(scenarios, alert_id)
    (row,) = [
        o
        for o in scenarios.outputs(alert.service)
        if o["decision"] == "escalated" and o["alert_id"] == alert_id
    ]
    rows = {
        key: value
        for entity, key, value, _, _ in scenarios.rows
        if entity == alert.service.encode()
    }

    assert json.loads(str(scheduled["detail"]))["due_ms"] == due
    assert (fired["seq"], fired["event_time_ms"]) == (seq, due)
    assert (escalation["seq"], escalation["index"], escalation["event_time_ms"]) == (seq, 0, due)
    assert escalation["args"]["reason"] == f"no later alert settled the {priority} {what} in 15 min"
    assert (row["class"], row["seq"], row["event_time_ms"]) == (priority, seq, due)
    assert row["reason"] == escalation["args"]["reason"]
    case = json.loads(rows[f"case/{alert_id}"])
    assert case["escalated"] == {"t": due, "seq": seq, "reason": row["reason"]}


def test_a_ticket_a_later_alert_settles_is_not_escalated_and_its_recheck_is_cancelled(
    scenarios: Replayed,
) -> None:
    settled_by = _alert(scenarios, "svc-003-0002")
    (cancelled,) = _wakes(scenarios, "wake_cancelled", "svc-003-0001")

    assert (cancelled["seq"], cancelled["event_time_ms"]) == (2, settled_by.event_time_ms)
    assert _wakes(scenarios, "wake_scheduled", "svc-003-0001")
    assert not _wakes(scenarios, "wake_fired", "svc-003-0001")
    assert not _escalations(scenarios, "svc-003-0001")
    assert all(o["decision"] != "escalated" for o in scenarios.outputs("svc-003"))


def test_a_recheck_due_while_a_p1_waits_is_cancelled_by_the_alert_held_before_it(
    scenarios: Replayed,
) -> None:
    """svc-002's first ticket comes due behind its P1's approval and the P3 that settles it."""
    ticket = _alert(scenarios, "svc-002-0001")
    held = [r["event_time_ms"] for r in scenarios.lifecycle("svc-002", "buffered")]
    (cancelled,) = _wakes(scenarios, "wake_cancelled", "svc-002-0001")
    seqs = {
        o["alert_id"]: o["seq"]
        for o in scenarios.outputs("svc-002")
        if o["decision"] != "escalated"
    }

    assert ticket.event_time_ms + RECHECK_AFTER_MS in held  # the wake waited in the buffer
    assert cancelled["seq"] == seqs["svc-002-0003"] == 3  # the held P3 ran first and settled it
    assert not _wakes(scenarios, "wake_fired", "svc-002-0001")
    assert seqs["svc-002-0004"] == 4  # no recheck ran in between
    assert scenarios.result.counter("beam_agents.runtime/wakes_buffered") >= 1


def test_a_recheck_whose_commit_fails_once_escalates_once(
    scenarios: Replayed, replay_slice: ReplayFactory
) -> None:
    """svc-000's activation 4 is the recheck of its page: retried, it changes nothing."""
    with fail_commit_once(b"svc-000", 4) as failpoint:
        faulty = replay_slice(SCENARIOS, SCENARIO_HOURS, "follow-ups-faulty")

    assert failpoint.fired
    assert faulty.result.outputs == scenarios.result.outputs
    assert faulty.result.intents == scenarios.result.intents
    assert faulty.result.lifecycle == scenarios.result.lifecycle
    assert faulty.rows == scenarios.rows


def _one_ticket(tmp_path: Path, recheck_after_ms: int) -> dict[str, list[Any]]:
    """A lone P2 through the pipeline with the recheck delay `recheck_after_ms`."""
    uri = f"sqlite+aiosqlite:///{tmp_path / 'longterm.sqlite'}"
    asyncio.run(_provision(uri))
    message = "x-api: replication lag 90s on shard 1"
    alert = Alert("svc-x", "svc-x-0001", "warning", message, 1_796_025_660_000)

    def build(events: Any, answers: Any) -> dict[str, Any]:
        result = triage(
            events, answers, longterm_uri=uri, replay=True, lifecycle=False,
            embedder_spec="none", recheck_after_ms=recheck_after_ms,
        )  # fmt: skip
        return {"outputs": result.outputs, "intents": result.intents}

    return dict(run_locally(script([alert]), build).outputs)


def test_the_recheck_delay_is_the_pipelines_setting(tmp_path: Path) -> None:
    run = _one_ticket(tmp_path, recheck_after_ms=5 * 60_000)
    decisions: list[Decision] = [d for _, d in run["outputs"]]

    assert [(d.decision, d.event_time_ms) for d in decisions] == [
        ("ticket", 1_796_025_660_000),
        ("escalated", 1_796_025_660_000 + 5 * 60_000),
    ]
    assert decisions[1].reason == "no later alert settled the P2 ticket in 5 min"
    assert sorted(i.tool for i in run["intents"]) == ["escalate", "open_ticket"]


@pytest.mark.parametrize("delay", [0, -60_000, 1.5, "15m"])
def test_a_recheck_delay_that_is_not_a_positive_int_is_refused_by_name(delay: Any) -> None:
    pipeline = beam.Pipeline()
    events = pipeline | beam.Create([("svc-000", b"{}")])

    with pytest.raises(ConfigurationError, match=r"triage\.recheck_after_ms: must be an int >= 1"):
        triage(events, longterm_uri="memory://refused", recheck_after_ms=delay)
