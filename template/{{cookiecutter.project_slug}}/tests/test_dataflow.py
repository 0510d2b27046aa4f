{%- set store = cookiecutter.longterm_backend != "none" -%}
{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The Dataflow job's graph, built offline (`--dry_run=True` never reaches Google Cloud)."""

from __future__ import annotations

import pytest
from apache_beam.utils.timestamp import Timestamp
from beam_agents import TelemetryOptions

{% if hitl -%}
from {{ cookiecutter.package_name }} import pipeline as pipeline_module
{% endif -%}
from {{ cookiecutter.package_name }}.graph import INVALID
from {{ cookiecutter.package_name }}.pipeline import build, main
{%- if hitl %}
from {{ cookiecutter.package_name }}.pubsub_io import (
    ANSWER_FIELDS,
    EVENT_TIME_ATTRIBUTE,
    ParseMessageDoFn,
)
{%- else %}
from {{ cookiecutter.package_name }}.pubsub_io import EVENT_TIME_ATTRIBUTE, ParseMessageDoFn
{%- endif %}

P = "projects/{{ cookiecutter.gcp_project }}"
DATAFLOW = [
    "--input_subscription={P}/subscriptions/events",
{%- if hitl %}
    "--answers_subscription={P}/subscriptions/answers",
{%- endif %}
    "--outputs_topic={P}/topics/outputs",
    "--intents_topic={P}/topics/intents",
    "--errors_topic={P}/topics/errors",
{%- if cookiecutter.longterm_backend in ("sqlite", "postgres") %}
    "--longterm=postgresql+asyncpg://app@127.0.0.1:5432/memory",
{%- elif cookiecutter.longterm_backend == "redis" %}
    "--longterm=rediss://127.0.0.1:6378/0",
{%- elif cookiecutter.longterm_backend == "bigtable" %}
    "--longterm=bigtable://{{ cookiecutter.gcp_project }}/memory/beam-agents-longterm",
{%- elif cookiecutter.longterm_backend == "firestore" %}
    "--longterm=firestore://{{ cookiecutter.gcp_project }}/beam_agents_longterm",
{%- endif %}
    "--runner=DataflowRunner",
    "--dry_run=True",
    "--project={{ cookiecutter.gcp_project }}",
    "--region={{ cookiecutter.gcp_region }}",
    "--temp_location=gs://{{ cookiecutter.project_slug }}-temp/tmp",
]


def _dataflow_args() -> list[str]:
    return [arg.replace("{P}", P) for arg in DATAFLOW]


def test_the_dataflow_job_graph_builds_offline({% if cookiecutter.model_provider != "fake" %}monkeypatch: pytest.MonkeyPatch{% endif %}) -> None:
{%- if cookiecutter.model_provider != "fake" %}
    # beam-agents 0.1 builds the provider once while the graph is validated, which
    # reads the key; the launcher needs it then (a placeholder is enough offline).
    monkeypatch.setenv("{{ cookiecutter.model_provider | upper }}_API_KEY", "placeholder-not-a-key")
{%- endif %}
    pipeline = build(_dataflow_args())
    pipeline.run()

    graph = pipeline.runner.proto_pipeline
    urns = [t.spec.urn for t in graph.components.transforms.values()]
    assert urns.count("beam:transform:pubsub_read:v1") == {% if hitl %}2{% else %}1{% endif %}
    assert urns.count("beam:transform:pubsub_write:v1") == 3
    assert "beam:requirement:pardo:stateful:v1" in graph.requirements


OTLP_ENDPOINT = "http://10.128.0.9:4318/v1/traces"


def test_the_job_hands_otlp_endpoint_to_its_workers({% if cookiecutter.model_provider != "fake" %}monkeypatch: pytest.MonkeyPatch{% endif %}) -> None:
{%- if cookiecutter.model_provider != "fake" %}
    monkeypatch.setenv("{{ cookiecutter.model_provider | upper }}_API_KEY", "placeholder-not-a-key")
{%- endif %}
    pipeline = build([*_dataflow_args(), f"--otlp_endpoint={OTLP_ENDPOINT}"])
    pipeline.run()

    telemetry = pipeline.options.view_as(TelemetryOptions)
    assert telemetry.otlp_endpoint == OTLP_ENDPOINT
    assert telemetry.otlp_service_name == "{{ cookiecutter.project_slug }}"


ENTITY_HASH_SECRET = "projects/{{ cookiecutter.gcp_project }}/secrets/entity-hash/versions/1"


def test_the_job_hands_the_entity_hash_secret_to_its_workers({% if cookiecutter.model_provider != "fake" %}
    monkeypatch: pytest.MonkeyPatch,
{% endif %}) -> None:
    """The key spans hash entity keys under: a pipeline option each worker reads."""
{%- if cookiecutter.model_provider != "fake" %}
    monkeypatch.setenv("{{ cookiecutter.model_provider | upper }}_API_KEY", "placeholder-not-a-key")
{%- endif %}
    pipeline = build([*_dataflow_args(), f"--entity_hash_secret={ENTITY_HASH_SECRET}"])
    pipeline.run()

    assert pipeline.options.view_as(TelemetryOptions).entity_hash_secret == ENTITY_HASH_SECRET
{%- if hitl %}


ANSWER_SIGNING_SECRET = "projects/{{ cookiecutter.gcp_project }}/secrets/answer-signing/versions/1"


def test_the_job_verifies_answers_under_the_answer_signing_secret({% if cookiecutter.model_provider != "fake" %}
    monkeypatch: pytest.MonkeyPatch,
{% endif %}) -> None:
{%- if cookiecutter.model_provider != "fake" %}
    monkeypatch.setenv("{{ cookiecutter.model_provider | upper }}_API_KEY", "placeholder-not-a-key")
{%- endif %}
    args = [*_dataflow_args(), f"--answer_signing_secret={ANSWER_SIGNING_SECRET}"]
    parser = pipeline_module._parser()
    assert pipeline_module._config(parser.parse_known_args(args)[0]).answer_signing_key == (
        ANSWER_SIGNING_SECRET
    )
    pipeline = build(args)
    pipeline.run()

    labels = {t.unique_name for t in pipeline.runner.proto_pipeline.components.transforms.values()}
    assert "ReadAnswers" in labels


def test_a_signed_answer_message_reaches_the_agent_whole() -> None:
    """The signature covers the approver too: the agent gets the message, not `answer`."""
    message = b'{"key": "acct-1", "intent_id": "i-1", "answer": "approve", "approver": "a", '
    message += b'"signature": "00"}'
    at = Timestamp.of(7)

    assert list(ParseMessageDoFn(ANSWER_FIELDS, whole=True).process(message, at)) == [
        ("acct-1", "i-1", message)
    ]
    assert list(ParseMessageDoFn(ANSWER_FIELDS).process(message, at)) == [
        ("acct-1", "i-1", b"approve")
    ]


def test_an_answer_signing_secret_on_a_local_run_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build(["--input=data/events.jsonl", f"--answer_signing_secret={ANSWER_SIGNING_SECRET}"])

    assert "--answer_signing_secret is for a Pub/Sub run" in capsys.readouterr().err
{%- endif %}


def test_an_otlp_endpoint_that_is_no_url_is_refused_before_the_job_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*_dataflow_args(), "--otlp_endpoint=otel-collector:4318"]) == 2
    assert "otlp_endpoint: must be an http(s) URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("--errors_topic", "needs --outputs_topic, --intents_topic and --errors_topic"),
{%- if store %}
        ("--longterm", "needs --longterm"),
{%- endif %}
    ],
)
def test_a_dataflow_job_without_a_required_flag_is_refused(
    missing: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [arg for arg in _dataflow_args() if not arg.startswith(missing)]

    with pytest.raises(SystemExit):
        build(args)

    assert message in capsys.readouterr().err
{%- if store %}


@pytest.mark.parametrize(
    "secret",
    [
        "rediss://:not-a-real-password@127.0.0.1:6378/0",
        "projects/{{ cookiecutter.gcp_project }}/secrets/longterm",
        "projects/{{ cookiecutter.gcp_project }}/secrets/longterm/versions/v1",
    ],
    ids=["a-uri", "no-version", "bad-version"],
)
def test_a_malformed_longterm_secret_is_refused_without_echoing_it(
    secret: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [arg for arg in _dataflow_args() if not arg.startswith("--longterm")]

    with pytest.raises(SystemExit):
        build([*args, f"--longterm_secret={secret}"])

    err = capsys.readouterr().err
    assert "--longterm_secret must name a Secret Manager version" in err
    assert secret not in err


def test_longterm_and_longterm_secret_together_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    secret = "--longterm_secret=projects/{{ cookiecutter.gcp_project }}/secrets/s/versions/1"

    with pytest.raises(SystemExit):
        build([*_dataflow_args(), secret])

    assert "--longterm_secret: not allowed with argument --longterm" in capsys.readouterr().err
{%- endif %}


def test_pubsub_messages_parse_to_events_and_anything_else_to_a_dead_letter() -> None:
    parse = ParseMessageDoFn(("key", "text"))
    at = Timestamp.of(7)

    assert list(parse.process(b'{"key": "acct-1", "text": "hi"}', at)) == [("acct-1", b"hi")]
    for message in (b'{"key": "acct-1"}', b"not json", b"[1, 2]"):
        (dead,) = parse.process(message, at)
        assert dead.tag == INVALID
        assert (dead.value.reason, dead.value.payload, dead.value.event_time_ms) == (
            "invalid_event",
            message,
            7_000,
        )


def test_the_job_reads_event_time_from_the_message_attribute() -> None:
    pipeline = build(_dataflow_args())
    pipeline.run()

    reads = [
        t.spec.payload
        for t in pipeline.runner.proto_pipeline.components.transforms.values()
        if t.spec.urn == "beam:transform:pubsub_read:v1"
    ]
    assert reads
    assert all(EVENT_TIME_ATTRIBUTE.encode() in payload for payload in reads)
