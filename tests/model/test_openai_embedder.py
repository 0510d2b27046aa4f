"""OpenAIEmbedder against a loopback server speaking `POST /v1/embeddings`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents.errors import ConfigurationError
from beam_agents.model.embedders.openai_compat import MAX_INPUTS_PER_REQUEST, OpenAIEmbedder
from beam_agents.model.embedders.protocol import check_embedder
from tests.model.exchange import (
    KEY_ENV,
    assert_key_kept_private,
    assert_refused_at_once_without_the_key,
    embed,
    embedding_fails,
    openai_error,
    sent,
    vector_of,
)

PATH = "/v1/embeddings"


def answering(
    width: int, *, usage: bool = True, shuffled: bool = False
) -> Callable[[Request], Response]:
    """A handler embedding each input as `vector_of`, counting one token per word."""

    def handle(request: Request) -> Response:
        body = request.get_json()
        texts: list[str] = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": vector_of(text, width)}
            for i, text in enumerate(texts)
        ]
        if shuffled:
            data.reverse()
        answer: dict[str, Any] = {"object": "list", "data": data, "model": body["model"]}
        if usage:
            words = sum(len(text.split()) for text in texts)
            answer["usage"] = {"prompt_tokens": words, "total_tokens": words}
        return Response(json.dumps(answer), content_type="application/json")

    return handle


def embedder(
    server: HTTPServer, model: str = "text-embedding-3-small", **kwargs: Any
) -> OpenAIEmbedder:
    kwargs.setdefault("timeout_s", 5.0)
    kwargs.setdefault("max_retries", 2)
    return OpenAIEmbedder(model, base_url=server.url_for("/v1"), api_key_env=KEY_ENV, **kwargs)


def test_texts_are_embedded_in_order_with_the_reported_tokens(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_handler(
        answering(1536, shuffled=True)
    )
    model = embedder(httpserver)

    embedded = embed(model, ["disk full on db-1", "cert expired"])

    assert embedded.vectors == [
        vector_of("disk full on db-1", 1536),
        vector_of("cert expired", 1536),
    ]
    assert embedded.input_tokens == 6
    (request,) = sent(httpserver)
    assert request.headers["Authorization"] == f"Bearer {secret_key}"
    assert request.get_json() == {
        "model": "text-embedding-3-small",
        "input": ["disk full on db-1", "cert expired"],
        "encoding_format": "float",
    }
    assert (model.model_id, model.dimensions) == ("openai:text-embedding-3-small/1536", 1536)
    assert check_embedder(model) is model


def test_an_explicit_width_is_sent_and_named_in_the_model_id(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_handler(answering(256))
    model = embedder(httpserver, "text-embedding-3-large", dimensions=256)

    embedded = embed(model, ["x"])

    assert sent(httpserver)[0].get_json()["dimensions"] == 256
    assert len(embedded.vectors[0]) == 256
    assert model.model_id == "openai:text-embedding-3-large/256"


def test_a_batch_over_the_api_cap_is_split_into_requests_in_order(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_handler(answering(3))
    texts = [f"incident {i}" for i in range(2 * MAX_INPUTS_PER_REQUEST + 5)]

    embedded = embed(embedder(httpserver, "nomic-embed-text", dimensions=3), texts)

    batches = [request.get_json()["input"] for request in sent(httpserver)]
    assert [len(batch) for batch in batches] == [2048, 2048, 5]
    assert [text for batch in batches for text in batch] == texts
    assert embedded.vectors == [vector_of(text, 3) for text in texts]
    assert embedded.input_tokens == 2 * len(texts)


def test_a_response_without_usage_counts_zero_tokens(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_handler(answering(1536, usage=False))

    assert embed(embedder(httpserver), ["a", "b"]).input_tokens == 0


def test_500_is_retried_then_fails_naming_the_status(
    httpserver: HTTPServer, secret_key: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        openai_error("The server had an error", "server_error"),
        status=500,
        headers={"retry-after-ms": "5"},
    )

    error = embedding_fails(embedder(httpserver, max_retries=2), ["x"])

    assert len(sent(httpserver)) == 3
    assert (error.status, error.retries, error.error_class) == (500, 2, "server_error")
    assert str(error) == (
        "openai model 'text-embedding-3-small': HTTP 500 after 2 retries: The server had an error"
    )


def test_401_fails_at_once_without_the_key(httpserver: HTTPServer, secret_key: str) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        openai_error(f"Incorrect API key provided: {secret_key}.", "auth"),
        status=401,
    )

    error = embedding_fails(embedder(httpserver, max_retries=2), ["x"])

    assert_refused_at_once_without_the_key(
        error, httpserver, secret_key, "Incorrect API key provided: ***."
    )


def test_vectors_of_another_width_fail_as_invalid(httpserver: HTTPServer, secret_key: str) -> None:
    """A server ignoring `dimensions` must not hand the tier vectors of an unpromised width."""
    httpserver.expect_request(PATH).respond_with_handler(answering(768))

    error = embedding_fails(embedder(httpserver, "bge-small", dimensions=384), ["x"])

    assert error.error_class == "invalid_response"
    assert "embedding 0 has 768 values; expected dimensions=384" in str(error)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "0 embeddings for 2 inputs"),
        ([{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}], "index 0"),
        ([{"index": 0, "embedding": [1.0]}, {"index": 5, "embedding": [1.0]}], "index 5"),
    ],
)
def test_an_answer_that_does_not_match_the_inputs_fails_as_invalid(
    httpserver: HTTPServer, secret_key: str, data: list[dict[str, Any]], problem: str
) -> None:
    httpserver.expect_request(PATH).respond_with_json({"object": "list", "data": data})

    error = embedding_fails(embedder(httpserver, "m", dimensions=1), ["a", "b"])

    assert error.error_class == "invalid_response"
    assert problem in str(error)


def test_a_missing_key_fails_at_construction_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)

    with pytest.raises(ConfigurationError, match=f"environment variable {KEY_ENV} is not set"):
        OpenAIEmbedder("text-embedding-3-small", api_key_env=KEY_ENV)


def test_a_model_of_unknown_width_is_refused_without_dimensions(secret_key: str) -> None:
    with pytest.raises(ConfigurationError, match="'nomic-embed-text' has no known width") as raised:
        OpenAIEmbedder("nomic-embed-text", api_key_env=KEY_ENV)

    assert raised.value.field == "dimensions"


def test_the_key_is_in_no_repr_and_the_embedder_refuses_to_pickle(
    httpserver: HTTPServer, secret_key: str
) -> None:
    assert_key_kept_private(embedder(httpserver), secret_key)
