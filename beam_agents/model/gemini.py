"""GeminiProvider: Gemini through the official `google-genai` SDK, natively.

Native means the `generateContent` API, not Gemini's OpenAI-compatible
endpoint: `system` messages become the `system_instruction`, tools become
function declarations, `assistant` turns are `model` turns, and the
function-call parts of an answer come back as tool calls. Either the Gemini
API with a key (`x-goog-api-key`) or, with `vertex_project`, Vertex AI with
Application Default Credentials.

Retries are the SDK's (`HttpRetryOptions`): connection errors, timeouts,
408, 409, 429 and 5xx, at most `max_retries` times with exponential backoff
from `retry_backoff_s`. Unlike the `openai` SDK, google-genai ignores the
server's `Retry-After` header: the wait is always the backoff.

A structured request (`output_type`) is asked for natively: JSON as the
response MIME type and the JSON Schema as `response_json_schema`, which the
SDK sends as it is (its `response_schema` would translate it to the older
OpenAPI subset first). The SDK hands the finish reason back untouched (and
fills its own `parsed` only when the text happens to parse), so it is read
here: `MAX_TOKENS` is `STOP_LENGTH`, a safety, recitation, blocklist,
prohibited-content or SPII stop (or a blocked prompt) `STOP_REFUSED`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn

from beam_agents.errors import ConfigurationError
from beam_agents.model import _options
from beam_agents.model._calls import Attempts, metered_call, record_usage
from beam_agents.model._gemini_client import GeminiSettings, gemini_failures
from beam_agents.model._requests import (
    function_declarations,
    normalize_messages,
    read_sampling,
    tool_calls_answer,
)
from beam_agents.model._structured_wire import requested_schema
from beam_agents.model.messages import STOP_LENGTH, STOP_REFUSED, LlmRequest, LlmResponse

if TYPE_CHECKING:
    from google.genai import types

__all__ = ["GeminiProvider"]

_NAME = "gemini"

_REFUSED_FINISH: Final = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
"""Finish reasons that mean a filter stopped the answer: the model did not decline to think."""


class GeminiProvider:
    """A Gemini model via `google-genai`: the Gemini API with a key, or Vertex AI with ADC.

    Built on the worker. Without `vertex_project` the constructor reads the
    key from `api_key_env` or the Secret Manager version `api_key_secret`
    and fails naming where it looked when there is none; with it, the SDK
    finds Application Default Credentials and no key is read. The provider
    cannot be pickled: pickle its factory (`provider_from_spec("gemini:M")`).

    `timeout_s` bounds each HTTP attempt, `max_retries` the SDK's retries,
    `retry_backoff_s` the first wait (doubling, at most 8 s, plus up to half
    the first wait of jitter). The activation timeout bounds the whole call.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key_env: str = "GEMINI_API_KEY",
        api_key_secret: str | None = None,
        vertex_project: str | None = None,
        vertex_location: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        retry_backoff_s: float = 1.0,
    ) -> None:
        self._model = _options.check_model(model)
        self._settings = GeminiSettings.checked(
            api_key_env=api_key_env,
            api_key_secret=api_key_secret,
            vertex_project=vertex_project,
            vertex_location=vertex_location,
            base_url=base_url,
            timeout_s=timeout_s,
            max_retries=max_retries,
            retry_backoff_s=retry_backoff_s,
        )
        self._key, self._client = self._settings.connect("GeminiProvider")

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    async def complete(self, request: LlmRequest) -> LlmResponse:
        """Ask the model; raise ProviderError (or a ValueError for a bad request) on failure."""
        with metered_call(_NAME, self._model, self._key) as attempts:
            contents, config = self._content_and_config(request)
            with gemini_failures(attempts, self._settings.timeout_s):
                response = await self._client.aio.models.generate_content(
                    model=self._model, contents=contents, config=config
                )
            return self._answer(response, attempts, structured=request.output_type is not None)

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.aio.aclose()

    def _content_and_config(
        self, request: LlmRequest
    ) -> tuple[list[types.Content], types.GenerateContentConfig]:
        from google.genai import types

        system, contents = _system_and_contents(request.messages)
        tools = function_declarations(request.tools_schema)
        sampling = read_sampling(request.sampling_params)
        schema = requested_schema(request.output_type)
        config = types.GenerateContentConfig(
            response_mime_type=None if schema is None else "application/json",
            response_json_schema=None if schema is None else dict(schema.json_schema),
            system_instruction="\n\n".join(system) if system else None,
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=tool.name,
                            description=tool.description,
                            parameters_json_schema=None
                            if tool.parameters is None
                            else dict(tool.parameters),
                        )
                        for tool in tools
                    ]
                )
            ]
            if tools
            else None,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_output_tokens=sampling.max_output_tokens,
            stop_sequences=None if sampling.stop is None else list(sampling.stop),
            seed=sampling.seed,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        return contents, config

    def _answer(
        self, response: types.GenerateContentResponse, attempts: Attempts, *, structured: bool
    ) -> LlmResponse:
        answer, stop_reason = _candidate_answer(response, attempts, structured=structured)
        usage = response.usage_metadata
        had_usage = usage is not None and usage.prompt_token_count is not None
        input_tokens = output_tokens = 0
        if usage is not None and had_usage:
            input_tokens = (usage.prompt_token_count or 0) + (
                usage.tool_use_prompt_token_count or 0
            )
            # Thinking is billed as output, so it counts as output here too.
            output_tokens = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        return record_usage(
            LlmResponse(
                response=answer,
                model_id=response.model_version or self._model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                stop_reason=stop_reason,
            ),
            had_usage=had_usage,
        )

    def __repr__(self) -> str:
        return f"GeminiProvider(model={self._model!r}, {self._settings.describe()})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "GeminiProvider holds credentials and is not picklable; "
            "pickle a factory such as provider_from_spec('gemini:MODEL') instead"
        )


