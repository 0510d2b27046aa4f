"""GeminiEmbedder: embeddings through the official `google-genai` SDK's `embed_content`.

Options, keys, Vertex AI and retries are GeminiProvider's. The width rule is
OpenAIEmbedder's: the `dimensions` option (sent as `output_dimensionality`),
else the known default of a Google model, else the spec is refused.

Requests carry at most as many texts as the API takes in one call: 100 for
the Gemini API's `batchEmbedContents`, one for Vertex AI's Gemini models
(`embedContent`), 250 for its `predict` models; longer batches are split,
in order. Input tokens are what the API reports per embedding (Vertex AI
does, the Gemini API does not: there they count 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn

from beam_agents.errors import ConfigurationError
from beam_agents.model import _options
from beam_agents.model._calls import Attempts, count_attempt, metered_call, status_error_class
from beam_agents.model._secrets import read_api_key
from beam_agents.model.embedder import Embedded
from beam_agents.model.gemini import _MAX_BACKOFF_S, _RETRY_STATUSES, _check_retry_backoff_s
from beam_agents.model.openai_embedder import width_of

if TYPE_CHECKING:
    from google import genai
    from google.genai import types

__all__ = ["KNOWN_GEMINI_DIMENSIONS", "TASK_TYPES", "GeminiEmbedder", "check_task_type"]

_NAME = "gemini"

KNOWN_GEMINI_DIMENSIONS: Final[Mapping[str, int]] = {
    "gemini-embedding-001": 3072,
    "text-embedding-004": 768,
    "text-embedding-005": 768,
    "text-multilingual-embedding-002": 768,
}
"""Default widths of Google's embedding models; any other model needs `dimensions`."""

TASK_TYPES: Final = (
    "CLASSIFICATION",
    "CLUSTERING",
    "CODE_RETRIEVAL_QUERY",
    "FACT_VERIFICATION",
    "QUESTION_ANSWERING",
    "RETRIEVAL_DOCUMENT",
    "RETRIEVAL_QUERY",
    "SEMANTIC_SIMILARITY",
)

_GEMINI_API_BATCH: Final = 100
_VERTEX_PREDICT_BATCH: Final = 250


def check_task_type(value: object) -> str | None:
    """One of the API's task types, or None (the model's default)."""
    if value is None:
        return None
    if value not in TASK_TYPES:
        raise ConfigurationError(
            "task_type", f"must be one of {', '.join(TASK_TYPES)}, got {value!r}"
        )
    return str(value)


