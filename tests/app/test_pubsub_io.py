"""app.triage.pubsub_io: message encodings, and the transforms against the Pub/Sub emulator."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.io.gcp.pubsub import PubsubMessage
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.utils.timestamp import Timestamp

from app.triage.cli import main as triage_main
from app.triage.decision import Decision, decision_json
from app.triage.pubsub_io import (
    ReadAlerts,
    _ParseAlertDoFn,
    error_message,
    id_label_for,
    intent_message,
    output_message,
)
from beam_agents import ActivationError
from beam_agents.proto import ToolIntent
from tests.app.pubsub_streams import Streams, log_tail, streaming_run

ECHO = Path(__file__).with_name("pubsub_echo_pipeline.py")
RUN_BUDGET_S = 45.0


def test_output_message_is_the_decision_json_with_an_entity_key_attribute() -> None:
    decision = Decision(
        service="checkout",
        alert_id="checkout-0001",
        priority="P2",
        decision="ticket",
        reason="matched 'latency'",
        note="",
        seq=1,
        event_time_ms=5,
        rehydrated=False,
    )
    message = output_message((b"checkout", decision))
    assert message.data == decision_json(decision)
    assert json.loads(message.data)["class"] == "P2"
    assert message.attributes == {"entity_key": "checkout"}


def test_error_message_carries_reason_attribute_and_the_raw_payload() -> None:
    error = ActivationError.of(b"", "invalid_event", "body is not JSON", 1_000, b"\xffnot json")
    message = error_message(error)
    body = json.loads(message.data)
    assert message.attributes == {"entity_key": "", "reason": "invalid_event"}
    assert body["reason"] == "invalid_event"
    assert body["service"] == ""
    assert body["payload_b64"] == "/25vdCBqc29u"
    assert body["event_time_ms"] == 1_000


def test_intent_message_carries_the_tool_attribute_and_decoded_args() -> None:
    intent = ToolIntent(
        intent_id="i-1",
        entity_key=b"checkout",
        seq=3,
        index=0,
        tool="open_ticket",
        args_json=b'{"priority":"P2"}',
        event_time_ms=5,
    )
    message = intent_message(intent)
    assert message.attributes == {"entity_key": "checkout", "tool": "open_ticket"}
    body = json.loads(message.data)
    assert body["args"] == {"priority": "P2"}
    assert (body["intent_id"], body["seq"], body["service"]) == ("i-1", 3, "checkout")


@pytest.mark.parametrize(
    ("runner", "expected"),
    [("DirectRunner", None), ("DataflowRunner", "id"), (None, None)],
)
def test_id_label_is_used_only_on_dataflow(runner: str | None, expected: str | None) -> None:
    args = [f"--runner={runner}"] if runner else []
    assert id_label_for(PipelineOptions(args)) == expected


def test_direct_runner_refuses_id_label_which_is_why_it_is_dataflow_only(
    pubsub_emulator_host: str, tmp_path: Path
) -> None:
    streams = Streams(["alerts"])
    options = PipelineOptions(["--runner=DirectRunner"], streaming=True)
    pipeline = beam.Pipeline(options=options)
    _ = pipeline | ReadAlerts(streams.subscription("alerts"), id_label="id")
    result = pipeline.run()
    with pytest.raises(NotImplementedError, match="id_label"):
        result.wait_until_finish()
    streams.close()


@pytest.mark.pipeline
def test_alerts_and_answers_flow_through_and_malformed_messages_reach_errors_raw(
    pubsub_emulator_host: str, tmp_path: Path
) -> None:
    streams = Streams(["alerts", "answers", "outputs", "errors"])
    argv = [
        str(ECHO),
        f"--alerts={streams.subscription('alerts')}",
        f"--answers={streams.subscription('answers')}",
        f"--outputs={streams.topic('outputs')}",
        f"--errors={streams.topic('errors')}",
    ]
    log = tmp_path / "pipeline.log"
    with streaming_run(argv, log) as run:
        deadline = time.monotonic() + RUN_BUDGET_S
        streams.publish(
            "alerts", b'{"alert_id": "a1", "title": "5xx"}', service="checkout", event_time="1700"
        )
        streams.publish("alerts", b'{"alert_id": "a2", "service": "search"}')
        streams.publish("alerts", b"\xffnot json", service="checkout", event_time="1800")
        streams.publish("alerts", b'{"alert_id": "a3"}', event_time="1900")
        streams.publish("alerts", b"[1, 2]", service="search")
        streams.publish(
            "answers",
            b'{"intent_id": "i-1", "answer": "approve"}',
            service="checkout",
            event_time="2000",
        )
        streams.publish("answers", b'{"answer": "approve"}', service="checkout")
        outputs = streams.pull_until("outputs", 3, deadline=deadline, alive=run)
        errors = streams.pull_until("errors", 4, deadline=deadline, alive=run)
    assert len(outputs) == 3, log_tail(log)
    assert len(errors) == 4, log_tail(log)

    by_key: dict[str, list[dict[str, object]]] = {}
    for message in outputs:
        by_key.setdefault(message.attributes["entity_key"], []).append(message.json())
    checkout = sorted(by_key["checkout"], key=lambda o: o["event_time_ms"])
    assert checkout[0] == {"event_time_ms": 1700, "alert": {"alert_id": "a1", "title": "5xx"}}
    assert checkout[1] == {"event_time_ms": 2000, "intent_id": "i-1", "answer": "approve"}
    (search,) = by_key["search"]
    assert search["alert"] == {"alert_id": "a2", "service": "search"}
    assert search["event_time_ms"] > 1_600_000_000_000, "no attribute: the publish time"

    assert {m.attributes["reason"] for m in errors} == {"invalid_event"}
    bodies = sorted((m.json() for m in errors), key=lambda b: b["detail"])
    raw = {b.get("payload", b.get("payload_b64")) for b in bodies}
    assert raw == {"/25vdCBqc29u", '{"alert_id": "a3"}', "[1, 2]", '{"answer": "approve"}'}
    not_json = next(b for b in bodies if "payload_b64" in b)
    assert not_json["service"] == "checkout"
    assert not_json["event_time_ms"] == 1800
    assert "not UTF-8 JSON" in not_json["detail"]
    streams.close()


def test_an_unusable_alert_is_logged_at_warning_like_every_dead_letter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without its payload: the log names the reason, the service and what was wrong."""
    parse = _ParseAlertDoFn()
    message = PubsubMessage(b"{not json, token=hunter2", {"service": "checkout"})

    with caplog.at_level(logging.WARNING, logger="app.triage.pubsub_io"):
        (dead,) = parse.process(message, Timestamp.of(12))

    assert dead.value.reason == "invalid_event"
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "dead letter invalid_event for service 'checkout' at event time 12000 ms" in (
        record.getMessage()
    )
    assert "hunter2" not in record.getMessage()


def test_the_emulator_commands_refuse_to_run_without_the_emulator(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)

    for command in (["emulator-setup"], ["publish-sample"], ["pull", "outputs"]):
        assert triage_main(command) == 2
        assert "PUBSUB_EMULATOR_HOST is not set" in capsys.readouterr().err
