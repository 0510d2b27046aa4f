{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""Local files in, printed records out: the edges of `make run` and the tests.

The files replay through a TestStream on the streaming DirectRunner, so
event-time TTL and processing-time timers behave as they do in production.
Events are JSON lines `{"key", "text", "time_ms"}` (`time_ms`, the event time
in milliseconds, is what TTL counts){% if hitl %}; answers are `{"key", "intent_id",
"answer"}` and arrive after every event{% endif %}.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Timestamp

{% if hitl %}EVENTS, ANSWERS = "events", "answers"{% else %}EVENTS = "events"{% endif %}


class InvalidInputError(ValueError):
    """A local input file that cannot be read, or a line of it that is not the expected object."""


def read_jsonl(path: Path, fields: Sequence[str]) -> list[dict[str, Any]]:
    """Every line of a JSON-lines file, each checked for the fields the graph needs."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # a typo in the path is a usage error too
        reason = (exc.strerror or type(exc).__name__) if isinstance(exc, OSError) else "not UTF-8"
        raise InvalidInputError(f"{path}: cannot read ({reason})") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        missing = [name for name in fields if not isinstance(record, dict) or name not in record]
        if missing:
            raise InvalidInputError(f"{path}:{number}: missing {', '.join(missing)}")
        records.append(record)
    return records


def _at(ms: int) -> Timestamp:
    return Timestamp(micros=ms * 1000)


def local_stream(events: Path{% if hitl %}, answers: Path | None = None{% endif %}) -> TestStream:
    """Events{% if hitl %}, then answers,{% endif %} from local files, as the streaming runner would see them."""
{%- if hitl %}
    stream = TestStream(output_tags={EVENTS, ANSWERS})
{%- else %}
    stream = TestStream(output_tags={EVENTS})
{%- endif %}
    last_ms = 0
    for record in read_jsonl(events, ("key", "text", "time_ms")):
        event = (str(record["key"]), str(record["text"]).encode())
        time_ms = int(record["time_ms"])
        stream = stream.add_elements([TimestampedValue(event, _at(time_ms))], tag=EVENTS)
        last_ms = max(last_ms, time_ms)
{%- if hitl %}
    stream = stream.advance_watermark_to(_at(last_ms), tag=EVENTS)
    stream = stream.advance_watermark_to(_at(last_ms), tag=ANSWERS)
    for record in read_jsonl(answers, ("key", "intent_id", "answer")) if answers else []:
        answer = (str(record["key"]), str(record["intent_id"]), str(record["answer"]).encode())
        stream = stream.add_elements([TimestampedValue(answer, _at(last_ms))], tag=ANSWERS)
    stream = stream.advance_watermark_to_infinity(tag=EVENTS)
    return stream.advance_watermark_to_infinity(tag=ANSWERS)
{%- else %}
    return stream.advance_watermark_to_infinity(tag=EVENTS)
{%- endif %}


_tally: Counter[str] = Counter()
_reasons: Counter[str] = Counter()
_tally_lock = threading.Lock()


def print_record(kind: str, payload: bytes) -> None:
    """One line per record: its kind (outputs, intents, errors), a space, its JSON.

    Each is also counted, for the run's last line (the DirectRunner runs the
    pipeline in this process, so the counts are the caller's).
    """
    text = payload.decode("utf-8", errors="replace")
    with _tally_lock:
        _tally[kind] += 1
        if kind == "errors":
            try:
                _reasons[str(json.loads(text).get("reason", "?"))] += 1
            except (json.JSONDecodeError, AttributeError):
                _reasons["?"] += 1
    print(kind, text, flush=True)


def reset_tally() -> None:
    """Forget the counts of an earlier run in this process."""
    with _tally_lock:
        _tally.clear()
        _reasons.clear()


def dead_letter_line() -> str:
    """The run's last line: its dead letters by reason."""
    with _tally_lock:
        if not _reasons:
            return "dead letters: none"
        parts = ", ".join(f"{reason} {count}" for reason, count in sorted(_reasons.items()))
        return f"dead letters: {sum(_reasons.values())} ({parts})"


def nothing_succeeded() -> bool:
    """Records were dead-lettered and no activation produced an output or an intent."""
    with _tally_lock:
        return _tally["errors"] > 0 and _tally["outputs"] == 0 and _tally["intents"] == 0


class PrintRecords(beam.PTransform):
    """Print every record of one kind on standard output."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self._kind = kind

    def expand(self, pcoll: beam.PCollection) -> beam.PCollection:
        return pcoll | beam.Map(lambda payload, kind=self._kind: print_record(kind, payload))
