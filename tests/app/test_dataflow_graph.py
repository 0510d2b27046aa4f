"""The offline job-graph gate: the Pub/Sub triage pipeline as Dataflow would receive it.

Built with `--runner DataflowRunner --dry_run=True` (no network) for every store the
deployment offers, from the launcher parameters each deployment passes: a store URI
without a credential as `longterm`, one with a password as `longterm_secret`. Whatever
the graph holds is staged in a bucket, so no store's graph may hold its password. A
streaming update (`--update`) matches steps by name and restores
state by state and timer names, so renaming any of them breaks a running job: the golden
names below fail this test first.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import bz2
import os
import pickle
import subprocess
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.internal import pickler
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.dataflow.internal import apiclient

from app.triage.pubsub_run import (
    SERVICE_NAME,
    PubSubSettings,
    build_pubsub_pipeline,
    longterm_uri,
    pipeline_options,
)
from beam_agents import AgentConfig, RunAgent
from beam_agents._connections import secret_sources as secret_module
from beam_agents.errors import ConfigurationError
from beam_agents.runtime._dofn import AgentDoFn
from beam_agents.telemetry_options import WorkerExport
from beam_agents.testing.services.secret_manager import SecretManagerServer
from beam_agents.tools.mcp_tools import McpTools
from beam_agents.tools.webhook import HttpWebhook
from tests.tools.agents import file_ticket

REPO = Path(__file__).resolve().parents[2]
PROJECT = "acme-prod"
PASSWORD = "Pw-in-Secret-Manager-9f3a"
SECRET_VERSION = "projects/acme-prod/secrets/triage-longterm/versions/1"
OTLP_ENDPOINT = "http://10.128.0.9:4318/v1/traces"
#: What each deployment passes the launcher: `longterm` (no credential) or `longterm_secret`.
LAUNCHER_STORES: dict[str, tuple[str, str]] = {
    "bigtable": ("longterm", "bigtable://acme-prod/triage-memory/beam-agents-longterm"),
    "firestore": (
        "longterm",
        "firestore://acme-prod/beam_agents_longterm?database=triage-memory",
    ),
    "redis": ("longterm_secret", SECRET_VERSION),
    "cloudsql": ("longterm_secret", SECRET_VERSION),
}
#: What the secret version holds for the stores whose URI carries a password.
SECRET_VALUES = {
    "redis": f"rediss://:{PASSWORD}@10.20.0.5:6378/0?ssl_ca_certs=/opt/triage/app/certs/ca.pem",
    "cloudsql": f"postgresql+asyncpg://triage:{PASSWORD}@10.20.0.3:5432/triage?ssl=verify-ca",
}
STORES = {
    name: longterm_uri(
        argparse.Namespace(
            longterm=value if flag == "longterm" else None,
            longterm_secret=value if flag == "longterm_secret" else None,
        )
    )
    for name, (flag, value) in LAUNCHER_STORES.items()
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
STATE_CELLS = {
    "continuation",
    "llm_cache",
    "memory",
    "pending",
    "seq",
    "wakes",
    "memory_log",
    "memory_head",
}
"""The five of the first release, with `wakes` (follow-ups), the bag `memory_log` (what commits
changed since MEMORY was written whole) and `memory_head` added: `--update` keeps the five."""
TIMERS = {"ts-hitl", "ts-ttl", "ts-wake", "ts-wake_clock"}
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


def _dry_run(
    longterm_uri: str, settings: PubSubSettings = SETTINGS, *, otlp_endpoint: str | None = None
) -> Graph:
    options = pipeline_options(
        [
            "--runner=DataflowRunner",
            "--dry_run=True",
            f"--project={PROJECT}",
            "--region=europe-west1",
            "--temp_location=gs://acme-prod-triage-temp/tmp",
            "--sdk_container_image=europe-west1-docker.pkg.dev/acme-prod/triage/triage:v1",
        ],
        otlp_endpoint=otlp_endpoint,
    )
    pipeline = beam.Pipeline(options=options)
    build_pubsub_pipeline(pipeline, settings, model_spec="rules", longterm_uri=longterm_uri)
    pipeline.run()
    runner = pipeline.runner
    return Graph(runner.job.proto.type, runner.proto_pipeline)


@pytest.fixture(scope="module", params=sorted(STORES))
def graph(request: pytest.FixtureRequest) -> Iterator[Graph]:
    """The store's graph, built while its secret (if any) is readable in this process.

    The store layer's Secret Manager client points at a loopback server holding the
    password-bearing URI, so anything that read the secret while the graph was built
    would find the password and put it in the graph.
    """
    value = SECRET_VALUES.get(request.param)
    with (
        SecretManagerServer({SECRET_VERSION: value.encode()} if value else {}) as server,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(secret_module, "_default_client", lambda _version: server.client())
        yield _dry_run(STORES[request.param])
        assert server.requests == [], "building the graph read the secret"


def _plain(payload: bytes) -> bytes:
    """A pickled payload as its pickle bytes: Beam stores it base64'd and compressed."""
    try:
        packed = base64.b64decode(payload, validate=True)
    except binascii.Error:
        return payload
    for decompress in (bz2.decompress, zlib.decompress):
        try:
            return decompress(packed)
        except (OSError, ValueError, zlib.error):
            continue
    return payload


