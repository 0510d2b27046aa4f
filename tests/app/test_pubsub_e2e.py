"""The triage app on Pub/Sub, end to end: `python -m app.triage run --input_subscription ...`.

The real CLI runs the streaming pipeline on the DirectRunner, in a subprocess, against the
Pub/Sub emulator and a SQLite long-term store. The test publishes alerts (malformed ones
among them), reads the approval request from the intents topic, answers it, then reads
outputs, intents, errors and lifecycle records back and checks the store's rows. The run
is bounded (RUN_BUDGET_S) and killed at the end: cancelling it would take ~30 s (FACTS).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from app.triage.alerts import Alert, Answer
from app.triage.summary import count_rows
from tests.app.pubsub_streams import Received, Streams, log_tail, streaming_run

#: The streaming DirectRunner pulls Pub/Sub with a 30 s long poll, and a pull on an empty
#: subscription holds the run up until it returns; the malformed answer published first
#: makes the answers' first pull return at once. A run takes ~35 s here.
RUN_BUDGET_S = 60.0
LIFECYCLE = {
    ("checkout", "suspended"),
    ("checkout", "resumed"),
    ("billing", "ttl_expired"),
    ("billing", "expire_flushed"),
    ("search", "longterm_flushed"),
}
HOUR_MS = 3_600_000


def _publish_alert(streams: Streams, alert: Alert) -> None:
    streams.publish(
        "alerts", alert.to_bytes(), service=alert.service, event_time=str(alert.event_time_ms)
    )


def _kinds(lifecycle: list[Received]) -> set[tuple[str, str]]:
    return {(m.attributes["entity_key"], m.attributes["kind"]) for m in lifecycle}


def _by_tool(intents: list[Received]) -> dict[str, list[dict[str, object]]]:
    tools: dict[str, list[dict[str, object]]] = {}
    for message in intents:
        body = message.json()
        assert message.attributes["tool"] == body["tool"]
        assert message.attributes["entity_key"] == body["service"]
        tools.setdefault(str(body["tool"]), []).append(body)
    return tools


@pytest.mark.pipeline
def test_alerts_on_pubsub_are_triaged_approved_and_flushed_and_bad_messages_reach_errors(
    pubsub_emulator_host: str, tmp_path: Path
) -> None:
    streams = Streams(["alerts", "answers", "outputs", "intents", "errors", "lifecycle"])
    longterm = f"sqlite+aiosqlite:///{tmp_path / 'longterm.sqlite'}"
    argv = [
        "-m", "app.triage", "run",
        f"--input_subscription={streams.subscription('alerts')}",
        f"--answers_subscription={streams.subscription('answers')}",
        f"--outputs_topic={streams.topic('outputs')}",
        f"--intents_topic={streams.topic('intents')}",
        f"--errors_topic={streams.topic('errors')}",
        f"--lifecycle_topic={streams.topic('lifecycle')}",
        "--model=rules",
        f"--longterm={longterm}",
        "--provision",
        "--runner=DirectRunner",
    ]  # fmt: skip
    now = int(time.time() * 1000)
    p1 = Alert("checkout", "checkout-1", "critical", "checkout: payments API unreachable", now)
    p2 = Alert("search", "search-1", "warning", "search: latency p99 above 2s", now)
    # Two hours old: its 30-minute TTL is already behind the read's watermark (wall clock),
    # so the service's memory is flushed to the long-term store and wiped at once.
    idle = Alert("billing", "billing-1", "info", "billing: cpu at 71%", now - 2 * HOUR_MS)
    log = tmp_path / "pipeline.log"
    with streaming_run(argv, log) as run:
        deadline = time.monotonic() + RUN_BUDGET_S
        for alert in (p1, p2, idle):
            _publish_alert(streams, alert)
        streams.publish("alerts", b"{not json", service="checkout", event_time=str(now))
        streams.publish("alerts", b'{"alert_id": "x-1", "message": "no service"}')
        streams.publish("answers", b'{"answer": "approve"}', service="checkout")

        first = streams.pull_until("intents", 2, deadline=deadline, alive=run)
        approvals = [m.json() for m in first if m.json().get("awaits_answer")]
        assert len(approvals) == 1, log_tail(log)
        answer = Answer("checkout", str(approvals[0]["intent_id"]), "approve (test)", now + 1)
        streams.publish(
            "answers",
            json.dumps({"answer": answer.answer, "intent_id": answer.intent_id,
                        "service": answer.service}).encode(),
            service="checkout",
            event_time=str(answer.event_time_ms),
        )  # fmt: skip

        intents = first + streams.pull_until("intents", 1, deadline=deadline, alive=run)
        outputs = streams.pull_until("outputs", 3, deadline=deadline, alive=run)
        errors = streams.pull_until("errors", 3, deadline=deadline, alive=run)
        lifecycle = streams.pull_until(
            "lifecycle", 0, deadline=deadline, alive=run, done=lambda got: _kinds(got) >= LIFECYCLE
        )
    streams.close()

    tools = _by_tool(intents)
    assert [i["args"]["alert_id"] for i in tools["open_ticket"]] == ["search-1"], log_tail(log)
    assert [i["args"]["alert_id"] for i in tools["page_oncall"]] == ["checkout-1"]

    decisions = {m.json()["alert_id"]: m.json() for m in outputs}
    assert {k: v["decision"] for k, v in decisions.items()} == {
        "checkout-1": "paged", "search-1": "ticket", "billing-1": "remembered"
    }  # fmt: skip
    assert decisions["checkout-1"]["event_time_ms"] == now
    assert {m.attributes["entity_key"] for m in outputs} == {"checkout", "search", "billing"}

    assert [m.attributes["reason"] for m in errors] == ["invalid_event"] * 3
    payloads = {m.json()["payload"] for m in errors}
    no_service = '{"alert_id": "x-1", "message": "no service"}'
    assert payloads == {"{not json", no_service, '{"answer": "approve"}'}

    assert _kinds(lifecycle) >= LIFECYCLE

    rows = asyncio.run(count_rows(longterm))
    assert rows.get("case/", 0) == 3, rows
    assert rows.get("profile", 0) == 3, rows
