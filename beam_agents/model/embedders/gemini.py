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

from collections.abc import Mapping, Sequence
from typing import Any, Final, NoReturn

from beam_agents.errors import ConfigurationError
from beam_agents.model import _options
from beam_agents.model._calls import Attempts, metered_call
from beam_agents.model._gemini_client import GeminiSettings, gemini_failures
from beam_agents.model.embedders._batches import embed_in_batches
from beam_agents.model.embedders.openai_compat import width_of
from beam_agents.model.embedders.protocol import Embedded

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
        self._key, self._client = self._settings.connect("GeminiEmbedder")
        if self._settings.vertex_project is None:
            self._batch = _GEMINI_API_BATCH
        elif "gemini" in self._model:
            self._batch = 1
        else:
            self._batch = _VERTEX_PREDICT_BATCH

    @property
    def model_id(self) -> str:
        task = f"/{self._task_type}" if self._task_type is not None else ""
        return f"gemini:{self._model}/{self._dimensions}{task}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """One vector per text, in order, in as many requests as the API's cap needs."""
        return await embed_in_batches(texts, self._batch, self._request)

    async def _request(self, texts: list[str]) -> tuple[list[list[float]], int]:
        from google.genai import types

        with metered_call(_NAME, self._model, self._key) as attempts:
            config = types.EmbedContentConfig(
                output_dimensionality=self._dimensions if self._send_dimensions else None,
                task_type=self._task_type,
            )
            contents = [types.Content(parts=[types.Part(text=text)]) for text in texts]
            with gemini_failures(attempts, self._settings.timeout_s):
                response = await self._client.aio.models.embed_content(
                    model=self._model, contents=contents, config=config
                )
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
            f"task_type={self._task_type!r}, {self._settings.describe()})"
        )

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "GeminiEmbedder holds credentials and is not picklable; "
            "pickle a factory such as embedder_from_spec('gemini:MODEL') instead"
        )
