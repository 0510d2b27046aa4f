"""OpenAICompatibleProvider against a loopback server speaking `POST /v1/chat/completions`."""

from __future__ import annotations

import pickle
import time
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from beam_agents import LlmRequest, LlmResponse
from beam_agents.errors import ConfigurationError
from beam_agents.model import OpenAICompatibleProvider
from tests.model.exchange import (
    HELLO,
    KEY_ENV,
    ask,
    assert_key_kept_private,
    fails,
    openai_error,
    refused_before_sending,
    sent,
    times_out,
)

PATH = "/v1/chat/completions"


def completion(
    *,
    content: str | None = "Hello from the model.",
    tool_calls: list[dict[str, Any]] | None = None,
    usage: bool = True,
    model: str = "gpt-test-2026-01-01",
) -> dict[str, Any]:
    """A chat-completions body as a server sends it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    return body


def provider(server: HTTPServer, **kwargs: Any) -> OpenAICompatibleProvider:
    kwargs.setdefault("timeout_s", 5.0)
    kwargs.setdefault("max_retries", 2)
    return OpenAICompatibleProvider(
        "gpt-test", base_url=server.url_for("/v1"), api_key_env=KEY_ENV, **kwargs
    )


def test_plain_answer_returns_text_model_and_usage(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_oneshot_request(PATH, method="POST").respond_with_json(completion())

    answer = ask(provider(httpserver), HELLO)

    assert answer == LlmResponse(
        response=b"Hello from the model.",
        model_id="gpt-test-2026-01-01",
        input_tokens=12,
        output_tokens=5,
    )
    (request,) = sent(httpserver)
    assert request.headers["Authorization"] == f"Bearer {secret_key}"
    body = request.get_json()
    assert body["model"] == "gpt-test"
    assert body["messages"] == [{"role": "user", "content": "Say hello."}]
    assert "tools" not in body


def test_tool_call_comes_back_as_canonical_json(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_oneshot_request(PATH).respond_with_json(
        completion(
            content=None,
            tool_calls=[
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{ "q": "beam",  "n": 2 }'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}},
            ],
        )
    )
    tools = [
        {
            "name": "lookup",
            "description": "Search the docs.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
        {"type": "function", "function": {"name": "now"}},
    ]

    answer = ask(
        provider(httpserver), LlmRequest(model_id="m", messages=["Find"], tools_schema=tools)
    )

    assert answer.response == (
        b'{"tool_calls":[{"arguments":{"n":2,"q":"beam"},"name":"lookup"},'
        b'{"arguments":{},"name":"now"}]}'
    )
    assert sent(httpserver)[0].get_json()["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Search the docs.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        },
        {"type": "function", "function": {"name": "now"}},
    ]


def test_system_and_earlier_turns_pass_through_in_order(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_oneshot_request(PATH).respond_with_json(completion())
    messages = [
        {"role": "system", "content": "You are terse."},
        "First question",
        {"role": "assistant", "content": "First answer"},
        {"role": "tool", "content": '{"ok": true}', "tool_call_id": "call_1"},
    ]

    ask(provider(httpserver), LlmRequest(model_id="m", messages=messages))

    assert sent(httpserver)[0].get_json()["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "First question"},
        {"role": "assistant", "content": "First answer"},
        {"role": "tool", "content": '{"ok": true}', "tool_call_id": "call_1"},
    ]


def test_sampling_parameters_go_on_the_wire(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_oneshot_request(PATH).respond_with_json(completion())
    sampling = {"temperature": 0.2, "top_p": 0.9, "max_output_tokens": 64, "stop": "END", "seed": 7}

    ask(provider(httpserver), LlmRequest(model_id="m", messages=["x"], sampling_params=sampling))

    body = sent(httpserver)[0].get_json()
    assert {
        k: body[k] for k in ("temperature", "top_p", "max_completion_tokens", "stop", "seed")
    } == {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_completion_tokens": 64,
        "stop": ["END"],
        "seed": 7,
    }


def test_unknown_sampling_parameter_is_refused_by_name_before_any_request(
    httpserver: HTTPServer, secret_key: str
) -> None:
    request = LlmRequest(model_id="m", messages=["x"], sampling_params={"top_k": 3})
    refused_before_sending(provider(httpserver), request, httpserver, r"sampling_params\.top_k")


def test_429_with_retry_after_is_retried_once_after_the_wait_it_asks(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_ordered_request(PATH).respond_with_json(
        openai_error("Rate limit reached", "requests"),
        status=429,
        headers={"Retry-After": "1"},
    )
    httpserver.expect_ordered_request(PATH).respond_with_json(completion())

    started = time.monotonic()
    answer = ask(provider(httpserver), HELLO)
    waited = time.monotonic() - started

    assert answer.response == b"Hello from the model."
    assert len(sent(httpserver)) == 2
    # The SDK's own backoff would be at most 0.5 s; one second is the server's ask.
    assert waited >= 0.9


def test_500_until_max_retries_is_exhausted_sends_exactly_max_retries_plus_one(
    httpserver: HTTPServer, secret_key: str
) -> None:
    # retry-after-ms keeps the test fast: the SDK honours it instead of its backoff.
    httpserver.expect_request(PATH).respond_with_json(
        openai_error("The server had an error", "server_error"),
        status=500,
        headers={"retry-after-ms": "5"},
    )

    error = fails(provider(httpserver, max_retries=3), HELLO)

    assert len(sent(httpserver)) == 4
    assert (error.status, error.retries, error.error_class) == (500, 3, "server_error")
    assert str(error) == (
        "openai model 'gpt-test': HTTP 500 after 3 retries: The server had an error"
    )


def test_401_fails_at_once_without_retry_and_without_the_key(
    httpserver: HTTPServer, secret_key: str
) -> None:
    # Some servers echo the key they refused: it must be masked in what we report.
    httpserver.expect_request(PATH).respond_with_json(
        openai_error(f"Incorrect API key provided: {secret_key}.", "auth"),
        status=401,
    )

    error = fails(provider(httpserver, max_retries=3), HELLO)

    assert len(sent(httpserver)) == 1
    assert (error.status, error.retries, error.error_class) == (401, 0, "auth")
    assert "Incorrect API key provided: ***." in str(error)
    assert secret_key not in str(error)
    assert secret_key not in repr(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.status, copy.retries) == (str(error), 401, 0)


def test_a_response_slower_than_timeout_s_fails_as_a_timeout(
    httpserver: HTTPServer, secret_key: str
) -> None:
    model = provider(httpserver, timeout_s=0.2, max_retries=0)

    error = times_out(model, httpserver, PATH, completion())

    assert (error.status, error.retries, error.error_class) == (None, 0, "timeout")
    assert "no answer within timeout_s=0.2" in str(error)


def test_a_body_that_is_not_json_fails_without_retry(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_data(
        "<html>upstream says hi</html>", content_type="text/html"
    )

    error = fails(provider(httpserver), HELLO)

    assert len(sent(httpserver)) == 1
    assert error.error_class == "invalid_response"
    assert "body is not JSON: <html>upstream says hi</html>" in str(error)


def test_json_that_is_not_a_completion_fails_as_invalid(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json({"status": "ok"})

    error = fails(provider(httpserver), HELLO)

    assert error.error_class == "invalid_response"
    assert "body has no choices" in str(error)


def test_a_response_without_usage_is_accepted_with_zero_tokens(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(completion(usage=False))

    answer = ask(provider(httpserver), HELLO)

    assert (answer.response, answer.input_tokens, answer.output_tokens) == (
        b"Hello from the model.",
        0,
        0,
    )


def test_a_refused_connection_is_retried_then_reported(secret_key: str) -> None:
    # Port 9 on loopback: nothing listens there.
    model = OpenAICompatibleProvider(
        "gpt-test", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV, max_retries=0
    )

    error = fails(model, HELLO)

    assert (error.error_class, error.retries, error.status) == ("connection", 0, None)


def test_a_missing_key_fails_at_construction_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BEAM_AGENTS_TEST_ABSENT_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="BEAM_AGENTS_TEST_ABSENT_KEY is not set"):
        OpenAICompatibleProvider("gpt-test", api_key_env="BEAM_AGENTS_TEST_ABSENT_KEY")


def test_the_key_is_in_no_repr_and_the_provider_refuses_to_pickle(
    httpserver: HTTPServer, secret_key: str
) -> None:
    assert_key_kept_private(provider(httpserver), secret_key)


def test_a_body_nested_past_the_recursion_limit_fails_as_invalid(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_data(
        "[" * 100_000 + "]" * 100_000, content_type="application/json"
    )

    error = fails(provider(httpserver), HELLO)

    assert len(sent(httpserver)) == 1
    assert error.error_class == "invalid_response"
    assert "body is not JSON" in str(error)


def test_tool_call_arguments_nested_past_the_recursion_limit_fail_as_invalid(
    httpserver: HTTPServer, secret_key: str
) -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [{"function": {"name": "lookup", "arguments": deep}}],
                }
            }
        ]
    }
    httpserver.expect_request(PATH).respond_with_json(body)

    error = fails(provider(httpserver), HELLO)

    assert error.error_class == "invalid_response"
    assert "arguments of tool call 'lookup' are not a JSON object" in str(error)
