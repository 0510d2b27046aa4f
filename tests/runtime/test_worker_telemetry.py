"""`--otlp_endpoint` as a pipeline option: each worker process installs and flushes the exporter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from beam_agents import AgentConfig, RunAgent, TelemetryOptions
from beam_agents.errors import ConfigurationError
from beam_agents.model import FakeLLM
from beam_agents.telemetry_options import WorkerExport
from beam_agents.testing.services.otlp import OtlpReceiver, span_attributes
from tests.runtime import agents
from tests.runtime.otlp_worker import SERVICE, THREADS

pytestmark = pytest.mark.pipeline

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "s3cret-collector-pw"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as server:
        yield server


def _worker(mode: str, endpoint: str) -> tuple[dict[str, Any], str]:
    """Run `tests.runtime.otlp_worker` in a process of its own; its report and its output."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OTEL_TRACES_EXPORTER", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.runtime.otlp_worker", mode, endpoint],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stdout + done.stderr


def test_a_pipeline_option_has_the_worker_install_and_flush_the_exporter(
    receiver: OtlpReceiver,
) -> None:
    """No SDK beforehand and no exit-time flush: the spans arrive through the DoFn's own path."""
    report, _ = _worker("pipeline", receiver.url)

    assert report["sdk_before"] is False
    assert report["sdk_after_plain_run"] is False, "a run without the option installed an SDK"
    assert report["sdk_after_traced_run"] is True
    assert report["outputs"] == [3, 3]
    assert report["processors"] == 1
    assert set(receiver.paths) == {"/v1/traces"}
    assert receiver.service_names == {SERVICE}
    activations = [s for s in receiver.spans if s.name == "activation"]
    # One span per activation of the traced run, each sent once.
    assert len(activations) == 3
    assert len({s.span_id for s in receiver.spans}) == len(receiver.spans)
    outcomes = {span_attributes(a)["beam_agents.activation.outcome"] for a in activations}
    assert outcomes == {"completed"}
    calls = [s for s in receiver.spans if s.name.startswith("chat ")]
    assert sorted(c.parent_span_id for c in calls) == sorted(a.span_id for a in activations)


def test_a_launcher_that_exports_already_gets_each_span_once(receiver: OtlpReceiver) -> None:
    """Locally the launcher is the worker: `export_otlp` and the option share one exporter."""
    report, _ = _worker("launcher_too", receiver.url)

    assert report == {"outputs": 2, "processors": 1}
    activations = [s for s in receiver.spans if s.name == "activation"]
    assert len(activations) == 2
    assert len({s.span_id for s in receiver.spans}) == len(receiver.spans)
    assert receiver.service_names == {SERVICE}


def test_several_dofn_instances_on_several_threads_install_one_exporter(
    receiver: OtlpReceiver,
) -> None:
    endpoint = receiver.url

    report, _ = _worker("threads", endpoint)

    assert report["set_up"] == THREADS
    assert report["later_calls_started_an_export"] is False
    assert len(report["install_logs"]) == 1
    assert report["exports"] == 1
    assert report["processors"] == 1
    assert report["reprs"] == [f"WorkerExport(endpoint='{endpoint}', service_name='{SERVICE}')"]
    # The teardowns flushed the span made after setup.
    assert [s.name for s in receiver.spans] == ["after-setup"]


def _config() -> AgentConfig:
    return AgentConfig(provider_factory=FakeLLM(name="otlp-options"))


def _apply(*flags: str) -> None:
    pipeline = beam.Pipeline(options=PipelineOptions(list(flags)))
    _ = pipeline | beam.Create([("a", b"x")]) | RunAgent(agents.remember, _config())


@pytest.mark.parametrize(
    "endpoint",
    [
        f"ftp://tracer:{PASSWORD}@collector:4318/v1/traces",
        f"collector:4318/v1/traces?token={PASSWORD}",
        f"http:///v1/traces?token={PASSWORD}",
    ],
    ids=["not-http", "no-scheme", "no-host"],
)
def test_a_malformed_endpoint_is_refused_when_applied_without_echoing_its_secret(
    endpoint: str,
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        _apply(f"--otlp_endpoint={endpoint}")

    assert refused.value.field == "otlp_endpoint"
    assert "http://otel-collector:4318/v1/traces" in str(refused.value)
    assert PASSWORD not in str(refused.value)


def test_an_empty_service_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="otlp_service_name"):
        _apply("--otlp_endpoint=http://127.0.0.1:4318/v1/traces", "--otlp_service_name= ")


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("http://otel-collector:4318", "http://otel-collector:4318/v1/traces"),
        ("https://otel.example.com/", "https://otel.example.com/v1/traces"),
        ("http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces"),
        ("https://otel.example.com/custom/traces", "https://otel.example.com/custom/traces"),
    ],
)
def test_a_bare_receiver_url_gets_the_otlp_traces_path(given: str, used: str) -> None:
    export = WorkerExport.from_options(PipelineOptions([f"--otlp_endpoint={given}"]))

    assert export == WorkerExport(used, "beam-agents")


def test_without_the_option_there_is_nothing_to_export() -> None:
    options = PipelineOptions(["--runner=DirectRunner"])

    assert options.view_as(TelemetryOptions).otlp_endpoint is None
    assert WorkerExport.from_options(options) is None