def _stored_bytes(graph: Graph) -> list[bytes]:
    """Every byte string the staged graph holds: the proto, and each DoFn's pickle."""
    stored = [graph.pipeline.SerializeToString()]
    for transform in graph.transforms().values():
        if transform.spec.urn == "beam:transform:pardo:v1":
            payload = beam_runner_api_pb2.ParDoPayload.FromString(transform.spec.payload)
            stored.append(_plain(payload.do_fn.payload))
    return stored


def _agent_dofn(graph: Graph) -> AgentDoFn:
    payload = beam_runner_api_pb2.ParDoPayload.FromString(
        graph.transforms()[AGENT_STEP].spec.payload
    )
    dofn, *_ = pickler.loads(payload.do_fn.payload)
    assert isinstance(dofn, AgentDoFn)
    return dofn


def test_job_is_streaming(graph: Graph) -> None:
    assert graph.job_type == apiclient.dataflow.JobType.JOB_TYPE_STREAMING


def test_graph_reads_and_writes_pubsub_natively(graph: Graph) -> None:
    urns = {t.spec.urn for t in graph.transforms().values()}
    assert {"beam:transform:pubsub_read:v1", "beam:transform:pubsub_write:v1"} <= urns
    reads = [n for n, t in graph.transforms().items() if t.spec.urn.endswith("pubsub_read:v1")]
    writes = [n for n, t in graph.transforms().items() if t.spec.urn.endswith("pubsub_write:v1")]
    assert sorted(reads) == ["ReadAlerts/Pull/Read", "ReadAnswers/Pull/Read"]
    assert len(writes) == 4


def test_agent_is_a_stateful_dofn_with_its_eight_state_cells_and_four_timers(graph: Graph) -> None:
    assert "beam:requirement:pardo:stateful:v1" in graph.pipeline.requirements
    payload = beam_runner_api_pb2.ParDoPayload.FromString(
        graph.transforms()[AGENT_STEP].spec.payload
    )
    assert set(payload.state_specs) == STATE_CELLS
    kinds = {name: spec.WhichOneof("spec") for name, spec in payload.state_specs.items()}
    assert kinds.pop("memory_log") == "bag_spec"
    assert set(kinds.values()) == {"read_modify_write_spec"}
    assert set(payload.timer_family_specs) == TIMERS
    stateful = [
        name
        for name, t in graph.transforms().items()
        if t.spec.urn == "beam:transform:pardo:v1"
        and beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload).state_specs
    ]
    assert stateful == [AGENT_STEP]


def test_the_staged_graph_holds_no_store_password(graph: Graph) -> None:
    assert not [blob for blob in _stored_bytes(graph) if PASSWORD.encode() in blob]


def test_a_credential_bearing_store_is_a_secret_reference_in_the_agent_config(
    graph: Graph,
) -> None:
    """Unpickled, the agent's config names the secret version (or a password-free URI)."""
    uri = _agent_dofn(graph)._config.longterm_memory
    assert uri in STORES.values()
    assert PASSWORD not in str(uri)


def test_a_store_uri_with_its_password_is_refused_before_any_graph_is_built() -> None:
    with pytest.raises(ConfigurationError, match="longterm_memory") as refused:
        _dry_run(SECRET_VALUES["redis"])
    assert PASSWORD not in str(refused.value)


