"""OpenAIEmbedder: embeddings through the official `openai` SDK's `embeddings.create`.

One class serves OpenAI and every server speaking its embeddings wire format
(vLLM, Ollama, LM Studio, a LiteLLM proxy), like OpenAICompatibleProvider,
with the same options, key handling and error mapping: failures become a
`ProviderError` the runtime reports as `model_error`.

The width must be known before the first call, because `model_id` and
`dimensions` are promises the long-term tier relies on: it is the
`dimensions` option, else the known width of an OpenAI model, else the
spec is refused. An explicit `dimensions` is sent to the API (the
text-embedding-3 models shorten their vectors to it); a width taken from the
table is not, so servers that do not know the parameter still work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NoReturn

from beam_agents.errors import ConfigurationError
from beam_agents.model import _options
from beam_agents.model._calls import Attempts, metered_call
from beam_agents.model._openai_client import OpenAISettings, openai_failures
from beam_agents.model.embedders._batches import embed_in_batches
from beam_agents.model.embedders.protocol import Embedded

__all__ = ["KNOWN_OPENAI_DIMENSIONS", "MAX_INPUTS_PER_REQUEST", "OpenAIEmbedder", "width_of"]

_NAME = "openai"

MAX_INPUTS_PER_REQUEST: Final = 2048
"""The embeddings API's cap on inputs in one request: longer batches are split, in order."""

MAX_DIMENSIONS: Final = 65_536

KNOWN_OPENAI_DIMENSIONS: Final[Mapping[str, int]] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""Default widths of OpenAI's own models; any other model needs `dimensions`."""


def check_dimensions(value: object) -> int | None:
    """An explicit width: a positive int, or None."""
    if value is None:
        return None
    if type(value) is not int or not 1 <= value <= MAX_DIMENSIONS:
        raise ConfigurationError(
            "dimensions", f"must be an int from 1 to {MAX_DIMENSIONS}, got {value!r}"
        )
    return value


def width_of(
    scheme: str, model: str, dimensions: object, known: Mapping[str, int]
) -> tuple[int, bool]:
    """(the width, whether it was asked for): the option, else the known default, else refused."""
    explicit = check_dimensions(dimensions)
    if explicit is not None:
        return explicit, True
    if model in known:
        return known[model], False
    raise ConfigurationError(
        "dimensions",
        f"{scheme} model {model!r} has no known width; give dimensions=N (the width of "
        f"its vectors). Known: {', '.join(f'{m}={d}' for m, d in sorted(known.items()))}",
    )


class OpenAIEmbedder:
    """An embeddings model (OpenAI, vLLM, Ollama, LM Studio, LiteLLM) via the `openai` SDK.

    Built on the worker: the constructor reads the key from `api_key_env` or
    the Secret Manager version `api_key_secret` and fails naming where it
    looked. The key stays inside the SDK client; the embedder cannot be
    pickled (pickle `embedder_from_spec("openai:MODEL")` instead).
    `model_id` is `openai:MODEL/DIMENSIONS`.
    """

    def __init__(
        self,
        model: str,
        *,
        dimensions: int | None = None,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        api_key_secret: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        self._model = _options.check_model(model)
        self._dimensions, self._send_dimensions = width_of(
            "openai", self._model, dimensions, KNOWN_OPENAI_DIMENSIONS
        )
        self._settings = OpenAISettings.checked(
            base_url=base_url,
            api_key_env=api_key_env,
            api_key_secret=api_key_secret,
            timeout_s=timeout_s,
            max_retries=max_retries,
        )
        self._key, self._client = self._settings.connect("OpenAIEmbedder")

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}/{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """One vector per text, in order; batches over the API's cap go as several requests."""
        return await embed_in_batches(texts, MAX_INPUTS_PER_REQUEST, self._request)

    async def _request(self, texts: list[str]) -> tuple[list[list[float]], int]:
        with metered_call(_NAME, self._model, self._key) as attempts:
            body: dict[str, Any] = {
                "model": self._model,
                "input": texts,
                # Plain JSON numbers: every compatible server speaks them.
                "encoding_format": "float",
            }
            if self._send_dimensions:
                body["dimensions"] = self._dimensions
            with openai_failures(attempts, self._settings.timeout_s, also_invalid=(TypeError,)):
                response = await self._client.embeddings.create(**body)
            return self._vectors(response, len(texts), attempts)

    def _vectors(
        self, response: Any, expected: int, attempts: Attempts
    ) -> tuple[list[list[float]], int]:
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != expected:
            got = len(data) if isinstance(data, list) else "no"
            attempts.fail("invalid_response", f"{got} embeddings for {expected} inputs")
        by_index: dict[int, list[float]] = {}
        for item in data:
            index, vector = getattr(item, "index", None), getattr(item, "embedding", None)
            if type(index) is not int or not 0 <= index < expected or index in by_index:
                attempts.fail("invalid_response", f"embedding index {index!r} is out of place")
            if not isinstance(vector, list) or not all(
                isinstance(value, int | float) and not isinstance(value, bool) for value in vector
            ):
                attempts.fail("invalid_response", f"embedding {index} is not a list of numbers")
            if len(vector) != self._dimensions:
                attempts.fail(
                    "invalid_response",
                    f"embedding {index} has {len(vector)} values; expected "
                    f"dimensions={self._dimensions}",
                )
            by_index[index] = [float(value) for value in vector]
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        tokens = prompt_tokens if type(prompt_tokens) is int and prompt_tokens >= 0 else 0
        return [by_index[i] for i in range(expected)], tokens

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def __repr__(self) -> str:
        return (
            f"OpenAIEmbedder(model={self._model!r}, dimensions={self._dimensions}, "
            f"{self._settings.describe()})"
        )

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "OpenAIEmbedder holds an API key and is not picklable; "
            "pickle a factory such as embedder_from_spec('openai:MODEL') instead"
        )
