"""A streaming pipeline over app.triage.pubsub_io alone, run by test_pubsub_io in a subprocess.

Alerts and answers are read from their subscriptions and echoed to the outputs topic as
`{"event_time_ms", "alert"}` or `{"event_time_ms", "intent_id", "answer"}` (the element's
event time, to prove where it came from); invalid messages from both reach the errors topic.
Runs until killed: the streaming DirectRunner has no end of input.
"""

from __future__ import annotations

import argparse
import json

import apache_beam as beam
from apache_beam.io.gcp.pubsub import PubsubMessage
from apache_beam.options.pipeline_options import PipelineOptions

from app.triage.pubsub_io import (
    INVALID,
    PublishJson,
    ReadAlerts,
    ReadAnswers,
    error_message,
    id_label_for,
)


def _echo_message(element: tuple[bytes, bytes]) -> PubsubMessage:
    """An echo as the outputs topic carries a decision: its JSON, keyed by `entity_key`."""
    key, body = element
    return PubsubMessage(body, {"entity_key": key.decode()})


class _EchoAlertDoFn(beam.DoFn):  # type: ignore[misc]
    def process(self, element, timestamp=beam.DoFn.TimestampParam):  # type: ignore[no-untyped-def]
        key, body = element
        echo = {"event_time_ms": timestamp.micros // 1000, "alert": json.loads(body)}
        yield key, json.dumps(echo).encode()


class _EchoAnswerDoFn(beam.DoFn):  # type: ignore[misc]
    def process(self, element, timestamp=beam.DoFn.TimestampParam):  # type: ignore[no-untyped-def]
        key, intent_id, answer = element
        echo = {
            "event_time_ms": timestamp.micros // 1000,
            "intent_id": intent_id,
            "answer": answer.decode(),
        }
        yield key, json.dumps(echo).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("alerts", "answers", "outputs", "errors"):
        parser.add_argument(f"--{flag}", required=True)
    args, beam_args = parser.parse_known_args()
    options = PipelineOptions(beam_args, streaming=True)
    id_label = id_label_for(options)
    with beam.Pipeline(options=options) as pipeline:
        alerts = pipeline | "Alerts" >> ReadAlerts(args.alerts, id_label=id_label)
        answers = pipeline | "Answers" >> ReadAnswers(args.answers, id_label=id_label)
        echoed_alerts = alerts.alerts | "AlertAsOutput" >> beam.ParDo(_EchoAlertDoFn())
        echoed_answers = answers.answers | "AnswerAsOutput" >> beam.ParDo(_EchoAnswerDoFn())
        (
            (echoed_alerts, echoed_answers)
            | "AllOutputs" >> beam.Flatten()
            | "Outputs" >> PublishJson(args.outputs, _echo_message)
        )
        (
            (alerts[INVALID], answers[INVALID])
            | "AllInvalid" >> beam.Flatten()
            | "Errors" >> PublishJson(args.errors, error_message)
        )


if __name__ == "__main__":
    main()