def _system_and_contents(messages: Sequence[Any]) -> tuple[list[str], list[types.Content]]:
    """The system messages' texts (Gemini's system instruction) and the other turns."""
    from google.genai import types

    system: list[str] = []
    contents: list[types.Content] = []
    for index, message in enumerate(normalize_messages(messages)):
        role, content = message["role"], message["content"]
        if role == "system":
            system.append(_text(content))
        elif role == "user":
            contents.append(types.Content(role="user", parts=[types.Part(text=_text(content))]))
        elif role == "assistant":
            contents.append(types.Content(role="model", parts=_model_parts(content)))
        else:
            name = message.get("name")
            if type(name) is not str or not name:
                raise ConfigurationError(
                    f"messages[{index}].name",
                    "a tool result needs the name of the tool it answers for Gemini",
                )
            response = _tool_response(content)
            part = types.Part.from_function_response(name=name, response=response)
            contents.append(types.Content(role="user", parts=[part]))
    return system, contents


def _candidate_answer(
    response: types.GenerateContentResponse, attempts: Attempts, *, structured: bool
) -> tuple[bytes, str]:
    """The first candidate's answer bytes and stop reason.

    An answer with no text fails the call, except a structured one that was
    blocked or cut off: that returns its stop reason (and, when refused, a
    note saying why as the bytes), which the runtime turns into an
    `output_invalid` dead letter. An unstructured caller has nothing that
    reads the stop reason, so a note must not pass as its answer.
    """
    candidates = response.candidates
    if not candidates:
        feedback = response.prompt_feedback
        reason = _name(feedback.block_reason) if feedback is not None else ""
        if structured and feedback is not None and reason:
            said = f": {feedback.block_reason_message}" if feedback.block_reason_message else ""
            return f"(no answer: the prompt was blocked, {reason}{said})".encode(), STOP_REFUSED
        attempts.fail(
            "invalid_response",
            "the answer has no candidates" + (f" (prompt blocked: {reason})" if reason else ""),
        )
    candidate = candidates[0]
    finish = _name(candidate.finish_reason)
    stop_reason = (
        STOP_LENGTH if finish == "MAX_TOKENS" else STOP_REFUSED if finish in _REFUSED_FINISH else ""
    )
    parts = candidate.content.parts if candidate.content is not None else None
    if not parts:
        if structured and stop_reason == STOP_REFUSED:
            return f"(no answer: finish reason {finish})".encode(), stop_reason
        if structured and stop_reason:
            return b"", stop_reason
        attempts.fail(
            "invalid_response",
            f"the first candidate has no content (finish reason {candidate.finish_reason})",
        )
    calls = [
        (part.function_call.name or "", part.function_call.args or {})
        for part in parts
        if part.function_call is not None
    ]
    if not calls:
        return "".join(p.text for p in parts if p.text and not p.thought).encode(), stop_reason
    if not all(name for name, _ in calls):
        attempts.fail("invalid_response", "a function call has no name")
    try:
        return tool_calls_answer(calls), stop_reason
    except ValueError as exc:
        attempts.fail("invalid_response", str(exc))


def _name(reason: object) -> str:
    """An SDK enum member's wire name ("" for none); an unknown one keeps the server's text."""
    if reason is None:
        return ""
    value = getattr(reason, "value", reason)
    return str(value)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, sort_keys=True, ensure_ascii=False)


def _model_parts(content: object) -> list[types.Part]:
    """A model turn: the function calls of a recorded tool-call answer, else its text."""
    from google.genai import types

    calls = _recorded_tool_calls(content)
    if calls is not None:
        return [types.Part.from_function_call(name=name, args=args) for name, args in calls]
    return [types.Part(text=_text(content))]


def _recorded_tool_calls(content: object) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls of a canonical `{"tool_calls": [...]}` answer, or None for anything else."""
    try:
        data = json.loads(content) if isinstance(content, str) else content
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, Mapping) or set(data) != {"tool_calls"}:
        return None
    calls = data["tool_calls"]
    if not isinstance(calls, list) or not calls:
        return None
    parsed = []
    for call in calls:
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            return None
        args = call.get("arguments", {})
        if not isinstance(args, Mapping):
            return None
        parsed.append((call["name"], dict(args)))
    return parsed


def _tool_response(content: object) -> dict[str, Any]:
    """A tool result as Gemini's function response object: JSON objects as-is."""
    try:
        data = json.loads(content) if isinstance(content, str) else content
    except (ValueError, RecursionError):
        data = content
    if isinstance(data, Mapping):
        return dict(data)
    return {"result": data}
