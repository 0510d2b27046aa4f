"""Structured output through OpenAICompatibleProvider, against a loopback chat-completions server.

The request goes out as `response_format` with the JSON Schema (strict
where the schema allows it); the answer is validated by the runtime, a
wrong one re-asked once with its errors, and a refusal or a cut-off answer
dead-lettered `output_invalid` without a re-ask.
"""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from pytest_httpserver import HTTPServer

from beam_agents import LlmRequest
from beam_agents.model import OpenAICompatibleProvider
from beam_agents.model.messages import STOP_LENGTH, STOP_REFUSED
from tests.model.exchange import KEY_ENV, ask, sent
from tests.model.typed_agent import (
    GOOD,
    SYSTEM,
    TRIAGE_SCHEMA,
    WRONG,
    openai_spec,
    run_typed,
    triage_request,
)

PATH = "/v1/chat/completions"


def chat_answer(
    content: str | None, *, refusal: str | None = None, finish_reason: str = "stop"
) -> dict[str, Any]:
    """A chat-completions body as a server with structured output sends it."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-test-served",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
    }


def provider(server: HTTPServer, **kwargs: Any) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        "gpt-test", base_url=server.url_for("/v1"), api_key_env=KEY_ENV, max_retries=0, **kwargs
    )


class Ticket(pydantic.BaseModel):
    title: str
    labels: list[str] = []


def test_a_typed_request_sends_response_format_with_the_strict_schema(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(chat_answer(GOOD))

    answer = ask(provider(httpserver), triage_request("disk 91% full"))

    assert (answer.response, answer.stop_reason) == (GOOD.encode(), "")
    body = sent(httpserver)[0].get_json()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Triage",
            "schema": {**TRIAGE_SCHEMA, "additionalProperties": False},
            "strict": True,
        },
    }
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "disk 91% full"},
    ]


def test_a_schema_with_an_optional_field_goes_out_as_given_without_strict_mode(
    httpserver: HTTPServer, secret_key: str
) -> None:
    """Strict mode would make `labels` required: a narrower answer than the type asks for."""
    httpserver.expect_request(PATH).respond_with_json(chat_answer('{"title": "t"}'))

    ask(provider(httpserver), LlmRequest("m", ["File it."], output_type=Ticket))

    sent_format = sent(httpserver)[0].get_json()["response_format"]["json_schema"]
    assert sent_format == {
        "name": "Ticket",
        "schema": Ticket.model_json_schema(),
        "strict": False,
    }


def test_a_plain_request_sends_no_response_format(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_request(PATH).respond_with_json(chat_answer("Hello."))

    ask(provider(httpserver), LlmRequest("m", ["Say hello."]))

    assert "response_format" not in sent(httpserver)[0].get_json()


@pytest.mark.parametrize(
    ("content", "refusal", "finish_reason", "response", "stop_reason"),
    [
        (None, "I can't help with that.", "stop", b"I can't help with that.", STOP_REFUSED),
        ('{"priority": "p', None, "length", b'{"priority": "p', STOP_LENGTH),
        (
            None,
            None,
            "content_filter",
            b"(no answer: the server's content filter stopped it)",
            STOP_REFUSED,
        ),
        (
            '{"priority": "p1", "reason": "x"}',
            None,
            "content_filter",
            b'{"priority": "p1", "reason": "x"}',
            STOP_REFUSED,
        ),
        (GOOD, None, "stop", GOOD.encode(), ""),
    ],
    ids=["refusal", "length", "filtered-without-text", "filtered-with-text", "finished"],
)
def test_refusals_and_finish_reasons_come_back_as_stop_reasons(
    httpserver: HTTPServer,
    secret_key: str,
    content: str | None,
    refusal: str | None,
    finish_reason: str,
    response: bytes,
    stop_reason: str,
) -> None:
    """The SDK's `create()` leaves both to the caller; they are read from the body."""
    httpserver.expect_request(PATH).respond_with_json(
        chat_answer(content, refusal=refusal, finish_reason=finish_reason)
    )

    answer = ask(provider(httpserver), triage_request("disk 91% full"))

    assert (answer.response, answer.stop_reason) == (response, stop_reason)
    assert (answer.input_tokens, answer.output_tokens) == (30, 9)


def test_a_conformant_answer_validates_in_a_pipeline(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(chat_answer(GOOD))

    run = run_typed(openai_spec(httpserver.url_for("/v1")), [("db", "disk 91% full")])

    assert run.errors == []
    assert run.outputs == [(b"db", b"p2|disk filling")]
    assert len(sent(httpserver)) == 1


def test_a_wrong_answer_is_re_asked_once_with_its_errors_then_dead_lettered_with_the_raw_answer(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(chat_answer(WRONG))

    run = run_typed(openai_spec(httpserver.url_for("/v1")), [("db", "disk 91% full")])

    assert run.outputs == []
    assert run.reasons() == ["output_invalid"]
    detail = run.errors[0].detail
    assert "after 1 repair" in detail
    assert f"raw: {WRONG}" in detail
    first, repair = (request.get_json() for request in sent(httpserver))
    assert repair["response_format"] == first["response_format"]
    assert repair["messages"][:2] == first["messages"]
    assert repair["messages"][2] == {"role": "assistant", "content": WRONG}
    errors = repair["messages"][3]["content"]
    assert repair["messages"][3]["role"] == "user"
    assert "priority: Input should be 'p1', 'p2' or 'p3'" in errors
    assert "reason: Input should be a valid string" in errors


def test_a_wrong_answer_that_the_repair_fixes_validates(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_ordered_request(PATH).respond_with_json(chat_answer(WRONG))
    httpserver.expect_ordered_request(PATH).respond_with_json(chat_answer(GOOD))

    run = run_typed(openai_spec(httpserver.url_for("/v1")), [("db", "disk 91% full")])

    assert run.errors == []
    assert run.outputs == [(b"db", b"p2|disk filling")]
    assert len(sent(httpserver)) == 2


@pytest.mark.parametrize(
    ("body", "why", "raw"),
    [
        (
            chat_answer(None, refusal="I can't help with that."),
            "(root): the model refused to answer",
            "I can't help with that.",
        ),
        (
            chat_answer('{"priority": "p2", "rea', finish_reason="length"),
            "(root): the answer was cut off at the output token limit",
            '{"priority": "p2", "rea',
        ),
    ],
    ids=["refusal", "length"],
)
def test_a_refused_or_cut_off_answer_is_output_invalid_without_a_repair(
    httpserver: HTTPServer, secret_key: str, body: dict[str, Any], why: str, raw: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(body)

    run = run_typed(openai_spec(httpserver.url_for("/v1")), [("db", "disk 91% full")])

    assert run.reasons() == ["output_invalid"]
    assert why in run.errors[0].detail
    assert f"raw: {raw}" in run.errors[0].detail
    assert "after 0 repairs" in run.errors[0].detail
    assert len(sent(httpserver)) == 1


def test_a_type_name_the_api_would_refuse_is_cut_to_the_characters_it_accepts(
    httpserver: HTTPServer, secret_key: str
) -> None:
    """The API takes 1 to 64 of A-Z, a-z, 0-9, _ and -; a Python class name may hold more."""
    named = pydantic.create_model("Décision" + "x" * 70, verdict=(str, ...))
    httpserver.expect_request(PATH).respond_with_json(chat_answer('{"verdict": "ok"}'))

    ask(provider(httpserver), LlmRequest("m", ["Decide."], output_type=named))

    sent_format = sent(httpserver)[0].get_json()["response_format"]["json_schema"]
    assert sent_format["name"] == "D_cision" + "x" * 56
