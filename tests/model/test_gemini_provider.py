"""GeminiProvider against a loopback server speaking `POST /v1beta/models/MODEL:generateContent`."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from beam_agents import LlmRequest, LlmResponse
from beam_agents.errors import ConfigurationError
from beam_agents.model import GeminiProvider
from tests.model.exchange import (
    HELLO,
    KEY_ENV,
    ask,
    assert_key_kept_private,
    fails,
    gemini_error,
    refused_before_sending,
    sent,
    times_out,
)

PATH = "/v1beta/models/gemini-test:generateContent"


def generated(
    *parts: dict[str, Any],
    usage: dict[str, int] | None = None,
    model_version: str = "gemini-test-001",
) -> dict[str, Any]:
    """A generateContent body as the Gemini API sends it."""
    body: dict[str, Any] = {
        "candidates": [
            {
                "content": {"role": "model", "parts": list(parts) or [{"text": "Hello there."}]},
                "finishReason": "STOP",
            }
        ],
        "modelVersion": model_version,
    }
    if usage is not None:
        body["usageMetadata"] = usage
    return body


USAGE = {"promptTokenCount": 9, "candidatesTokenCount": 4, "totalTokenCount": 13}


def provider(server: HTTPServer, **kwargs: Any) -> GeminiProvider:
    kwargs.setdefault("timeout_s", 5.0)
    kwargs.setdefault("max_retries", 2)
    # google-genai ignores Retry-After; a small backoff keeps retry tests fast.
    kwargs.setdefault("retry_backoff_s", 0.01)
    return GeminiProvider(
        "gemini-test", base_url=server.url_for("/"), api_key_env=KEY_ENV, **kwargs
    )


def test_plain_answer_returns_text_model_and_usage(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_oneshot_request(PATH, method="POST").respond_with_json(
        generated({"text": "Hello "}, {"text": "there."}, usage=USAGE)
    )

    answer = ask(provider(httpserver), HELLO)

    assert answer == LlmResponse(
        response=b"Hello there.", model_id="gemini-test-001", input_tokens=9, output_tokens=4
    )
    (request,) = sent(httpserver)
    assert request.headers["x-goog-api-key"] == secret_key
    body = request.get_json()
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Say hello."}]}]
    assert "systemInstruction" not in body
    assert "tools" not in body


def test_thought_tokens_count_as_output_and_thoughts_are_not_the_answer(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        generated(
            {"text": "Let me think...", "thought": True},
            {"text": "42"},
            usage={**USAGE, "thoughtsTokenCount": 30},
        )
    )

    answer = ask(provider(httpserver), HELLO)

    assert (answer.response, answer.input_tokens, answer.output_tokens) == (b"42", 9, 34)


def test_function_call_parts_come_back_as_canonical_tool_calls(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        generated(
            {"functionCall": {"name": "lookup", "args": {"q": "beam", "n": 2}}},
            {"functionCall": {"name": "now"}},
            usage=USAGE,
        )
    )
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = {"lookup": {"description": "Search the docs.", "parameters": schema}, "now": {}}

    answer = ask(
        provider(httpserver), LlmRequest(model_id="m", messages=["Find"], tools_schema=tools)
    )

    assert answer.response == (
        b'{"tool_calls":[{"arguments":{"n":2,"q":"beam"},"name":"lookup"},'
        b'{"arguments":{},"name":"now"}]}'
    )
    (tool,) = sent(httpserver)[0].get_json()["tools"]
    lookup, now = tool["functionDeclarations"]
    assert (lookup["name"], lookup["description"]) == ("lookup", "Search the docs.")
    assert lookup.get("parametersJsonSchema", lookup.get("parameters_json_schema")) == schema
    assert now == {"name": "now"}


def test_system_becomes_system_instruction_and_turns_map_natively(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(generated(usage=USAGE))
    messages = [
        {"role": "system", "content": "You are terse."},
        "What is the weather?",
        {
            "role": "assistant",
            "content": '{"tool_calls":[{"arguments":{"city":"Oslo"},"name":"weather"}]}',
        },
        {"role": "tool", "name": "weather", "content": '{"celsius": -3}'},
        {"role": "assistant", "content": "It is -3 C."},
    ]

    ask(provider(httpserver), LlmRequest(model_id="m", messages=messages))

    body = sent(httpserver)[0].get_json()
    assert body["systemInstruction"]["parts"] == [{"text": "You are terse."}]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "What is the weather?"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "weather", "response": {"celsius": -3}}}],
        },
        {"role": "model", "parts": [{"text": "It is -3 C."}]},
    ]


def test_a_tool_result_without_the_tools_name_is_refused_by_name(
    httpserver: HTTPServer, secret_key: str
) -> None:
    request = LlmRequest(model_id="m", messages=["x", {"role": "tool", "content": "3"}])
    refused_before_sending(provider(httpserver), request, httpserver, r"messages\[1\]\.name")


def test_sampling_parameters_go_on_the_wire(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_request(PATH).respond_with_json(generated(usage=USAGE))
    sampling = {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 64,
        "stop": ["END", "STOP"],
        "seed": 7,
    }

    ask(provider(httpserver), LlmRequest(model_id="m", messages=["x"], sampling_params=sampling))

    assert sent(httpserver)[0].get_json()["generationConfig"] == {
        "temperature": 0.2,
        "topP": 0.9,
        "maxOutputTokens": 64,
        "stopSequences": ["END", "STOP"],
        "seed": 7,
    }


def test_unknown_sampling_parameter_is_refused_by_name(
    httpserver: HTTPServer, secret_key: str
) -> None:
    request = LlmRequest(model_id="m", messages=["x"], sampling_params={"frequency_penalty": 1})
    refused_before_sending(
        provider(httpserver), request, httpserver, r"sampling_params\.frequency_penalty"
    )


def test_429_is_retried_once_and_the_answer_returned(
    httpserver: HTTPServer, secret_key: str
) -> None:
    # google-genai does not read Retry-After: it waits its own backoff (0.01 s
    # here), not the 30 s asked, which is why this test finishes at once.
    httpserver.expect_ordered_request(PATH).respond_with_json(
        gemini_error(429, "Resource exhausted", "RESOURCE_EXHAUSTED"),
        status=429,
        headers={"Retry-After": "30"},
    )
    httpserver.expect_ordered_request(PATH).respond_with_json(generated(usage=USAGE))

    answer = ask(provider(httpserver), HELLO)

    assert answer.response == b"Hello there."
    assert len(sent(httpserver)) == 2


def test_500_until_max_retries_is_exhausted_sends_exactly_max_retries_plus_one(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        gemini_error(500, "Internal error encountered.", "INTERNAL"),
        status=500,
    )

    error = fails(provider(httpserver, max_retries=3), HELLO)

    assert len(sent(httpserver)) == 4
    assert (error.status, error.retries, error.error_class) == (500, 3, "server_error")
    assert str(error) == (
        "gemini model 'gemini-test': HTTP 500 after 3 retries: Internal error encountered."
    )


def test_401_fails_at_once_without_retry_and_without_the_key(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        gemini_error(401, f"API key not valid: {secret_key}", "UNAUTHENTICATED"), status=401
    )

    error = fails(provider(httpserver, max_retries=3), HELLO)

    assert len(sent(httpserver)) == 1
    assert (error.status, error.retries, error.error_class) == (401, 0, "auth")
    assert "API key not valid: ***" in str(error)
    assert secret_key not in str(error)
    assert secret_key not in repr(error)


def test_a_response_slower_than_timeout_s_fails_as_a_timeout(
    httpserver: HTTPServer, secret_key: str
) -> None:
    model = provider(httpserver, timeout_s=0.2, max_retries=0)

    error = times_out(model, httpserver, PATH, generated())

    assert (error.status, error.retries, error.error_class) == (None, 0, "timeout")
    assert "no answer within timeout_s=0.2" in str(error)


def test_a_body_that_is_not_json_fails_without_retry(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_data("<html>proxy page</html>")

    error = fails(provider(httpserver), HELLO)

    assert len(sent(httpserver)) == 1
    assert error.error_class == "invalid_response"


def test_an_answer_without_candidates_fails_naming_the_block(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": USAGE}
    )

    error = fails(provider(httpserver), HELLO)

    assert error.error_class == "invalid_response"
    assert "no candidates (prompt blocked: " in str(error)


def test_a_response_without_usage_is_accepted_with_zero_tokens(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(generated())

    answer = ask(provider(httpserver), HELLO)

    assert (answer.response, answer.input_tokens, answer.output_tokens) == (b"Hello there.", 0, 0)


def test_a_missing_key_fails_at_construction_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BEAM_AGENTS_TEST_ABSENT_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="BEAM_AGENTS_TEST_ABSENT_KEY is not set"):
        GeminiProvider("gemini-test", api_key_env="BEAM_AGENTS_TEST_ABSENT_KEY")


def test_vertex_location_without_a_project_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="vertex_location: needs vertex_project"):
        GeminiProvider("gemini-test", vertex_location="europe-west4")


def test_the_key_is_in_no_repr_and_the_provider_refuses_to_pickle(
    httpserver: HTTPServer, secret_key: str
) -> None:
    assert_key_kept_private(provider(httpserver), secret_key)
