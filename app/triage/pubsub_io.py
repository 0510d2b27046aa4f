"""The triage pipeline's Pub/Sub edges: alerts and answers in, JSON messages out.

The pipeline itself (`app.triage.pipeline`) is I/O-agnostic; this module turns
subscriptions into the keyed, event-timed PCollections it takes, and its
tagged outputs into messages subscribers can filter by attribute.

Inputs. An alert is a JSON object. Its event time is the message attribute
`event_time` (milliseconds since the epoch or RFC 3339; Beam's
`timestamp_attribute`), else the publish time. Its entity key is the
`service` attribute, else the body's `"service"` field. An answer is a JSON
object `{"intent_id": ..., "answer": ...}` keyed the same way; a string
answer is passed on as its UTF-8 bytes, anything else as canonical JSON.
Under an answer signing key (`ReadAnswers(signed=True)`) the whole message
body is the answer bytes instead: the console's signed line, which the
agent's DoFn verifies and opens (`beam_agents.answer_signing`), so the
signature is checked over exactly what the approver signed.
A message that is not a JSON object, or names no service, is not dropped: it
leaves on the `invalid` tag as an `ActivationError` with reason
`invalid_event` and the message's raw bytes as payload, is logged at WARNING
(like every dead letter), and the pipeline publishes it on the errors topic
beside the agent's own dead letters.

Deduplication. On Dataflow, Pub/Sub redeliveries are deduplicated by message
id, and `id_label` (attribute `id`) also drops a message a publisher sent
twice under the same id. The DirectRunner refuses `id_label` (the run fails as
it starts), so `id_label_for(options)` names the attribute only when the
runner is Dataflow; locally every delivery is processed, a redelivered alert
as a new activation (consumers can key on its `alert_id`).

Outputs. Every message body is the JSON record the local run writes to its
files (`app.triage.records`), with string attributes: `entity_key` on all of
them, `tool` on intents, `reason` on errors, `kind` on lifecycle records. A
payload that is not UTF-8 travels base64-encoded as `payload_b64` (an invalid
event's raw bytes among them), so nothing is lost.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any, Final

import apache_beam as beam
from apache_beam.io.gcp.pubsub import PubsubMessage, ReadFromPubSub, WriteToPubSub
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.pvalue import TaggedOutput
from apache_beam.utils.timestamp import Timestamp

from app.triage.decision import Decision
from app.triage.records import error_json, intent_json, lifecycle_json, output_json
from beam_agents import ActivationError
from beam_agents.proto import ToolIntent

__all__ = [
    "EVENT_TIME_ATTRIBUTE",
    "ID_ATTRIBUTE",
    "INVALID",
    "SERVICE_ATTRIBUTE",
    "PublishJson",
    "ReadAlerts",
    "ReadAnswers",
    "error_message",
    "id_label_for",
    "intent_message",
    "lifecycle_message",
    "output_message",
]

SERVICE_ATTRIBUTE: Final = "service"
"""Attribute naming the alert's service (the entity key); else the body's `service`."""
EVENT_TIME_ATTRIBUTE: Final = "event_time"
"""Attribute holding the event time (ms since the epoch or RFC 3339)."""
ID_ATTRIBUTE: Final = "id"
"""Attribute Dataflow deduplicates on (`id_label`); ignored on the DirectRunner."""
INVALID: Final = "invalid"
"""Tag of the `invalid_event` dead letters `ReadAlerts` and `ReadAnswers` emit."""

_INVALID_EVENT: Final = "invalid_event"
_log = logging.getLogger(__name__)
_DATAFLOW_RUNNERS: Final = frozenset({"DataflowRunner", "TestDataflowRunner"})


def id_label_for(options: PipelineOptions) -> str | None:
    """`ID_ATTRIBUTE` when the pipeline runs on Dataflow, else None (local runners refuse it)."""
    runner = options.view_as(StandardOptions).runner
    name = runner if isinstance(runner, str) else type(runner).__name__ if runner else ""
    return ID_ATTRIBUTE if name.rsplit(".", 1)[-1] in _DATAFLOW_RUNNERS else None


class _ReadSubscription(beam.PTransform[beam.pvalue.PBegin, beam.pvalue.PCollection[Any]]):
    """Pull a subscription with event time from its attribute, then parse each message.

    The inner labels (`Pull`, `Parse`) are part of the job's stable transform
    names: `--update` matches on them.
    """

    def __init__(
        self, subscription: str, *, id_label: str | None, parser: beam.DoFn, main_tag: str
    ) -> None:
        super().__init__()
        self._subscription = subscription
        self._id_label = id_label
        self._parser = parser
        self._main_tag = main_tag

    def expand(self, pbegin: beam.pvalue.PBegin) -> Any:
        return (
            pbegin
            | "Pull"
            >> ReadFromPubSub(
                subscription=self._subscription,
                with_attributes=True,
                timestamp_attribute=EVENT_TIME_ATTRIBUTE,
                id_label=self._id_label,
            )
            | "Parse" >> beam.ParDo(self._parser).with_outputs(INVALID, main=self._main_tag)
        )


class ReadAlerts(_ReadSubscription):
    """Alerts from a subscription: main output `(service bytes, body bytes)`, plus `INVALID`."""

    def __init__(self, subscription: str, *, id_label: str | None = None) -> None:
        super().__init__(
            subscription, id_label=id_label, parser=_ParseAlertDoFn(), main_tag="alerts"
        )


class ReadAnswers(_ReadSubscription):
    """Answers from a subscription: `(service bytes, intent_id, answer bytes)`, plus `INVALID`.

    `signed`: the pipeline verifies signed answers, so each answer's bytes
    are its whole message body (the signed envelope), not its `answer` field.
    """

    def __init__(
        self, subscription: str, *, id_label: str | None = None, signed: bool = False
    ) -> None:
        super().__init__(
            subscription,
            id_label=id_label,
            parser=_ParseAnswerDoFn(signed=signed),
            main_tag="answers",
        )


class PublishJson(beam.PTransform[beam.pvalue.PCollection[Any], beam.pvalue.PDone]):
    """Encode each element with `to_message` and publish it on `topic` (projects/P/topics/T)."""

    def __init__(self, topic: str, to_message: Callable[[Any], PubsubMessage]) -> None:
        super().__init__()
        self._topic = topic
        self._to_message = to_message

    def expand(self, pcoll: beam.pvalue.PCollection[Any]) -> beam.pvalue.PDone:
        # The encoder takes the elements as the input types them: a typed RunAgent's outputs
        # are Beam rows, which Beam does not match against the model class an encoder names.
        encode = beam.Map(self._to_message).with_input_types(pcoll.element_type)
        done: beam.pvalue.PDone = (
            pcoll
            | "Encode" >> encode.with_output_types(PubsubMessage)
            | "Publish" >> WriteToPubSub(self._topic, with_attributes=True)
        )
        return done


# --- decoding ------------------------------------------------------------------------------


class _ParseAlertDoFn(beam.DoFn):
    """A message -> `(service, body)`; anything unusable -> an `invalid_event` dead letter."""

    def process(
        self, message: PubsubMessage, timestamp: Any = beam.DoFn.TimestampParam
    ) -> Iterator[Any]:
        parsed = _json_object_with_service(message)
        if isinstance(parsed, str):
            yield _invalid(message, parsed, timestamp)
            return
        service, _ = parsed
        yield service.encode("utf-8"), bytes(message.data)


class _ParseAnswerDoFn(beam.DoFn):
    """A message -> `(service, intent_id, answer)`; anything unusable -> a dead letter."""

    def __init__(self, *, signed: bool = False) -> None:
        super().__init__()
        self._signed = signed

    def process(
        self, message: PubsubMessage, timestamp: Any = beam.DoFn.TimestampParam
    ) -> Iterator[Any]:
        parsed = _json_object_with_service(message)
        if isinstance(parsed, str):
            yield _invalid(message, parsed, timestamp)
            return
        service, body = parsed
        intent_id = body.get("intent_id")
        if not isinstance(intent_id, str) or not intent_id:
            yield _invalid(message, "answer has no string `intent_id`", timestamp)
            return
        if "answer" not in body:
            yield _invalid(message, "answer has no `answer` field", timestamp)
            return
        if self._signed:
            yield service.encode("utf-8"), intent_id, bytes(message.data)
            return
        answer = body["answer"]
        encoded = answer.encode("utf-8") if isinstance(answer, str) else _canonical(answer)
        yield service.encode("utf-8"), intent_id, encoded


def _json_object_with_service(message: PubsubMessage) -> tuple[str, dict[str, Any]] | str:
    """`(service, body)`, or the reason the message is not a usable event."""
    try:
        body = json.loads(bytes(message.data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"body is not UTF-8 JSON: {exc}"
    if not isinstance(body, dict):
        return f"body is JSON {type(body).__name__}, not an object"
    attributes = message.attributes or {}
    service = attributes.get(SERVICE_ATTRIBUTE) or body.get("service")
    if not isinstance(service, str) or not service:
        return f"no `{SERVICE_ATTRIBUTE}` attribute and no string `service` field in the body"
    return service, body


def _invalid(
    message: PubsubMessage, detail: str, timestamp: Timestamp
) -> TaggedOutput[str, ActivationError]:
    attributes = message.attributes or {}
    service = attributes.get(SERVICE_ATTRIBUTE, "")
    event_time_ms = timestamp.micros // 1000
    record = ActivationError.of(
        service.encode("utf-8"), _INVALID_EVENT, detail, event_time_ms, message.data
    )
    # Logged like the runtime's own dead letters (never the payload: it is the sender's data).
    _log.warning(
        "dead letter %s for service %r at event time %d ms: %s",
        _INVALID_EVENT,
        service,
        event_time_ms,
        detail,
    )
    return TaggedOutput(INVALID, record)


# --- encoding ------------------------------------------------------------------------------
# The message bodies are the same JSON records as the local files (`app.triage.records`), so
# a record looks the same wherever it lands; the attributes let subscribers filter.


def output_message(element: tuple[bytes, Decision]) -> PubsubMessage:
    """An agent output (its decision as JSON); attribute `entity_key`."""
    return PubsubMessage(output_json(element), {"entity_key": _text(element[0])})


def intent_message(intent: ToolIntent) -> PubsubMessage:
    """A tool intent; attributes `entity_key` and `tool`."""
    attributes = {"entity_key": _text(intent.entity_key), "tool": intent.tool}
    return PubsubMessage(intent_json(intent), attributes)


def error_message(error: ActivationError) -> PubsubMessage:
    """A dead letter with its payload (text, or base64 as `payload_b64`); attribute `reason`."""
    attributes = {"entity_key": _text(error.entity_key), "reason": error.reason}
    return PubsubMessage(error_json(error), attributes)


def lifecycle_message(event: Any) -> PubsubMessage:
    """A `LifecycleEvent`; attributes `entity_key` and `kind`."""
    attributes = {"entity_key": _text(event.entity_key), "kind": str(event.kind)}
    return PubsubMessage(lifecycle_json(event), attributes)


def _text(value: bytes) -> str:
    """An entity key as an attribute value: UTF-8 text (service ids are), else hex."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.hex()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")
