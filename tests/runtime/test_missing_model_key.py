"""A model key that is missing: one line where the pipeline is built, once per worker after."""

from __future__ import annotations

import inspect
import logging
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, RunAgent
from beam_agents.errors import ConfigurationError, MissingSecretError
from beam_agents.model import (
    GeminiProvider,
    OpenAICompatibleProvider,
    embedder_from_spec,
    provider_from_spec,
)
from beam_agents.model._spec_grammar import ClassFactory
from beam_agents.model.embedders.gemini import GeminiEmbedder
from beam_agents.model.embedders.openai_compat import OpenAIEmbedder
from beam_agents.model.keys import MissingModelKeyError, check_key_here
from beam_agents.runtime._calls import missing_key
from beam_agents.testing.streaming import Script, run_script

CHECKOUT = Path(__file__).resolve().parents[2]
KEY = "OPENAI_API_KEY"
WORKER_ONLY_KEY = "BEAM_AGENTS_TEST_KEY_ONLY_ON_WORKERS"


async def ask_model(ctx: ActivationContext) -> Complete:
    """Module level: the DoFn pickles the agent by reference."""
    answer = await ctx.call_model(LlmRequest(model_id="m", messages=[ctx.event.decode()]))
    return Complete(output=answer.response)


@dataclass(frozen=True)
class WorkerKeyFactory:
    """A factory of the user's own: where its key comes from is not visible to the launcher."""

    variable: str

    def __call__(self) -> OpenAICompatibleProvider:
        return OpenAICompatibleProvider(
            "gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key_env=self.variable
        )


def test_a_local_pipeline_whose_model_key_is_missing_fails_as_it_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KEY, raising=False)
    config = AgentConfig(provider_factory=provider_from_spec("openai:gpt-4o-mini"))
    pipeline = beam.Pipeline()
    events = pipeline | beam.Create([("db-3", b"disk full")])

    with pytest.raises(MissingModelKeyError) as failure:
        _ = events | RunAgent(ask_model, config)

    error = failure.value
    assert isinstance(error, ConfigurationError)
    assert isinstance(error, SystemExit)  # an uncaught one ends a script with its line
    assert (error.field, error.variable) == ("AgentConfig.provider_factory", KEY)
    assert error.code == f"error: {error}"
    assert "\n" not in str(error)
    assert pickle.loads(pickle.dumps(error)).code == error.code


def test_an_embedder_key_missing_on_a_local_run_names_the_embedder_and_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("EMBED_KEY", raising=False)
    config = AgentConfig(
        embedder=embedder_from_spec("openai:text-embedding-3-small?api_key_env=EMBED_KEY"),
        longterm_memory="memory://",
    )
    pipeline = beam.Pipeline(options=PipelineOptions(streaming=True))
    events = pipeline | beam.Create([("db-3", b"disk full")])

    with pytest.raises(MissingModelKeyError) as failure:
        _ = events | RunAgent(ask_model, config)

    assert (failure.value.field, failure.value.variable) == ("AgentConfig.embedder", "EMBED_KEY")


def test_a_deployed_pipeline_is_built_without_the_key_its_workers_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Dataflow's workers read the key from their own environment or Secret Manager."""
    monkeypatch.delenv(KEY, raising=False)
    options = PipelineOptions(
        [
            "--runner=DataflowRunner",
            "--dry_run=True",
            "--project=my-project",
            "--region=europe-west1",
            "--temp_location=gs://bucket/tmp",
        ]
    )
    pipeline = beam.Pipeline(options=options)
    events = pipeline | beam.Create([("db-3", b"disk full")])

    result = events | RunAgent(
        ask_model, AgentConfig(provider_factory=provider_from_spec("openai:gpt-4o-mini"))
    )

    assert result.errors.producer is not None
    assert result.errors.producer.full_label.startswith("RunAgent/Agent")


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("gemini:gemini-2.5-flash", "GEMINI_API_KEY"),
        ("openai:llama3.1:8b?api_key_env=OLLAMA_KEY", "OLLAMA_KEY"),
        ("openai:m?api_key_secret=projects/p/secrets/s/versions/1", None),
        ("gemini:m?vertex_project=p", None),
        ("fake", None),
    ],
)
def test_a_spec_names_the_variable_its_provider_reads_its_key_from(
    spec: str, variable: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "OLLAMA_KEY"):
        monkeypatch.delenv(name, raising=False)
    factory = provider_from_spec(spec)

    if variable is None:
        check_key_here(factory, "--model")  # nothing to look for here
        return
    with pytest.raises(MissingModelKeyError, match=f"environment variable {variable} is not set"):
        check_key_here(factory, "--model")
    monkeypatch.setenv(variable, "sk-present")
    check_key_here(factory, "--model")


