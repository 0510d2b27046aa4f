"""The offline job-graph gate: the Pub/Sub triage pipeline as Dataflow would receive it.

Built with `--runner DataflowRunner --dry_run=True` (no network, FACTS) for every store
the deployment offers. A streaming update (`--update`) matches steps by name and restores
state by state and timer names, so renaming any of them breaks a running job: the golden
names below fail this test first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.dataflow.internal import apiclient

from app.triage.pubsub_run import PubSubSettings, build_pubsub_pipeline, pipeline_options

REPO = Path(__file__).resolve().parents[2]
PROJECT = "acme-prod"
STORES = {
    "bigtable": "bigtable://acme-prod/triage-memory/beam-agents-longterm",
    "firestore": "firestore://acme-prod/beam_agents_longterm?database=triage-memory",
    "redis": "rediss://10.20.0.5:6378/0",
    "cloudsql": "postgresql+asyncpg://triage@10.20.0.3:5432/triage",
}
SETTINGS = PubSubSettings(
    input_subscription=f"projects/{PROJECT}/subscriptions/triage-alerts",
    answers_subscription=f"projects/{PROJECT}/subscriptions/triage-answers",
    outputs_topic=f"projects/{PROJECT}/topics/triage-outputs",
    intents_topic=f"projects/{PROJECT}/topics/triage-intents",
    errors_topic=f"projects/{PROJECT}/topics/triage-errors",
    lifecycle_topic=f"projects/{PROJECT}/topics/triage-lifecycle",
)
AGENT_STEP = "TriageAgent/Agent/ParDo(AgentDoFn)"
STATE_CELLS = {"continuation", "llm_cache", "memory", "pending", "seq"}
TIMERS = {"ts-hitl", "ts-ttl"}
STABLE_NAMES = {
    "AllErrors",
    "AllIntents",
    "EscalateTimeouts",
    *(
        f"Publish{stream}{step}"
        for stream in ("Errors", "Intents", "Lifecycle", "Outputs")
        for step in ("", "/Encode", "/Publish", "/Publish/ParDo(_PubSubWriteDoFn)",
                     "/Publish/ToProtobufX")
    ),
    "ReadAlerts",
    "ReadAlerts/Parse",
    "ReadAlerts/Parse/ParDo(_ParseAlertDoFn)",
    "ReadAnswers",
    "ReadAnswers/Parse",
    "ReadAnswers/Parse/ParDo(_ParseAnswerDoFn)",
    *(
        f"Read{stream}/Pull{step}"
        for stream in ("Alerts", "Answers")
        for step in ("", "/Map(_from_proto_str)", "/ParDo(_AddMetricsPassThrough)", "/Read")
    ),
    "TriageAgent",
    "TriageAgent/Agent",
    AGENT_STEP,
    "TriageAgent/MergeAnswers",
    "TriageAgent/NormalizeAnswers",
    "TriageAgent/NormalizeEvents",
}  # fmt: skip


@dataclass(frozen=True)
class Graph:
    job_type: object
    pipeline: beam_runner_api_pb2.Pipeline

    def transforms(self) -> dict[str, beam_runner_api_pb2.PTransform]:
        return {t.unique_name: t for t in self.pipeline.components.transforms.values()}

    def stable_names(self) -> set[str]:
        """Every step name, minus the ones Beam generates (`ref_AppliedPTransform_...`)."""
        return {name for name in self.transforms() if not name.startswith("ref_")}


def _dry_run(longterm_uri: str, settings: PubSubSettings = SETTINGS) -> Graph:
    options = pipeline_options(
        [
            "--runner=DataflowRunner",
            "--dry_run=True",
            f"--project={PROJECT}",
            "--region=europe-west1",
            "--temp_location=gs://acme-prod-triage-temp/tmp",
            "--sdk_container_image=europe-west1-docker.pkg.dev/acme-prod/triage/triage:v1",
        ]
    )
    pipeline = beam.Pipeline(options=options)
    build_pubsub_pipeline(pipeline, settings, model_spec="rules", longterm_uri=longterm_uri)
    pipeline.run()
    runner = pipeline.runner
    return Graph(runner.job.proto.type, runner.proto_pipeline)


@pytest.fixture(scope="module", params=sorted(STORES))
def graph(request: pytest.FixtureRequest) -> Graph:
    return _dry_run(STORES[request.param])


def test_job_is_streaming(graph: Graph) -> None:
    assert graph.job_type == apiclient.dataflow.JobType.JOB_TYPE_STREAMING


def test_graph_reads_and_writes_pubsub_natively(graph: Graph) -> None:
    urns = {t.spec.urn for t in graph.transforms().values()}
    assert {"beam:transform:pubsub_read:v1", "beam:transform:pubsub_write:v1"} <= urns
    reads = [n for n, t in graph.transforms().items() if t.spec.urn.endswith("pubsub_read:v1")]
    writes = [n for n, t in graph.transforms().items() if t.spec.urn.endswith("pubsub_write:v1")]
    assert sorted(reads) == ["ReadAlerts/Pull/Read", "ReadAnswers/Pull/Read"]
    assert len(writes) == 4


def test_agent_is_a_stateful_dofn_with_its_five_state_cells_and_two_timers(graph: Graph) -> None:
    assert "beam:requirement:pardo:stateful:v1" in graph.pipeline.requirements
    payload = beam_runner_api_pb2.ParDoPayload.FromString(
        graph.transforms()[AGENT_STEP].spec.payload
    )
    assert set(payload.state_specs) == STATE_CELLS
    assert set(payload.timer_family_specs) == TIMERS
    stateful = [
        name
        for name, t in graph.transforms().items()
        if t.spec.urn == "beam:transform:pardo:v1"
        and beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload).state_specs
    ]
    assert stateful == [AGENT_STEP]


def test_transform_names_match_the_golden_list(graph: Graph) -> None:
    """A rename breaks `--update` of a running job; add a transform_name_mapping, then here."""
    assert graph.stable_names() == STABLE_NAMES


def test_optional_streams_leave_the_other_names_unchanged() -> None:
    minimal = PubSubSettings(
        input_subscription=SETTINGS.input_subscription,
        outputs_topic=SETTINGS.outputs_topic,
        intents_topic=SETTINGS.intents_topic,
        errors_topic=SETTINGS.errors_topic,
    )
    names = _dry_run(STORES["bigtable"], minimal).stable_names()
    optional = {n for n in STABLE_NAMES if n.startswith(("ReadAnswers", "PublishLifecycle"))}
    optional |= {"TriageAgent/MergeAnswers", "TriageAgent/NormalizeAnswers"}
    assert names == STABLE_NAMES - optional


def _launch(*parameters: str) -> subprocess.CompletedProcess[str]:
    """app/flex_main.py as the Flex Template launcher runs it, on a dry-run Dataflow runner."""
    argv = [
        sys.executable, str(REPO / "app" / "flex_main.py"),
        *parameters,
        "--runner=DataflowRunner", "--dry_run=True", f"--project={PROJECT}",
        "--region=europe-west1", "--temp_location=gs://acme-prod-triage-temp/tmp",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=120)


def _template_parameters(**overrides: str | None) -> list[str]:
    values: dict[str, str | None] = {
        "input_subscription": SETTINGS.input_subscription,
        "outputs_topic": SETTINGS.outputs_topic,
        "intents_topic": SETTINGS.intents_topic,
        "errors_topic": SETTINGS.errors_topic,
        "model": "rules",
        "longterm": STORES["bigtable"],
    } | overrides
    return [f"--{name}={value}" for name, value in values.items() if value is not None]


def test_flex_template_entry_builds_the_job_from_template_parameters() -> None:
    result = _launch(*_template_parameters())
    assert result.returncode == 0, result.stderr[-3000:]


def test_flex_template_entry_names_a_missing_topic() -> None:
    result = _launch(*_template_parameters(intents_topic=None))
    assert result.returncode == 2
    assert "--input_subscription needs --intents_topic too" in result.stderr


def test_flex_template_entry_refuses_both_store_uri_and_secret() -> None:
    secret = "projects/acme-prod/secrets/triage-longterm/versions/1"
    result = _launch(*_template_parameters(longterm_secret=secret))
    assert result.returncode == 2
    assert "exactly one of --longterm URI and --longterm_secret VERSION" in result.stderr
