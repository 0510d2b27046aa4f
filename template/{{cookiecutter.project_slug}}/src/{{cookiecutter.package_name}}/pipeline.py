{%- set store = cookiecutter.longterm_backend != "none" -%}
{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The pipeline: events in, the agent, outputs, intents and errors out.

One graph, two kinds of input. `--input FILE` (JSON lines, what `make run`
uses) replays the file through a TestStream on the streaming DirectRunner, so
event-time TTL and processing-time timers behave as they do in production.
`--input_subscription` with the topic flags is what the Dataflow job uses
(Dockerfile, metadata.json, `make deploy`); `--runner DataflowRunner
--dry_run=True` builds that job's graph offline.
{%- if store %}

A store URI with a password is never a job parameter (anyone who can view the
job reads those) nor part of the job's graph (which is staged in a bucket):
`--longterm_secret` names a Secret Manager version holding it, the pipeline
carries `secretmanager://` and that name, and each worker reads the URI when
it opens the store.
{%- endif %}
"""

from __future__ import annotations

import argparse
import functools
import json
{%- if store %}
import re
{%- endif %}
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Timestamp
from beam_agents import ActivationError, AgentConfig{% if store %}, FlushToLongterm{% endif %}, RunAgent
from beam_agents.model import provider_from_spec
from google.protobuf import json_format

from {{ cookiecutter.package_name }}.agent import agent

#: The offline scripted model; `make run` and the tests use it.
SCRIPTED_MODEL = "py:{{ cookiecutter.package_name }}.agent:scripted_model"
{%- if cookiecutter.model_provider == "openai" %}
#: The model the deployed job calls; the key comes from Secret Manager or an env var.
DEFAULT_MODEL = "openai:gpt-4o-mini?api_key_env=OPENAI_API_KEY"
{%- elif cookiecutter.model_provider == "gemini" %}
#: The model the deployed job calls; the key comes from Secret Manager or an env var.
DEFAULT_MODEL = "gemini:gemini-2.5-flash?api_key_env=GEMINI_API_KEY"
{%- else %}
DEFAULT_MODEL = SCRIPTED_MODEL
{%- endif %}
{%- if cookiecutter.longterm_backend == "sqlite" %}
#: A local SQLite file (provisioned by `make run`); SQLite serves one machine only.
LOCAL_LONGTERM = "sqlite+aiosqlite:///out/longterm.sqlite"
{%- elif cookiecutter.longterm_backend in ("postgres", "redis") %}
#: Local runs keep long-term memory in process; the deployed job's workers read the
#: {{ cookiecutter.longterm_backend }} store's URI from Secret Manager (`terraform -chdir=infra
#: output -raw longterm_memory` is `secretmanager://` and the version's name).
LOCAL_LONGTERM = "memory://{{ cookiecutter.package_name }}"
{%- elif store %}
#: Local runs keep long-term memory in process; the deployed job names the
#: {{ cookiecutter.longterm_backend }} store (`terraform -chdir=infra output -raw longterm_memory`).
LOCAL_LONGTERM = "memory://{{ cookiecutter.package_name }}"
{%- endif %}
{%- if store %}
#: What `--longterm_secret` takes: a Secret Manager version's resource name (V: a number or latest).
SECRET_VERSION = re.compile(
    r"projects/[^/\s]+/secrets/[A-Za-z0-9_-]{1,255}/versions/(latest|[0-9]+)"
)
{%- endif %}
#: Idle time after which an entity's working memory is wiped (event time).
TTL_MS = 30 * 60 * 1000
{%- if hitl %}
EVENTS, ANSWERS = "events", "answers"
{%- else %}
EVENTS = "events"
{%- endif %}


class InvalidInputError(ValueError):
    """A line of a local input file that is not the expected JSON object."""
{%- if store %}



def longterm_from_secret(version: str) -> str:
    """The store URI naming a Secret Manager version: the workers read it, not the launcher.

    Nothing is read here, so the password stays out of the graph the launcher builds
    and stages; `infra/` lets only the worker service account read the secret.
    """
    return f"secretmanager://{version}"
{%- endif %}


def config(model: str = DEFAULT_MODEL, longterm: str | None = {% if store %}LOCAL_LONGTERM{% else %}None{% endif %}) -> AgentConfig:
    """The agent's configuration; invalid values fail here, before any pipeline exists."""
    return AgentConfig(
        provider_factory=provider_from_spec(model),
        longterm_memory=longterm,
{%- if store %}
        on_expire=FlushToLongterm(),
{%- endif %}
        ttl_ms=TTL_MS,
    )


def _read_jsonl(path: Path, fields: Sequence[str]) -> list[dict[str, Any]]:
    """Every line of a JSON-lines file, each checked for the fields the graph needs."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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


def local_stream(events: Path{% if hitl %}, answers: Path | None = None{% endif %}) -> TestStream:
    """Events{% if hitl %}, then answers,{% endif %} from local files, as the streaming runner would see them."""
{%- if hitl %}
    stream = TestStream(output_tags={EVENTS, ANSWERS})
{%- else %}
    stream = TestStream(output_tags={EVENTS})
{%- endif %}
    last_ms = 0
    for record in _read_jsonl(events, ("key", "text", "time_ms")):
        event = (str(record["key"]), str(record["text"]).encode())
        stream = stream.add_elements(
            [TimestampedValue(event, Timestamp(micros=int(record["time_ms"]) * 1000))], tag=EVENTS
        )
        last_ms = max(last_ms, int(record["time_ms"]))
{%- if hitl %}
    watermark = Timestamp(micros=last_ms * 1000)
    stream = stream.advance_watermark_to(watermark, tag=EVENTS)
    stream = stream.advance_watermark_to(watermark, tag=ANSWERS)
    for record in _read_jsonl(answers, ("key", "intent_id", "answer")) if answers else []:
        answer = (str(record["key"]), str(record["intent_id"]), str(record["answer"]).encode())
        stream = stream.add_elements([TimestampedValue(answer, watermark)], tag=ANSWERS)
    stream = stream.advance_watermark_to_infinity(tag=EVENTS)
    return stream.advance_watermark_to_infinity(tag=ANSWERS)
{%- else %}
    return stream.advance_watermark_to_infinity(tag=EVENTS)
{%- endif %}


class ParseMessageDoFn(beam.DoFn):
    """Pub/Sub message bytes to `(key, text)`; anything else goes to `invalid`, kept whole."""

    INVALID = "invalid"

    def __init__(self, fields: Sequence[str]) -> None:
        super().__init__()
        self._fields = tuple(fields)

    def process(self, message: bytes) -> Iterator[Any]:
        try:
            record = json.loads(message)
            values = tuple(record[name] for name in self._fields)
        except (ValueError, TypeError, KeyError):
            yield beam.pvalue.TaggedOutput(self.INVALID, message)
            return
        yield (str(values[0]), *(str(v) for v in values[1:-1]), str(values[-1]).encode())


def _invalid_record(message: bytes, reason: str) -> bytes:
    """A dead letter for a message that cannot be parsed, with the message kept."""
    return json.dumps(
        {"reason": reason, "payload": message.decode("utf-8", errors="replace")}
    ).encode()


def _intent_json(intent: Any) -> bytes:
    return json_format.MessageToJson(intent, sort_keys=True, indent=None).encode()


def _error_json(error: ActivationError) -> bytes:
    return json_format.MessageToJson(error.to_proto(), sort_keys=True, indent=None).encode()


def _print(kind: str, payload: bytes) -> None:
    print(kind, payload.decode("utf-8", errors="replace"), flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m {{ cookiecutter.package_name }}.pipeline", description=__doc__.splitlines()[0]
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", type=Path, help="local JSON-lines events {key, text, time_ms}")
    source.add_argument("--input_subscription", help="Pub/Sub subscription of JSON events")
{%- if hitl %}
    parser.add_argument("--answers", type=Path, help="local JSON-lines answers (with --input)")
    parser.add_argument("--answers_subscription", help="Pub/Sub subscription of JSON answers")
{%- endif %}
    parser.add_argument("--outputs_topic", help="Pub/Sub topic for agent outputs")
    parser.add_argument("--intents_topic", help="Pub/Sub topic for tool intents")
    parser.add_argument("--errors_topic", help="Pub/Sub topic for dead letters")
    parser.add_argument(
        "--model", default=DEFAULT_MODEL, help="provider spec (default: %(default)s)"
    )
{%- if store %}
    longterm = parser.add_mutually_exclusive_group()
    longterm.add_argument(
        "--longterm", help=f"long-term store URI (local default: {LOCAL_LONGTERM})"
    )
    longterm.add_argument(
        "--longterm_secret",
        metavar="projects/P/secrets/S/versions/V",
        help="Secret Manager version holding the store URI (for URIs with a password)",
    )
{%- endif %}
    return parser


def build(argv: Sequence[str] | None = None) -> beam.Pipeline:
    """The pipeline for a command line; unknown flags are Beam's pipeline options."""
    parser = _parser()
    args, beam_args = parser.parse_known_args(argv)
    pubsub = args.input_subscription is not None
    topics = (args.outputs_topic, args.intents_topic, args.errors_topic)
    if pubsub and not all(topics):
        parser.error(
            "--input_subscription needs --outputs_topic, --intents_topic and --errors_topic"
        )
{%- if hitl %}
    if args.answers is not None and pubsub:
        parser.error("--answers is a local file; use --answers_subscription with Pub/Sub")
{%- endif %}
{%- if store %}
    if args.longterm_secret is not None and not SECRET_VERSION.fullmatch(args.longterm_secret):
        # The value is not echoed: a malformed name may be the URI itself, password and all.
        parser.error(
            "--longterm_secret must name a Secret Manager version: "
            "projects/P/secrets/S/versions/V, V a number or latest"
        )
    if pubsub and args.longterm is None and args.longterm_secret is None:
        parser.error(
{%- if cookiecutter.longterm_backend in ("postgres", "redis") %}
            "--input_subscription needs --longterm or --longterm_secret "
            "(terraform output longterm_memory)"
{%- elif cookiecutter.longterm_backend == "sqlite" %}
            "--input_subscription needs --longterm or --longterm_secret (a shared SQL store)"
{%- else %}
            "--input_subscription needs --longterm or --longterm_secret "
            "(terraform output longterm_memory)"
{%- endif %}
        )
    if args.longterm_secret is not None:
        longterm = longterm_from_secret(args.longterm_secret)
    else:
        longterm = args.longterm or LOCAL_LONGTERM
    agent_config = config(args.model, longterm)
{%- else %}
    agent_config = config(args.model)
{%- endif %}
    options = PipelineOptions(beam_args)
    options.view_as(StandardOptions).streaming = True
    pipeline = beam.Pipeline(options=options)
    if pubsub:
        parsed = (
            pipeline
            | "ReadEvents" >> beam.io.ReadFromPubSub(subscription=args.input_subscription)
            | "ParseEvents"
            >> beam.ParDo(ParseMessageDoFn(("key", "text"))).with_outputs(
                ParseMessageDoFn.INVALID, main="events"
            )
        )
        events = parsed.events
        invalid = [
            parsed[ParseMessageDoFn.INVALID]
            | "InvalidEvents" >> beam.Map(_invalid_record, "invalid_event")
        ]
{%- if hitl %}
        answers = None
        if args.answers_subscription:
            parsed_answers = (
                pipeline
                | "ReadAnswers" >> beam.io.ReadFromPubSub(subscription=args.answers_subscription)
                | "ParseAnswers"
                >> beam.ParDo(ParseMessageDoFn(("key", "intent_id", "answer"))).with_outputs(
                    ParseMessageDoFn.INVALID, main="answers"
                )
            )
            answers = parsed_answers.answers
            invalid.append(
                parsed_answers[ParseMessageDoFn.INVALID]
                | "InvalidAnswers" >> beam.Map(_invalid_record, "invalid_answer")
            )
{%- endif %}
    else:
        streams = pipeline | "ReadFiles" >> local_stream(args.input{% if hitl %}, args.answers{% endif %})
        events, invalid = streams[EVENTS], []
{%- if hitl %}
        answers = streams[ANSWERS]
{%- endif %}
    result = events | "RunAgent" >> RunAgent(agent, agent_config{% if hitl %}, answers=answers{% endif %})
    outputs = result.outputs | "OutputJson" >> beam.Map(lambda kv: kv[1])
    intents = result.intents | "IntentJson" >> beam.Map(_intent_json)
    errors = result.errors | "ErrorJson" >> beam.Map(_error_json)
    if invalid:
        errors = (errors, *invalid) | "AllErrors" >> beam.Flatten()
    sinks = zip(("Outputs", "Intents", "Errors"), (outputs, intents, errors), topics, strict=True)
    for name, pcoll, topic in sinks:
        if pubsub:
            _ = pcoll | f"Write{name}" >> beam.io.WriteToPubSub(topic)
        else:
            _ = pcoll | f"Print{name}" >> beam.Map(functools.partial(_print, name.lower()))
    return pipeline


def main(argv: Sequence[str] | None = None) -> int:
    """Run the pipeline; a local run waits for the file to be processed."""
    try:
        pipeline = build(argv)
    except (InvalidInputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = pipeline.run()
    if pipeline.options.view_as(StandardOptions).runner in (None, "DirectRunner"):
        result.wait_until_finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