@pytest.mark.parametrize(
    ("built", "spec"),
    [
        (OpenAICompatibleProvider, lambda: provider_from_spec("openai:m")),
        (GeminiProvider, lambda: provider_from_spec("gemini:m")),
        (OpenAIEmbedder, lambda: embedder_from_spec("openai:text-embedding-3-small")),
        (GeminiEmbedder, lambda: embedder_from_spec("gemini:gemini-embedding-001")),
    ],
)
def test_the_launcher_looks_for_the_variable_the_class_itself_reads(
    built: type[object], spec: Callable[[], object]
) -> None:
    """The spec's default variable is the constructor's default `api_key_env`."""
    default = inspect.signature(built).parameters["api_key_env"].default
    factory = spec()

    assert isinstance(factory, ClassFactory)
    assert factory.key_variable() == default


def test_a_key_missing_on_the_worker_is_one_error_line_and_a_model_error_per_event(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """On the streaming DirectRunner, which retries a failed bundle four times: none fails."""
    monkeypatch.delenv(WORKER_ONLY_KEY, raising=False)
    monkeypatch.setattr(missing_key, "_reported", set())
    caplog.set_level(logging.INFO)
    config = AgentConfig(provider_factory=WorkerKeyFactory(WORKER_ONLY_KEY))
    script = Script().events(("db-3", b"disk full", 1_000), ("web-1", b"cpu idle", 2_000))
    script = script.events(("db-3", b"disk full again", 3_000))

    run = run_script(ask_model, config, script)

    assert run.outputs == []
    assert run.reasons() == ["model_error"] * 3
    for error in run.errors:
        assert f"MissingSecretError: api_key_env: environment variable {WORKER_ONLY_KEY}" in (
            error.detail
        )
        assert error.payload.startswith(b"disk full") or error.payload == b"cpu idle"
    reported = [r for r in caplog.records if r.name == missing_key.__name__]
    assert len(reported) == 1
    assert reported[0].levelno == logging.ERROR
    assert WORKER_ONLY_KEY in reported[0].getMessage()
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert not [r for r in caplog.records if "A task failed" in r.getMessage()]


def test_a_spec_whose_key_goes_missing_before_the_run_dead_letters_its_parked_calls(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An `openai:` spec parks its calls on the call loop, which builds its own provider."""
    monkeypatch.setenv(WORKER_ONLY_KEY, "sk-present-when-built")
    monkeypatch.setattr(missing_key, "_reported", set())
    caplog.set_level(logging.INFO)
    spec = f"openai:gpt-4o-mini?base_url=http://127.0.0.1:9/v1&api_key_env={WORKER_ONLY_KEY}"
    pipeline = beam.Pipeline(runner=FnApiRunner())
    events = pipeline | beam.Create([("db-3", b"disk full"), ("web-1", b"cpu idle")])
    result = events | RunAgent(ask_model, AgentConfig(provider_factory=provider_from_spec(spec)))
    reasons = result.errors | beam.Map(
        lambda error: (error.reason, WORKER_ONLY_KEY in error.detail)
    )
    assert_that(reasons, equal_to([("model_error", True)] * 2))
    assert_that(result.outputs, equal_to([]), label="NoOutputs")
    monkeypatch.delenv(WORKER_ONLY_KEY)

    pipeline.run().wait_until_finish()

    reported = [r for r in caplog.records if r.name == missing_key.__name__]
    assert len(reported) == 1
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


def test_the_worker_error_is_a_missing_secret_error_naming_only_the_variable() -> None:
    provider = missing_key.KeyMissingProvider(
        MissingSecretError("api_key_env", "SOME_KEY", "environment variable SOME_KEY is unset")
    )
    coroutine = provider.complete(LlmRequest(model_id="m", messages=["x"]))

    with pytest.raises(MissingSecretError) as failure:
        coroutine.send(None)

    assert failure.value.variable == "SOME_KEY"


def _quickstart_with(provider_line: str) -> str:
    """The README's quickstart, its FakeLLM replaced by `provider_line`."""
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", quickstart, re.S)
    assert code is not None
    lines = code.group(1).splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith("provider = FakeLLM(")]
    lines[at] = provider_line
    return "\n".join(lines) + "\n"


def test_the_quickstart_with_an_openai_model_and_no_key_ends_in_one_line(
    tmp_path: Path,
) -> None:
    script = tmp_path / "quickstart.py"
    script.write_text(
        _quickstart_with(
            "from beam_agents.model import provider_from_spec\n"
            'provider = provider_from_spec("openai:gpt-4o-mini")'
        ),
        encoding="utf-8",
    )
    env = {name: value for name, value in os.environ.items() if name != KEY}
    env["PYTHONPATH"] = str(CHECKOUT)

    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: AgentConfig.provider_factory: environment variable OPENAI_API_KEY is not set "
        "or empty, and openai:gpt-4o-mini reads its API key from it in this process, where "
        "the local runner runs the pipeline; set it, or name another variable with "
        "?api_key_env=NAME"
    ]
    assert done.stdout == ""
