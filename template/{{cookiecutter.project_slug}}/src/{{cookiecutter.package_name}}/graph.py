{%- set store = cookiecutter.longterm_backend != "none" -%}
{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The agent's graph without I/O: keyed, event-timed events in, JSON records out.

The same graph runs on local files (`files.py`) and on Pub/Sub (`pubsub_io.py`);
`pipeline.py` picks the edges from the command line. Every record is one JSON
object, and each kind has one schema wherever it lands (printed or published):

- outputs: the agent's typed decision (`agent.Decision`), as its JSON (`decision_json`);
- intents: `{"intent_id", "entity", "tool", "args", "event_time_ms", "awaits_answer", "prompt"}`;
- errors: `{"entity", "reason", "detail", "event_time_ms", "payload"}` (`payload_b64`
  instead when the payload is not UTF-8) for the agent's dead letters and for input
  the graph cannot use (a message that is not an event, an event with an empty key).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any, NamedTuple

import apache_beam as beam
from beam_agents import ActivationError, AgentConfig{% if store %}, FlushToLongterm{% endif %}, RunAgent
from beam_agents.model import provider_from_spec
from beam_agents.proto import ToolIntent

from {{ cookiecutter.package_name }}.agent import {% if cookiecutter.framework != "plain" %}TOOLS, {% endif %}Decision, agent, decision_json

#: The offline scripted model: local file runs and the tests use it unless told otherwise.
SCRIPTED_MODEL = "py:{{ cookiecutter.package_name }}.agent:scripted_model"
{%- if cookiecutter.model_provider == "openai" %}
#: The model the deployed job calls; the key comes from Secret Manager or an env var.
DEFAULT_MODEL = "openai:gpt-4o-mini?api_key_env=OPENAI_API_KEY"
{%- elif cookiecutter.model_provider == "gemini" %}
#: The model the deployed job calls; the key comes from Secret Manager or an env var.
DEFAULT_MODEL = "gemini:gemini-2.5-flash?api_key_env=GEMINI_API_KEY"
{%- else %}
#: The model the deployed job calls (the scripted one: this project has no provider).
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
#: Idle time after which an entity's working memory is wiped (event time).
TTL_MS = 30 * 60 * 1000
#: The dead-letter reason of input the graph cannot use (the runtime's own word for it).
INVALID_EVENT = "invalid_event"
#: Tag of those dead letters.
INVALID = "invalid"


class Records(NamedTuple):
    """The graph's three outputs, each a PCollection of JSON bytes."""

    outputs: beam.PCollection
    intents: beam.PCollection
    errors: beam.PCollection


{% if hitl -%}
def config(
    model: str = DEFAULT_MODEL,
    longterm: str | None = {% if store %}LOCAL_LONGTERM{% else %}None{% endif %},
    answer_signing_key: str | None = None,
) -> AgentConfig:
    """The agent's configuration; invalid values fail here, before any pipeline exists.

    With `answer_signing_key` (`env:NAME` or a Secret Manager version) only
    answers signed under that key resume an approval; the rest are dead letters.
    """
    return AgentConfig(
        answer_signing_key=answer_signing_key,
{%- else -%}
def config(model: str = DEFAULT_MODEL, longterm: str | None = {% if store %}LOCAL_LONGTERM{% else %}None{% endif %}) -> AgentConfig:
    """The agent's configuration; invalid values fail here, before any pipeline exists."""
    return AgentConfig(
{%- endif %}
        provider_factory=provider_from_spec(model),
        longterm_memory=longterm,
{%- if cookiecutter.framework != "plain" %}
        # The agent's tools, run once per call through the ledger in the long-term store.
        tools=TOOLS,
{%- endif %}
{%- if store %}
        on_expire=FlushToLongterm(),
{%- endif %}
        ttl_ms=TTL_MS,
    )


def scripted_config() -> AgentConfig:
    """The configuration `make eval` scores: the scripted model, so the evaluation is offline."""
    return config(model=SCRIPTED_MODEL)


class RefuseEmptyKeysDoFn(beam.DoFn):
    """`(key, event)` passes; an empty key would run the agent for "nobody": a dead letter."""

    def process(self, element: Any, timestamp: Any = beam.DoFn.TimestampParam) -> Iterator[Any]:
        key, event = element
        if key:
            yield element
            return
        detail = "the event has an empty entity key"
        error = ActivationError.of(b"", INVALID_EVENT, detail, timestamp.micros // 1000, event)
        yield beam.pvalue.TaggedOutput(INVALID, error)


def agent_graph(
    events: beam.PCollection,
    agent_config: AgentConfig,
    *,
{%- if hitl %}
    answers: beam.PCollection | None = None,
{%- endif %}
    invalid: tuple[beam.PCollection, ...] = (),
) -> Records:
    """Run the agent over `(key, event bytes)`; `invalid` holds the edges' own dead letters."""
    keyed = events | "RefuseEmptyKeys" >> beam.ParDo(RefuseEmptyKeysDoFn()).with_outputs(
        INVALID, main="events"
    )
{%- if hitl %}
    result = keyed.events | "RunAgent" >> RunAgent(
        agent, agent_config, output_type=Decision, answers=answers
    )
{%- else %}
    result = keyed.events | "RunAgent" >> RunAgent(agent, agent_config, output_type=Decision)
{%- endif %}
    # result.outputs holds (key, Decision) rows with a Beam schema: a step here can group,
    # filter or write them by field (beam.GroupBy("label"), to_dataframe, WriteToBigQuery).
    errors = (result.errors, keyed[INVALID], *invalid) | "AllErrors" >> beam.Flatten()
    return Records(
        outputs=result.outputs | "OutputJson" >> beam.Map(lambda kv: decision_json(kv[1])),
        intents=result.intents | "IntentJson" >> beam.Map(intent_json),
        errors=errors | "ErrorJson" >> beam.Map(error_json),
    )


def intent_json(intent: ToolIntent) -> bytes:
    """A tool intent as readable JSON: text fields, `args` as the object the agent passed."""
    record = {
        "intent_id": intent.intent_id,
        "entity": _text(intent.entity_key),
        "tool": intent.tool,
        "args": json.loads(intent.args_json) if intent.args_json else {},
        "event_time_ms": intent.event_time_ms,
        "awaits_answer": intent.awaits_answer,
        "prompt": _text(intent.prompt),
    }
    return json.dumps(record, sort_keys=True, ensure_ascii=False).encode()


def error_json(error: ActivationError) -> bytes:
    """A dead letter as readable JSON, with the payload kept (text, or base64 if it is not)."""
    record: dict[str, Any] = {
        "entity": _text(error.entity_key),
        "reason": error.reason,
        "detail": error.detail,
        "event_time_ms": error.event_time_ms,
    }
    try:
        record["payload"] = error.payload.decode("utf-8")
    except UnicodeDecodeError:
        record["payload_b64"] = base64.b64encode(error.payload).decode()
    return json.dumps(record, sort_keys=True, ensure_ascii=False).encode()


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")
