"""Structured output through GeminiProvider, against a loopback `generateContent` server.

The request asks for JSON natively (`responseMimeType` and the JSON Schema
as `responseJsonSchema`); the answer is validated by the runtime, a wrong
one re-asked once with its errors, and an answer cut off (`MAX_TOKENS`) or
stopped by a filter (or a blocked prompt) dead-lettered `output_invalid`
without a re-ask.
"""

from __future__ import annotations

from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from beam_agents import LlmRequest
from beam_agents.model import GeminiProvider
from beam_agents.model.messages import STOP_LENGTH, STOP_REFUSED
from tests.model.exchange import KEY_ENV, ask, fails, sent
from tests.model.typed_agent import (
    GOOD,
    SYSTEM,
    TRIAGE_SCHEMA,
    WRONG,
    gemini_spec,
    run_typed,
    triage_request,
)

PATH = "/v1beta/models/gemini-test:generateContent"
USAGE = {"promptTokenCount": 30, "candidatesTokenCount": 9, "totalTokenCount": 39}


def generated(text: str | None, finish_reason: str = "STOP") -> dict[str, Any]:
    """A generateContent body; `text=None` is a candidate without content, as a filter leaves it."""
    candidate: dict[str, Any] = {"finishReason": finish_reason}
    if text is not None:
        candidate["content"] = {"role": "model", "parts": [{"text": text}]}
    return {"candidates": [candidate], "modelVersion": "gemini-test-001", "usageMetadata": USAGE}


BLOCKED = {
    "promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "not allowed"},
    "usageMetadata": USAGE,
}


def provider(server: HTTPServer) -> GeminiProvider:
    return GeminiProvider(
        "gemini-test", base_url=server.url_for("/"), api_key_env=KEY_ENV, max_retries=0
    )


def test_a_typed_request_asks_for_json_with_the_json_schema_as_it_is(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(generated(GOOD))

    answer = ask(provider(httpserver), triage_request("disk 91% full"))

    assert (answer.response, answer.stop_reason) == (GOOD.encode(), "")
    body = sent(httpserver)[0].get_json()
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    assert body["generationConfig"]["responseJsonSchema"] == TRIAGE_SCHEMA
    assert "responseSchema" not in body["generationConfig"]
    assert body["systemInstruction"]["parts"] == [{"text": SYSTEM}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "disk 91% full"}]}]


