"""OpenAICompatibleProvider: chat completions through the official `openai` SDK.

One class serves OpenAI itself and every server that speaks the
chat-completions wire format (vLLM, Ollama, LM Studio, a LiteLLM proxy):
point `base_url` at it. The SDK sends the request, authenticates
(`Authorization: Bearer`), and retries connection errors, timeouts, 408,
409, 429 and 5xx up to `max_retries` times, waiting what the server's
`retry-after-ms` / `Retry-After` header asks (up to 60 s) or else an
exponential backoff from 0.5 s. This module maps requests and answers and
turns every failure into a `ProviderError` the runtime reports as
`model_error`.

The answer is read from the raw body rather than the SDK's parsed object:
the SDK hands back a bare string or an all-None object for a body that is
not the wire format, and such an answer must fail loudly, not replay as "".
It also leaves `refusal` and `finish_reason` alone on `create()` (only its
`parse()` raises on a cut-off or filtered answer), so they are read here:
a refusal or a `content_filter` stop is `STOP_REFUSED`, a `length` stop
`STOP_LENGTH`.

A structured request (`output_type`) is sent as `response_format` with the
JSON Schema (strict where `strict_schema` allows), or, in the `prompt`
mode, as a system message asking for the JSON. A server that rejects
`response_format` with a 400 or 422 naming it switches the provider to the
prompt mode for that call and every later one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, NoReturn

from beam_agents.model import _options
from beam_agents.model._calls import Attempts, metered_call, record_usage, truncate
from beam_agents.model._openai_client import OpenAISettings, openai_failures
from beam_agents.model._requests import (
    function_declarations,
    normalize_messages,
    read_sampling,
    tool_calls_answer,
)
from beam_agents.model._structured_wire import (
    StructuredOutputMode,
    check_structured_output,
    requested_schema,
    response_format,
    with_schema_instruction,
)
from beam_agents.model.messages import STOP_LENGTH, STOP_REFUSED, LlmRequest, LlmResponse

if TYPE_CHECKING:
    import openai
    from openai._legacy_response import LegacyAPIResponse

    from beam_agents.model.structured import OutputSchema

__all__ = ["OpenAICompatibleProvider"]

_NAME = "openai"
_log = logging.getLogger(__name__)

_REJECTS_FORMAT: Final = (400, 422)
_FORMAT_WORDS: Final = ("response_format", "json_schema")
_FILTERED_NOTE: Final = "(no answer: the server's content filter stopped it)"


class OpenAICompatibleProvider:
    """A chat-completions model (OpenAI, vLLM, Ollama, LM Studio, LiteLLM) via the `openai` SDK.

    Built on the worker: the constructor reads the key from `api_key_env` or,
    when set, from the Secret Manager version `api_key_secret`, and fails
    naming where it looked when there is none. The key stays inside the SDK
    client; the provider cannot be pickled (pickle its factory instead, e.g.
    `provider_from_spec("openai:MODEL")`).

    `timeout_s` bounds each HTTP attempt; `max_retries` bounds the SDK's
    retries. The activation timeout bounds the whole call: keep
    `timeout_s * (max_retries + 1)` plus backoff below it, or a slow server
    surfaces as `activation_timeout` instead of `model_error`.

    `structured_output` says how a request's `output_type` is asked for:
    `"native"` sends `response_format` (and falls back to `"prompt"` for
    good once the server rejects it), `"prompt"` asks in a system message,
    for servers known to have no structured output.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        api_key_secret: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        structured_output: StructuredOutputMode = "native",
    ) -> None:
        self._model = _options.check_model(model)
        self._settings = OpenAISettings.checked(
            base_url=base_url,
            api_key_env=api_key_env,
            api_key_secret=api_key_secret,
            timeout_s=timeout_s,
            max_retries=max_retries,
        )
        self._structured_output = check_structured_output(structured_output)
        self._key, self._client = self._settings.connect("OpenAICompatibleProvider")

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def structured_output(self) -> StructuredOutputMode:
        """How structured requests are asked for now: `"prompt"` once a server refused natively."""
        return self._structured_output

    async def complete(self, request: LlmRequest) -> LlmResponse:
        """Ask the model; raise ProviderError (or a ValueError for a bad request) on failure."""
        with metered_call(_NAME, self._model, self._key) as attempts:
            schema = requested_schema(request.output_type)
            body = self._body(request, schema)
            with openai_failures(attempts, self._settings.timeout_s):
                raw = await self._send(request, schema, body)
                text = raw.http_response.text
            return self._answer(text, attempts, structured=schema is not None)

    async def _send(
        self, request: LlmRequest, schema: OutputSchema | None, body: dict[str, Any]
    ) -> LegacyAPIResponse[Any]:
        """Send `body`; on a rejected `response_format`, switch to the prompt and send again."""
        import openai

        create = self._client.chat.completions.with_raw_response.create
        try:
            raw: LegacyAPIResponse[Any] = await create(**body)
        except openai.APIStatusError as exc:
            if "response_format" not in body or not _rejects_response_format(exc):
                raise
            self._fall_back_to_prompt(exc)
            raw = await create(**self._body(request, schema))
        return raw

    def _fall_back_to_prompt(self, exc: openai.APIStatusError) -> None:
        if self._structured_output == "prompt":
            return  # another call on this instance switched first, and said so
        self._structured_output = "prompt"
        _log.info(
            "openai model %r at %s rejected response_format (HTTP %d: %s); structured "
            "requests of this provider ask in a system message from now on",
            self._model,
            self._settings.base_url or "the default base URL",
            exc.status_code,
            truncate(_error_text(exc), self._key),
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def _body(self, request: LlmRequest, schema: OutputSchema | None) -> dict[str, Any]:
        messages = normalize_messages(request.messages)
        body: dict[str, Any] = {"model": self._model, "messages": messages}
        if schema is not None and self._structured_output == "native":
            body["response_format"] = response_format(schema)
        elif schema is not None:
            body["messages"] = with_schema_instruction(messages, schema)
        tools = function_declarations(request.tools_schema)
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        **({"description": tool.description} if tool.description else {}),
                        **(
                            {"parameters": dict(tool.parameters)}
                            if tool.parameters is not None
                            else {}
                        ),
                    },
                }
                for tool in tools
            ]
        sampling = read_sampling(request.sampling_params)
        if sampling.temperature is not None:
            body["temperature"] = sampling.temperature
        if sampling.top_p is not None:
            body["top_p"] = sampling.top_p
        if sampling.max_output_tokens is not None:
            body["max_completion_tokens"] = sampling.max_output_tokens
        if sampling.stop is not None:
            body["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        return body

    def _answer(self, text: str, attempts: Attempts, *, structured: bool) -> LlmResponse:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            attempts.fail("invalid_response", f"body is not JSON: {text}")
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices:
            attempts.fail("invalid_response", f"body has no choices: {text}")
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            attempts.fail("invalid_response", f"choices[0] has no message: {text}")
        response, stop_reason = self._message(message, attempts)
        finish_reason = choices[0].get("finish_reason")
        if not stop_reason and finish_reason == "length":
            stop_reason = STOP_LENGTH
        elif not stop_reason and finish_reason == "content_filter":
            stop_reason = STOP_REFUSED
            if structured and not response:
                response = _FILTERED_NOTE.encode("utf-8")
        tokens = _usage_tokens(data.get("usage"))
        served = data.get("model")
        return record_usage(
            LlmResponse(
                response=response,
                model_id=served if isinstance(served, str) and served else self._model,
                input_tokens=tokens[0] if tokens else 0,
                output_tokens=tokens[1] if tokens else 0,
                stop_reason=stop_reason,
            ),
            had_usage=tokens is not None,
        )

    def _message(self, message: dict[str, Any], attempts: Attempts) -> tuple[bytes, str]:
        """The message's answer bytes, and `STOP_REFUSED` when it is the model's refusal."""
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            return refusal.encode("utf-8"), STOP_REFUSED
        tool_calls = message.get("tool_calls")
        if tool_calls:
            calls = self._tool_calls(tool_calls, attempts)
            try:
                return tool_calls_answer(calls), ""
            except ValueError as exc:
                attempts.fail("invalid_response", str(exc))
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            attempts.fail("invalid_response", "choices[0].message.content is not text")
        return (content or "").encode("utf-8"), ""

    def _tool_calls(
        self, tool_calls: object, attempts: Attempts
    ) -> list[tuple[str, Mapping[str, Any]]]:
        if not isinstance(tool_calls, list):
            attempts.fail("invalid_response", "tool_calls is not a list")
        calls: list[tuple[str, Mapping[str, Any]]] = []
        for call in tool_calls:
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(function, dict) or not isinstance(name, str) or not name:
                attempts.fail("invalid_response", "a tool call has no function name")
            arguments = function.get("arguments") or "{}"
            try:
                args = json.loads(arguments) if isinstance(arguments, str) else arguments
            except (ValueError, RecursionError):
                args = None
            if not isinstance(args, dict):
                attempts.fail(
                    "invalid_response",
                    f"arguments of tool call {name!r} are not a JSON object: {arguments}",
                )
            calls.append((name, args))
        return calls

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(model={self._model!r}, {self._settings.describe()})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "OpenAICompatibleProvider holds an API key and is not picklable; "
            "pickle a factory such as provider_from_spec('openai:MODEL') instead"
        )


def _usage_tokens(usage: object) -> tuple[int, int] | None:
    """(prompt, completion) tokens when the server reported both, else None."""
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if type(prompt) is not int or type(completion) is not int:
        return None
    return prompt, completion


def _rejects_response_format(exc: openai.APIStatusError) -> bool:
    """Whether the server refused the request for its `response_format`, by its own words."""
    if exc.status_code not in _REJECTS_FORMAT:
        return False
    said = _error_text(exc).lower()
    return any(word in said for word in _FORMAT_WORDS)


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, str):
        return body
    if body is not None:
        return json.dumps(body, sort_keys=True, default=str)
    return exc.message
