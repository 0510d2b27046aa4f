{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""Pub/Sub in, Pub/Sub out: the edges of the deployed job.

An event is a JSON object `{"key", "text"}`{% if hitl %}; an answer is `{"key", "intent_id", "answer"}`{% endif %}.
Event time (what TTL counts) is the message attribute `event_time`
(`EVENT_TIME_ATTRIBUTE`: milliseconds since the epoch, or RFC 3339), else the
time Pub/Sub received the message: publishers that know when something
happened should set it. A message that is not such an object is not dropped: it
becomes an `invalid_event` dead letter with the message kept as its payload, and
leaves on the errors topic with the agent's own (one schema, see `graph.py`).
{%- if hitl %}

Under an answer signing key (`ReadMessages(..., whole=True)`) an answer's bytes
are its whole message body rather than its `answer` field: the signed object
`beam-agents console --answer-signing-key` publishes, which the agent's DoFn
verifies over exactly what the approver signed.
{%- endif %}
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import apache_beam as beam
from beam_agents import ActivationError

from {{ cookiecutter.package_name }}.graph import INVALID, INVALID_EVENT

#: The attribute event time is read from.
EVENT_TIME_ATTRIBUTE = "event_time"
EVENT_FIELDS = ("key", "text")
{%- if hitl %}
ANSWER_FIELDS = ("key", "intent_id", "answer")
{%- endif %}


class ParseMessageDoFn(beam.DoFn):
    """Message bytes to `(key, *fields, last field as bytes)`; anything else to `INVALID`.

    `whole`: the last element is the whole message instead of the last field.
    """

    def __init__(self, fields: Sequence[str], *, whole: bool = False) -> None:
        super().__init__()
        self._fields = tuple(fields)
        self._whole = whole

    def process(self, message: bytes, timestamp: Any = beam.DoFn.TimestampParam) -> Iterator[Any]:
        try:
            record = json.loads(message)
            values = tuple(record[name] for name in self._fields)
        except (ValueError, TypeError, KeyError):
            detail = f"not a JSON object with {', '.join(self._fields)}"
            error = ActivationError.of(
                b"", INVALID_EVENT, detail, timestamp.micros // 1000, bytes(message)
            )
            yield beam.pvalue.TaggedOutput(INVALID, error)
            return
        last = bytes(message) if self._whole else str(values[-1]).encode()
        yield (str(values[0]), *(str(v) for v in values[1:-1]), last)


class ReadMessages(beam.PTransform):
    """A subscription's messages, event-timed by `EVENT_TIME_ATTRIBUTE`, parsed into `fields`.

    `whole`: pass each message whole as the last element (a signed envelope).
    """

    def __init__(self, subscription: str, fields: Sequence[str], *, whole: bool = False) -> None:
        super().__init__()
        self._subscription = subscription
        self._fields = tuple(fields)
        self._whole = whole

    def expand(self, pbegin: beam.pvalue.PBegin) -> Any:
        return (
            pbegin
            | "Pull"
            >> beam.io.ReadFromPubSub(
                subscription=self._subscription, timestamp_attribute=EVENT_TIME_ATTRIBUTE
            )
            | "Parse"
            >> beam.ParDo(ParseMessageDoFn(self._fields, whole=self._whole)).with_outputs(
                INVALID, main="parsed"
            )
        )