def test_a_plain_request_asks_for_no_mime_type_or_schema(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(generated("Hello."))

    ask(provider(httpserver), LlmRequest("m", ["Say hello."]))

    config = sent(httpserver)[0].get_json().get("generationConfig", {})
    assert "responseMimeType" not in config
    assert "responseJsonSchema" not in config


@pytest.mark.parametrize(
    ("body", "response", "stop_reason"),
    [
        (generated('{"priority": "p', "MAX_TOKENS"), b'{"priority": "p', STOP_LENGTH),
        (generated(None, "MAX_TOKENS"), b"", STOP_LENGTH),
        (generated(GOOD, "SAFETY"), GOOD.encode(), STOP_REFUSED),
        (generated(None, "SAFETY"), b"(no answer: finish reason SAFETY)", STOP_REFUSED),
        (generated(None, "RECITATION"), b"(no answer: finish reason RECITATION)", STOP_REFUSED),
        (generated(None, "BLOCKLIST"), b"(no answer: finish reason BLOCKLIST)", STOP_REFUSED),
        (
            generated(None, "PROHIBITED_CONTENT"),
            b"(no answer: finish reason PROHIBITED_CONTENT)",
            STOP_REFUSED,
        ),
        (generated(None, "SPII"), b"(no answer: finish reason SPII)", STOP_REFUSED),
        (
            BLOCKED,
            b"(no answer: the prompt was blocked, PROHIBITED_CONTENT: not allowed)",
            STOP_REFUSED,
        ),
        (generated(GOOD), GOOD.encode(), ""),
    ],
    ids=[
        "max-tokens",
        "max-tokens-empty",
        "safety-with-text",
        "safety",
        "recitation",
        "blocklist",
        "prohibited",
        "spii",
        "prompt-blocked",
        "stop",
    ],
)
def test_finish_reasons_and_blocks_of_a_typed_request_come_back_as_stop_reasons(
    httpserver: HTTPServer,
    secret_key: str,
    body: dict[str, Any],
    response: bytes,
    stop_reason: str,
) -> None:
    """google-genai hands the finish reason back untouched; it is read here."""
    httpserver.expect_request(PATH).respond_with_json(body)

    answer = ask(provider(httpserver), triage_request("disk 91% full"))

    assert (answer.response, answer.stop_reason) == (response, stop_reason)
    assert (answer.input_tokens, answer.output_tokens) == (30, 9)


def test_a_filtered_plain_request_without_text_still_fails_as_a_model_error(
    httpserver: HTTPServer, secret_key: str
) -> None:
    """Nothing reads a plain call's stop reason, so no note may pass as its answer."""
    httpserver.expect_request(PATH).respond_with_json(generated(None, "SAFETY"))

    error = fails(provider(httpserver), LlmRequest("m", ["Say hello."]))

    assert error.error_class == "invalid_response"
    assert "no content (finish reason" in str(error)


def test_a_plain_answer_cut_off_with_text_carries_its_stop_reason(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(generated("Hello, th", "MAX_TOKENS"))

    answer = ask(provider(httpserver), LlmRequest("m", ["Say hello."]))

    assert (answer.response, answer.stop_reason) == (b"Hello, th", STOP_LENGTH)


def test_a_conformant_answer_validates_in_a_pipeline(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(generated(GOOD))

    run = run_typed(gemini_spec(httpserver.url_for("/")), [("db", "disk 91% full")])

    assert run.errors == []
    assert run.outputs == [(b"db", b"p2|disk filling")]
    assert len(sent(httpserver)) == 1


def test_a_wrong_answer_is_re_asked_once_with_its_errors_then_dead_lettered_with_the_raw_answer(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(generated(WRONG))

    run = run_typed(gemini_spec(httpserver.url_for("/")), [("db", "disk 91% full")])

    assert run.outputs == []
    assert run.reasons() == ["output_invalid"]
    assert "after 1 repair" in run.errors[0].detail
    assert f"raw: {WRONG}" in run.errors[0].detail
    first, repair = (request.get_json() for request in sent(httpserver))
    assert repair["generationConfig"] == first["generationConfig"]
    assert repair["contents"][0] == first["contents"][0]
    assert repair["contents"][1] == {"role": "model", "parts": [{"text": WRONG}]}
    errors = repair["contents"][2]["parts"][0]["text"]
    assert "priority: Input should be 'p1', 'p2' or 'p3'" in errors
    assert "reason: Input should be a valid string" in errors


@pytest.mark.parametrize(
    ("body", "why", "raw"),
    [
        (
            generated(None, "SAFETY"),
            "(root): the model refused to answer",
            "(no answer: finish reason SAFETY)",
        ),
        (
            BLOCKED,
            "(root): the model refused to answer",
            "(no answer: the prompt was blocked, PROHIBITED_CONTENT: not allowed)",
        ),
        (
            generated('{"priority": "p2", "rea', "MAX_TOKENS"),
            "(root): the answer was cut off at the output token limit",
            '{"priority": "p2", "rea',
        ),
    ],
    ids=["safety", "prompt-blocked", "max-tokens"],
)
def test_a_refused_or_cut_off_answer_is_output_invalid_without_a_repair(
    httpserver: HTTPServer, secret_key: str, body: dict[str, Any], why: str, raw: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(body)

    run = run_typed(gemini_spec(httpserver.url_for("/")), [("db", "disk 91% full")])

    assert run.reasons() == ["output_invalid"]
    assert why in run.errors[0].detail
    assert f"raw: {raw}" in run.errors[0].detail
    assert "after 0 repairs" in run.errors[0].detail
    assert len(sent(httpserver)) == 1
