"""GeminiEmbedder against a loopback server speaking `POST /v1beta/models/M:batchEmbedContents`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents.errors import ConfigurationError
from beam_agents.model.embedders.gemini import GeminiEmbedder
from beam_agents.model.embedders.protocol import check_embedder
from tests.model.exchange import (
    KEY_ENV,
    assert_key_kept_private,
    assert_refused_at_once_without_the_key,
    embed,
    embedding_fails,
    gemini_error,
    sent,
    vector_of,
)

MODEL = "gemini-embedding-001"
PATH = f"/v1beta/models/{MODEL}:batchEmbedContents"


def texts_of(request: Request) -> list[str]:
    return [r["content"]["parts"][0]["text"] for r in request.get_json()["requests"]]


def answering(width: int) -> Callable[[Request], Response]:
    """A handler embedding each request's text as `vector_of`."""

    def handle(request: Request) -> Response:
        answer = {"embeddings": [{"values": vector_of(t, width)} for t in texts_of(request)]}
        return Response(json.dumps(answer), content_type="application/json")

    return handle


def embedder(server: HTTPServer, model: str = MODEL, **kwargs: Any) -> GeminiEmbedder:
    kwargs.setdefault("timeout_s", 5.0)
    kwargs.setdefault("max_retries", 2)
    kwargs.setdefault("retry_backoff_s", 0.01)
    return GeminiEmbedder(model, base_url=server.url_for("/"), api_key_env=KEY_ENV, **kwargs)


def test_texts_are_embedded_in_order_in_one_batch_request(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_handler(answering(3072))
    model = embedder(httpserver)

    embedded = embed(model, ["disk full on db-1", "cert expired"])

    assert embedded.vectors == [
        vector_of("disk full on db-1", 3072),
        vector_of("cert expired", 3072),
    ]
    assert embedded.input_tokens == 0  # the Gemini API reports no token counts for embeddings
    (request,) = sent(httpserver)
    assert request.headers["x-goog-api-key"] == secret_key
    for one in request.get_json()["requests"]:
        assert one["model"] == f"models/{MODEL}"
        assert "outputDimensionality" not in one
        assert "taskType" not in one
    assert (model.model_id, model.dimensions) == (f"gemini:{MODEL}/3072", 3072)
    assert check_embedder(model) is model


def test_width_and_task_type_are_sent_and_named_in_the_model_id(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_handler(answering(768))
    model = embedder(httpserver, dimensions=768, task_type="SEMANTIC_SIMILARITY")

    embed(model, ["x"])

    (one,) = sent(httpserver)[0].get_json()["requests"]
    assert (one["outputDimensionality"], one["taskType"]) == (768, "SEMANTIC_SIMILARITY")
    assert model.model_id == f"gemini:{MODEL}/768/SEMANTIC_SIMILARITY"


def test_a_batch_over_the_api_cap_is_split_into_requests_in_order(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_handler(answering(4))
    texts = [f"incident {i}" for i in range(205)]

    embedded = embed(embedder(httpserver, dimensions=4), texts)

    batches = [texts_of(request) for request in sent(httpserver)]
    assert [len(batch) for batch in batches] == [100, 100, 5]
    assert [text for batch in batches for text in batch] == texts
    assert embedded.vectors == [vector_of(text, 4) for text in texts]


def test_500_is_retried_then_fails_naming_the_status(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        gemini_error(500, "Internal error", "INTERNAL"), status=500
    )

    error = embedding_fails(embedder(httpserver, max_retries=2), ["x"])

    assert len(sent(httpserver)) == 3
    assert (error.status, error.retries, error.error_class) == (500, 2, "server_error")
    assert str(error).startswith(f"gemini model '{MODEL}': HTTP 500 after 2 retries:")


def test_401_fails_at_once_without_the_key(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        gemini_error(401, f"API key not valid: {secret_key}", "UNAUTHENTICATED"), status=401
    )

    error = embedding_fails(embedder(httpserver, max_retries=2), ["x"])

    assert_refused_at_once_without_the_key(error, httpserver, secret_key, "API key not valid: ***")


def test_vectors_of_another_width_fail_as_invalid(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_request(PATH).respond_with_handler(answering(3072))

    error = embedding_fails(embedder(httpserver, dimensions=768), ["x"])

    assert error.error_class == "invalid_response"
    assert "embedding 0 has 3072 values; expected dimensions=768" in str(error)


def test_fewer_embeddings_than_texts_fail_as_invalid(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json({"embeddings": [{"values": [1.0]}]})

    error = embedding_fails(embedder(httpserver, dimensions=1), ["a", "b"])

    assert error.error_class == "invalid_response"
    assert "1 embeddings for 2 inputs" in str(error)


def test_a_model_of_unknown_width_is_refused_without_dimensions(secret_key: str) -> None:
    with pytest.raises(ConfigurationError, match="'my-embedder' has no known width") as raised:
        GeminiEmbedder("my-embedder", api_key_env=KEY_ENV)

    assert raised.value.field == "dimensions"


def test_an_unknown_task_type_is_refused_by_name(secret_key: str) -> None:
    with pytest.raises(ConfigurationError, match="task_type: must be one of"):
        GeminiEmbedder(MODEL, api_key_env=KEY_ENV, task_type="NEAREST")


def test_the_key_is_in_no_repr_and_the_embedder_refuses_to_pickle(
    httpserver: HTTPServer, secret_key: str
) -> None:
    assert_key_kept_private(embedder(httpserver), secret_key)