def _dry_run_agent(config: AgentConfig) -> Graph:
    """A Create -> RunAgent job with `config`, built for Dataflow offline."""
    options = PipelineOptions(
        [
            "--runner=DataflowRunner",
            "--dry_run=True",
            f"--project={PROJECT}",
            "--region=europe-west1",
            "--temp_location=gs://acme-prod-triage-temp/tmp",
        ]
    )
    pipeline = beam.Pipeline(options=options)
    _ = pipeline | beam.Create([("case-1", b"db down")]) | RunAgent(file_ticket, config)
    pipeline.run()
    runner = pipeline.runner
    return Graph(runner.job.proto.type, runner.proto_pipeline)


MCP_TOKEN = "mcp-Bearer-Tok-51d0"
LEDGER = "bigtable://acme-prod/triage-memory/beam-agents-ledger"


def test_the_staged_graph_of_a_job_with_mcp_tokens_holds_no_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tokens are readable on the launcher while it builds: only their names are staged."""
    monkeypatch.setenv("TRIAGE_MCP_BEARER", f"Bearer {MCP_TOKEN}")
    monkeypatch.setenv("TRIAGE_MCP_TOKEN", MCP_TOKEN)
    over_http = McpTools(
        "https://tickets.example.com/mcp",
        secret_headers={"Authorization": "env:TRIAGE_MCP_BEARER"},
    )
    over_stdio = McpTools(["tickets-mcp"], secret_env={"TICKETS_TOKEN": "env:TRIAGE_MCP_TOKEN"})
    config = AgentConfig(
        tools={"open_ticket": over_http.handler("open_ticket"), "add": over_stdio.handler("add")},
        tool_ledger=LEDGER,
    )

    graph = _dry_run_agent(config)

    assert not [blob for blob in _stored_bytes(graph) if MCP_TOKEN.encode() in blob]
    staged = _agent_dofn_of(graph)._config.tools
    assert set(staged) == {"open_ticket", "add"}
    assert b"env:TRIAGE_MCP_BEARER" in pickle.dumps(staged["open_ticket"])


def test_the_token_scan_finds_a_token_that_was_pickled() -> None:
    """The scan bites: a token in a plain (non-secret) header is found in the DoFn's pickle."""
    leaky = HttpWebhook("https://tickets.example.com/hook", headers={"X-Team": MCP_TOKEN})
    graph = _dry_run_agent(AgentConfig(tools={"open_ticket": leaky}, tool_ledger=LEDGER))
    assert [blob for blob in _stored_bytes(graph)[1:] if MCP_TOKEN.encode() in blob]


def _agent_dofn_of(graph: Graph) -> AgentDoFn:
    (payload,) = [
        beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload)
        for name, t in graph.transforms().items()
        if name.endswith("ParDo(AgentDoFn)")
    ]
    dofn, *_ = pickler.loads(payload.do_fn.payload)
    assert isinstance(dofn, AgentDoFn)
    return dofn


def test_without_otlp_endpoint_the_workers_export_nothing(graph: Graph) -> None:
    assert _agent_dofn(graph)._telemetry is None


def test_otlp_endpoint_reaches_the_agent_dofn_the_workers_run() -> None:
    """The workers unpickle the DoFn from the staged graph: the export travels in it."""
    graph = _dry_run(STORES["bigtable"], otlp_endpoint=OTLP_ENDPOINT)

    assert _agent_dofn(graph)._telemetry == WorkerExport(OTLP_ENDPOINT, SERVICE_NAME)


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


def test_flex_template_entry_builds_from_a_secret_version_without_reading_it() -> None:
    """The launcher holds no way into Secret Manager here, and needs none: workers read it."""
    result = _launch(*_template_parameters(longterm=None, longterm_secret=SECRET_VERSION))
    assert result.returncode == 0, result.stderr[-3000:]


def test_flex_template_entry_takes_otlp_endpoint_as_a_job_parameter() -> None:
    result = _launch(*_template_parameters(otlp_endpoint=OTLP_ENDPOINT))
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"spans     -> {OTLP_ENDPOINT} (from each worker)" in result.stderr


def test_flex_template_entry_refuses_an_otlp_endpoint_that_is_no_url() -> None:
    result = _launch(*_template_parameters(otlp_endpoint="otel-collector:4318"))
    assert result.returncode == 2
    assert "otlp_endpoint: must be an http(s) URL" in result.stderr


def test_flex_template_entry_refuses_both_store_uri_and_secret() -> None:
    secret = "projects/acme-prod/secrets/triage-longterm/versions/1"
    result = _launch(*_template_parameters(longterm_secret=secret))
    assert result.returncode == 2
    assert "exactly one of --longterm URI and --longterm_secret VERSION" in result.stderr
