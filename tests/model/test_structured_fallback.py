"""Chat-completions servers without structured output: the prompt fallback, and prose around JSON.

A server that rejects `response_format` (a 400 or 422 naming it) gets the
schema as a system message instead, on that call and every later call of
the provider; `structured_output="prompt"` asks that way from the start;
a server that ignores `response_format` and answers prose around the JSON
still validates, because the JSON is extracted from the answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents import LlmRequest, LlmResponse
from beam_agents.errors import ConfigurationError
from beam_agents.model import OpenAICompatibleProvider, ProviderError, provider_from_spec
from tests.model.exchange import KEY_ENV, ask, openai_error, sent
from tests.model.test_structured_openai import PATH, chat_answer, provider
from tests.model.typed_agent import (
    GOOD,
    SYSTEM,
    TRIAGE_SCHEMA,
    Triage,
    openai_spec,
    run_typed,
    triage_request,
)

INSTRUCTION = (
    "Answer with only a JSON value matching the Triage JSON Schema below: "
    "no prose before or after it, no code fence.\n"
    + json.dumps(TRIAGE_SCHEMA, sort_keys=True, separators=(",", ":"))
)
"""What a server without structured output is told, appended to the agent's system message."""


def without_structured_output(answer: str) -> Any:
    """A server that answers 400 to any `response_format`, as one without the feature does."""

    def handle(request: Request) -> Response:
        if "response_format" in request.get_json():
            error = openai_error(
                "response_format of type json_schema is not supported", "invalid_request_error"
            )
            return Response(json.dumps(error), status=400, content_type="application/json")
        return Response(json.dumps(chat_answer(answer)), content_type="application/json")

    return handle


def asked_in_words(body: dict[str, Any]) -> bool:
    """Whether `body` carries the schema as the system message's instruction, not natively."""
    return "response_format" not in body and body["messages"][0] == {
        "role": "system",
        "content": f"{SYSTEM}\n\n{INSTRUCTION}",
    }


def test_a_server_that_rejects_response_format_gets_the_schema_in_a_system_message(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_handler(without_structured_output(GOOD))

    run = run_typed(openai_spec(httpserver.url_for("/v1")), [("db", "disk 91% full")])

    assert run.errors == []
    assert run.outputs == [(b"db", b"p2|disk filling")]
    rejected, fallback = (request.get_json() for request in sent(httpserver))
    assert rejected["response_format"]["json_schema"]["name"] == "Triage"
    assert asked_in_words(fallback)
    assert fallback["messages"][1:] == [{"role": "user", "content": "disk 91% full"}]


def test_after_one_rejection_every_later_call_asks_in_words_and_it_is_logged_once(
    httpserver: HTTPServer, secret_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    httpserver.expect_request(PATH).respond_with_handler(without_structured_output(GOOD))
    model = provider(httpserver)

    async def three_calls() -> list[LlmResponse]:
        try:
            return [await model.complete(triage_request(f"alert {i}")) for i in range(3)]
        finally:
            await model.aclose()

    answers = asyncio.run(three_calls())

    assert [answer.response for answer in answers] == [GOOD.encode()] * 3
    bodies = [request.get_json() for request in sent(httpserver)]
    assert ["response_format" in body for body in bodies] == [True, False, False, False]
    assert all(asked_in_words(body) for body in bodies[1:])
    assert model.structured_output == "prompt"
    switched = [r for r in caplog.records if "rejected response_format" in r.getMessage()]
    assert [r.levelno for r in switched] == [logging.INFO]
    assert "HTTP 400" in switched[0].getMessage()


def test_a_400_about_something_else_fails_the_call_and_keeps_asking_natively(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        openai_error("The model gpt-test does not exist", "invalid_request_error"), status=400
    )
    model = provider(httpserver)

    with pytest.raises(ProviderError, match="HTTP 400 after 0 retries: The model gpt-test"):
        ask(model, triage_request("disk 91% full"))

    assert len(sent(httpserver)) == 1
    assert model.structured_output == "native"


def test_the_prompt_mode_sends_no_response_format_and_leads_with_the_instruction(
    httpserver: HTTPServer, secret_key: str
) -> None:
    """Without a system message of the agent's, the instruction is a system message of its own."""
    httpserver.expect_request(PATH).respond_with_json(chat_answer(GOOD))
    request = LlmRequest("m", ["disk 91% full"], output_type=Triage)

    ask(provider(httpserver, structured_output="prompt"), request)

    (body,) = (request.get_json() for request in sent(httpserver))
    assert "response_format" not in body
    assert body["messages"] == [
        {"role": "system", "content": INSTRUCTION},
        {"role": "user", "content": "disk 91% full"},
    ]


def test_the_spec_option_structured_output_prompt_reaches_the_wire(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(chat_answer(GOOD))
    spec = openai_spec(httpserver.url_for("/v1"), structured_output="prompt")

    run = run_typed(spec, [("db", "disk 91% full")])

    assert run.outputs == [(b"db", b"p2|disk filling")]
    (body,) = (request.get_json() for request in sent(httpserver))
    assert asked_in_words(body)


@pytest.mark.parametrize("value", ["json", "Native", ""])
def test_an_unknown_structured_output_mode_is_refused_by_name(value: str) -> None:
    with pytest.raises(ConfigurationError, match="structured_output: must be 'native' or 'prompt'"):
        OpenAICompatibleProvider("gpt-test", api_key_env=KEY_ENV, structured_output=value)  # type: ignore[arg-type]


def test_the_spec_refuses_an_unknown_structured_output_mode_and_embedders_have_no_such_option() -> (
    None
):
    with pytest.raises(ConfigurationError, match="structured_output: must be 'native' or 'prompt'"):
        provider_from_spec("openai:gpt-test?structured_output=strict")
    from beam_agents.model import embedder_from_spec

    with pytest.raises(ConfigurationError, match="option 'structured_output'"):
        embedder_from_spec("openai:text-embedding-3-small?structured_output=prompt")


def test_a_server_that_ignores_response_format_and_answers_prose_around_json_validates(
    httpserver: HTTPServer, secret_key: str
) -> None:
    prose = f"Sure! Here is the triage:\n```json\n{GOOD}\n```\nLet me know if you need more."
    httpserver.expect_request(PATH).respond_with_json(chat_answer(prose))

    run = run_typed(openai_spec(httpserver.url_for("/v1")), [("db", "disk 91% full")])

    assert run.errors == []
    assert run.outputs == [(b"db", b"p2|disk filling")]
    assert len(sent(httpserver)) == 1