class GeminiEmbedder:
    """A Google embedding model via `google-genai`: the Gemini API with a key, or Vertex AI.

    Built on the worker, like GeminiProvider; not picklable. `model_id` is
    `gemini:MODEL/DIMENSIONS`, with `/TASK_TYPE` when one is set (the task
    type changes the vectors).
    """

    def __init__(
        self,
        model: str,
        *,
        dimensions: int | None = None,
        task_type: str | None = None,
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
        self._dimensions, self._send_dimensions = width_of(
            "gemini", self._model, dimensions, KNOWN_GEMINI_DIMENSIONS
        )
        self._task_type = check_task_type(task_type)
        self._api_key_env = _options.check_api_key_env(api_key_env)
        self._api_key_secret = _options.check_api_key_secret(api_key_secret)
        self._vertex_project = _options.check_name("vertex_project", vertex_project)
        self._vertex_location = _options.check_name("vertex_location", vertex_location)
        self._base_url = _options.check_base_url(base_url)
        self._timeout_s = _options.check_timeout_s(timeout_s)
        self._max_retries = _options.check_max_retries(max_retries)
        self._retry_backoff_s = _check_retry_backoff_s(retry_backoff_s)
        _options.check_vertex_location(self._vertex_project, self._vertex_location)
        try:
            import httpx
            from google.genai import types
        except ImportError:
            raise ConfigurationError(
                "google-genai", "GeminiEmbedder needs pip install 'beam-agents[providers]'"
            ) from None
        options = types.HttpOptions(
            base_url=self._base_url,
            timeout=max(1, round(self._timeout_s * 1000)),
            retry_options=types.HttpRetryOptions(
                attempts=self._max_retries + 1,
                initial_delay=self._retry_backoff_s,
                max_delay=_MAX_BACKOFF_S,
                exp_base=2.0,
                jitter=self._retry_backoff_s / 2,
                http_status_codes=list(_RETRY_STATUSES),
            ),
            httpx_async_client=httpx.AsyncClient(event_hooks={"request": [count_attempt]}),
        )
        self._key: str | None = None
        self._client: genai.Client = self._connect(options)
        if self._vertex_project is None:
            self._batch = _GEMINI_API_BATCH
        elif "gemini" in self._model:
            self._batch = 1
        else:
            self._batch = _VERTEX_PREDICT_BATCH

    def _connect(self, options: types.HttpOptions) -> genai.Client:
        from google import genai

        if self._vertex_project is not None:
            return genai.Client(
                vertexai=True,
                project=self._vertex_project,
                location=self._vertex_location,
                http_options=options,
            )
        self._key = read_api_key(self._api_key_env, self._api_key_secret)
        # vertexai=False explicitly, as in GeminiProvider: no backend switch behind the spec.
        return genai.Client(vertexai=False, api_key=self._key, http_options=options)

    @property
    def model_id(self) -> str:
        task = f"/{self._task_type}" if self._task_type is not None else ""
        return f"gemini:{self._model}/{self._dimensions}{task}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """One vector per text, in order, in as many requests as the API's cap needs."""
        vectors: list[list[float]] = []
        tokens = 0
        for start in range(0, len(texts), self._batch):
            chunk_vectors, chunk_tokens = await self._request(
                list(texts[start : start + self._batch])
            )
            vectors.extend(chunk_vectors)
            tokens += chunk_tokens
        return Embedded(vectors=vectors, input_tokens=tokens)

    async def _request(self, texts: list[str]) -> tuple[list[list[float]], int]:
        import httpx
        from google.auth.exceptions import GoogleAuthError
        from google.genai import errors, types

        with metered_call(_NAME, self._model, self._key) as attempts:
            config = types.EmbedContentConfig(
                output_dimensionality=self._dimensions if self._send_dimensions else None,
                task_type=self._task_type,
            )
            contents = [types.Content(parts=[types.Part(text=text)]) for text in texts]
            try:
                response = await self._client.aio.models.embed_content(
                    model=self._model, contents=contents, config=config
                )
            except errors.APIError as exc:
                message = exc.message or json.dumps(exc.details, sort_keys=True, default=str)
                attempts.fail(status_error_class(exc.code), message, exc.code)
            except GoogleAuthError as exc:
                attempts.fail("auth", f"credentials: {type(exc).__name__}: {exc}")
            except httpx.TimeoutException:
                attempts.fail("timeout", f"no answer within timeout_s={self._timeout_s}")
            except httpx.TransportError as exc:
                attempts.fail("connection", f"{type(exc).__name__}: {exc}")
            except (ValueError, RecursionError) as exc:
                attempts.fail("invalid_response", f"{type(exc).__name__}: {exc}")
            return self._vectors(response, len(texts), attempts)

    def _vectors(
        self, response: Any, expected: int, attempts: Attempts
    ) -> tuple[list[list[float]], int]:
        embeddings = response.embeddings or []
        if len(embeddings) != expected:
            attempts.fail("invalid_response", f"{len(embeddings)} embeddings for {expected} inputs")
        vectors: list[list[float]] = []
        tokens = 0
        for index, embedding in enumerate(embeddings):
            values = embedding.values
            if values is None or len(values) != self._dimensions:
                got = "no" if values is None else len(values)
                attempts.fail(
                    "invalid_response",
                    f"embedding {index} has {got} values; expected dimensions={self._dimensions}",
                )
            vectors.append([float(value) for value in values])
            statistics = embedding.statistics
            if statistics is not None and statistics.token_count is not None:
                tokens += int(statistics.token_count)
        return vectors, tokens

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.aio.aclose()

    def __repr__(self) -> str:
        return (
            f"GeminiEmbedder(model={self._model!r}, dimensions={self._dimensions}, "
            f"task_type={self._task_type!r}, api_key_env={self._api_key_env!r}, "
            f"api_key_secret={self._api_key_secret!r}, vertex_project={self._vertex_project!r}, "
            f"vertex_location={self._vertex_location!r}, base_url={self._base_url!r}, "
            f"timeout_s={self._timeout_s}, max_retries={self._max_retries})"
        )

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "GeminiEmbedder holds credentials and is not picklable; "
            "pickle a factory such as embedder_from_spec('gemini:MODEL') instead"
        )
