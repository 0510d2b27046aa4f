"""An alert storm: alerts that waited behind a service's parked call are decided together."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from app.triage.alerts import Alert, Answer
from app.triage.data import START_MS
from app.triage.decision import FOLLOW_UP_OUTCOMES
from app.triage.replay import replay
from app.triage.report import render_report
from app.triage.summary import count_rows, summarize
from beam_agents import intent_id
from tests.app.triage_replays import _provision

pytestmark = pytest.mark.pipeline

SLOW_RULES = "py:tests.app.triage_replays:slow_rules"
STORM = 5


def _storm() -> list[Alert]:
    """A replication-lag storm on one service, all in one minute, and one alert elsewhere."""
    storm = [
        Alert(
            service="svc-db",
            alert_id=f"svc-db-{n:04d}",
            severity_hint="warning",
            message=f"replication lag {30 + n}s on db-{n}",
            event_time_ms=START_MS + n * 1_000,
        )
        for n in range(1, STORM + 1)
    ]
    calm = Alert(
        service="svc-web",
        alert_id="svc-web-0001",
        severity_hint="info",
        message="cpu at 71% on web-1",
        event_time_ms=START_MS + 2_000,
    )
    return [*storm, calm]


def _triaged(run: dict[str, Any], service: str) -> list[dict[str, Any]]:
    """The service's alert rows (not its follow-ups'), in arrival order."""
    rows = [
        row
        for row in run["outputs"]
        if row["service"] == service and row["decision"] not in FOLLOW_UP_OUTCOMES
    ]
    return sorted(rows, key=lambda row: row["alert_id"])


def _replay(
    tmp_path: Path,
    name: str,
    coalesce_max: int,
    alerts: list[Alert] | None = None,
    answers: list[Answer] | None = None,
    *,
    model: str = SLOW_RULES,
    inflight: int = 256,
) -> dict[str, Any]:
    uri = f"sqlite+aiosqlite:///{tmp_path / name}.sqlite"
    asyncio.run(_provision(uri))
    result = replay(
        _storm() if alerts is None else alerts,
        answers or (),
        longterm_uri=uri,
        model_spec=model,
        max_inflight_calls=inflight,
        coalesce_max=coalesce_max,
    )
    return {
        "outputs": [json.loads(line) for line in result.outputs],
        "intents": [json.loads(line) for line in result.intents],
        "errors": result.errors,
        "summary": summarize(result, asyncio.run(count_rows(uri))),
        "lifecycle": result.lifecycle,
    }


def test_a_storm_behind_a_parked_call_is_decided_by_one_activation_with_a_row_per_alert(
    tmp_path: Path,
) -> None:
    run = _replay(tmp_path, "storm", coalesce_max=8)

    assert run["errors"] == []
    rows = _triaged(run, "svc-db")
    assert [row["alert_id"] for row in rows] == [a.alert_id for a in _storm()[:STORM]]
    # The alerts that arrived while the service's call was parked waited behind it (their
    # `buffered` records), and one activation decided them: one seq, one class, one
    # decision, a row for each alert naming the storm. Which alerts waited is the
    # runner's schedule; that those and only those form the storm is the runtime's.
    waited = sum(
        1
        for line in run["lifecycle"]
        if (record := json.loads(line))["kind"] == "buffered" and record["service"] == "svc-db"
    )
    assert waited >= 2
    alone, storm = rows[: STORM - waited], rows[STORM - waited :]
    storm_ids = [row["alert_id"] for row in storm]
    assert all("storm" not in row for row in alone)
    assert all(row["storm"] == storm_ids for row in storm)
    assert len({row["seq"] for row in storm}) == 1
    assert storm[0]["seq"] == alone[-1]["seq"] + 1
    assert {(row["class"], row["decision"]) for row in storm} == {("P2", "ticket")}
    # One ticket for the storm, one for each alert decided alone.
    tickets = [i for i in run["intents"] if i["tool"] == "open_ticket"]
    assert len(tickets) == len(alone) + 1
    (storm_ticket,) = (i for i in tickets if i["args"]["alert_id"] == storm_ids[0])
    assert storm_ticket["args"]["storm"] == ",".join(storm_ids)
    # The other service decided its one alert alone.
    assert all("storm" not in row for row in _triaged(run, "svc-web"))

    summary = run["summary"]
    assert (summary["storms_coalesced"], summary["alerts_in_storms"]) == (1, waited)
    # Every alert is counted into the outcomes, the storm's included.
    assert summary["outcomes"]["P2"] == STORM
    page = render_report(summary, run["lifecycle"])
    assert 'title="summary.json: storms_coalesced"><b>1</b>' in page


def test_without_coalescing_the_same_storm_is_decided_one_alert_at_a_time(
    tmp_path: Path,
) -> None:
    run = _replay(tmp_path, "one-by-one", coalesce_max=1)

    rows = _triaged(run, "svc-db")
    assert len(rows) == STORM
    assert all("storm" not in row for row in rows)
    assert len({row["seq"] for row in rows}) == STORM
    summary = run["summary"]
    assert (summary["storms_coalesced"], summary["alerts_in_storms"]) == (0, 0)
    assert summary["outcomes"]["P2"] == STORM


def test_a_p1_storm_held_behind_an_approval_asks_one_approval_and_pages_once(
    tmp_path: Path,
) -> None:
    minute = 60_000
    outage = Alert("svc-api", "svc-api-0001", "critical", "outage of checkout", START_MS)
    storm = [
        Alert("svc-api", f"svc-api-{n:04d}", "critical", f"error rate {10 + n}% on api-{n}", t)
        for n, t in (
            (2, START_MS + 2 * minute),
            (3, START_MS + 3 * minute),
            (4, START_MS + 4 * minute),
        )
    ]
    # The outage's approval (seq 1) comes after the storm arrived; the storm's (seq 2) after.
    answers = [
        Answer("svc-api", intent_id(b"svc-api", 1, 0), "approve", START_MS + 6 * minute),
        Answer("svc-api", intent_id(b"svc-api", 2, 0), "approve: one page", START_MS + 8 * minute),
    ]
    # The rules model answers at once, so no call parks: the storm waits only behind the
    # approval.
    run = _replay(tmp_path, "p1", 8, [outage, *storm], answers, model="rules", inflight=1)

    assert run["errors"] == []
    rows = _triaged(run, "svc-api")
    assert [(row["alert_id"], row["seq"], row["decision"]) for row in rows] == [
        ("svc-api-0001", 1, "paged"),
        ("svc-api-0002", 2, "paged"),
        ("svc-api-0003", 2, "paged"),
        ("svc-api-0004", 2, "paged"),
    ]
    storm_ids = [alert.alert_id for alert in storm]
    assert all(row["storm"] == storm_ids for row in rows[1:])
    assert {row["note"] for row in rows[1:]} == {"approve: one page"}
    pages = [i for i in run["intents"] if i["tool"] == "page_oncall"]
    assert [page["args"].get("storm") for page in pages] == [None, ",".join(storm_ids)]
    summary = run["summary"]
    assert (summary["suspensions"], summary["approved"]) == (2, 4)
    assert (summary["storms_coalesced"], summary["alerts_in_storms"]) == (1, 3)
