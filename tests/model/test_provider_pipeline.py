"""A real provider inside RunAgent on the streaming DirectRunner, talking to loopback."""

from __future__ import annotations

import json
from typing import Any

import pytest
from apache_beam.metrics.metric import MetricsFilter
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.model import provider_from_spec
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.model.exchange import KEY_ENV

pytestmark = pytest.mark.pipeline

PATH = "/v1/chat/completions"


async def ask_model(ctx: ActivationContext) -> Complete:
    """Forward the event to the model and complete with its answer."""
    answer = await ctx.call_model(LlmRequest(model_id="gpt-test", messages=[ctx.event.decode()]))
    return Complete(answer.response)


def completion(content: str, *, usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-test-served",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    return body


def config(server: HTTPServer, max_retries: int = 1) -> AgentConfig:
    spec = (
        f"openai:gpt-test?base_url={server.url_for('/v1')}&api_key_env={KEY_ENV}"
        f"&timeout_s=5&max_retries={max_retries}"
    )
    return AgentConfig(provider_factory=provider_from_spec(spec), activation_timeout_s=30.0)


def model_metric(run: StreamRun, name: str) -> int:
    return run.counter("beam_agents.model", name)


def test_a_forced_bundle_retry_is_answered_from_the_replay_cache_not_the_server(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(completion("The answer is 4."))

    with fail_commit_once(b"user-1", 1) as fault:
        run = run_script(ask_model, config(httpserver), Script().events(("user-1", b"2+2?", 1_000)))

    assert fault.fired == [(b"user-1", 1)]
    assert run.outputs == [(b"user-1", b"The answer is 4.")]
    assert run.errors == []
    assert len(httpserver.log) == 1
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {secret_key}"


def test_tokens_calls_latency_and_missing_usage_are_counted_in_beam_metrics(
    httpserver: HTTPServer, secret_key: str
) -> None:
    def answer(request: Request) -> Response:
        text = request.get_data(as_text=True)
        body = completion("ok", usage="no usage please" not in text)
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request(PATH).respond_with_handler(answer)
    script = Script().events(("a", b"hello", 1_000), ("b", b"no usage please", 1_000))

    run = run_script(ask_model, config(httpserver), script)

    assert sorted(run.outputs) == [(b"a", b"ok"), (b"b", b"ok")]
    assert model_metric(run, "provider_calls") == 2
    assert model_metric(run, "input_tokens") == 12
    assert model_metric(run, "output_tokens") == 5
    assert model_metric(run, "responses_without_usage") == 1
    assert model_metric(run, "provider_retries") == 0
    latency = run.metrics.query(
        MetricsFilter().with_namespace("beam_agents.model").with_name("provider_latency_ms")
    )["distributions"]
    assert sum(d.committed.count for d in latency) == 2


def test_a_provider_failure_is_a_model_error_with_status_message_and_retries(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": f"overloaded (key {secret_key})", "type": "server_error"}},
        status=503,
        headers={"retry-after-ms": "5"},
    )

    run = run_script(
        ask_model, config(httpserver, max_retries=2), Script().events(("k", b"hi", 1_000))
    )

    assert run.outputs == []
    (error,) = run.errors
    assert error.reason == "model_error"
    head, *trace = error.detail.splitlines()
    assert head == (
        "ModelCallError: ProviderError: openai model 'gpt-test': "
        "HTTP 503 after 2 retries: overloaded (key ***)"
    )
    assert trace[-1].strip().endswith("in ask_model")
    assert len(httpserver.log) == 3
    assert model_metric(run, "provider_errors_server_error") == 1
    assert model_metric(run, "provider_retries") == 2


def test_the_activation_timeout_cuts_a_retrying_call_short(
    httpserver: HTTPServer, secret_key: str
) -> None:
    """Retries stay inside the activation: when it times out, the SDK's wait is cancelled."""
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": "busy"}}, status=503, headers={"Retry-After": "20"}
    )
    spec = (
        f"openai:gpt-test?base_url={httpserver.url_for('/v1')}&api_key_env={KEY_ENV}&max_retries=3"
    )
    config = AgentConfig(provider_factory=provider_from_spec(spec), activation_timeout_s=0.5)

    run = run_script(ask_model, config, Script().events(("k", b"hi", 1_000)))

    assert run.reasons() == ["activation_timeout"]
    assert run.outputs == []
    assert len(httpserver.log) == 1


def test_a_missing_key_fails_the_pipeline_at_setup_naming_the_variable(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BEAM_AGENTS_TEST_ABSENT_KEY", raising=False)
    spec = (
        f"openai:gpt-test?base_url={httpserver.url_for('/v1')}"
        "&api_key_env=BEAM_AGENTS_TEST_ABSENT_KEY"
    )
    config = AgentConfig(provider_factory=provider_from_spec(spec))

    with pytest.raises(Exception, match="BEAM_AGENTS_TEST_ABSENT_KEY is not set"):
        run_script(ask_model, config, Script().events(("k", b"hi", 1_000)))

    assert httpserver.log == []
