"""One call to a provider or embedder under test, the way every wire-format test makes it."""

from __future__ import annotations

import asyncio
import json
import pickle
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents import LlmRequest, LlmResponse
from beam_agents.errors import ConfigurationError
from beam_agents.model import Embedded, Embedder, ModelProvider, ProviderError
from beam_agents.model.embedders.protocol import close_embedder

KEY_ENV = "BEAM_AGENTS_TEST_MODEL_KEY"
"""The variable the `secret_key` fixture sets and the providers under test read."""

HELLO = LlmRequest(model_id="m", messages=["Say hello."])


def ask(model: ModelProvider, request: LlmRequest) -> LlmResponse:
    """Complete `request` on a fresh loop, closing the client whatever happens."""

    async def scenario() -> LlmResponse:
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(scenario())


def fails(model: ModelProvider, request: LlmRequest) -> ProviderError:
    """The ProviderError `request` must raise."""
    with pytest.raises(ProviderError) as raised:
        ask(model, request)
    return raised.value


def embed(model: Embedder, texts: Sequence[str]) -> Embedded:
    """Embed `texts` on a fresh loop, closing the client whatever happens."""

    async def scenario() -> Embedded:
        try:
            return await model.embed(texts)
        finally:
            await close_embedder(model)

    return asyncio.run(scenario())


def embedding_fails(model: Embedder, texts: Sequence[str]) -> ProviderError:
    """The ProviderError embedding `texts` must raise."""
    with pytest.raises(ProviderError) as raised:
        embed(model, texts)
    return raised.value


def vector_of(text: str, width: int) -> list[float]:
    """What the loopback servers embed `text` as: its length, then its first characters."""
    return [float(len(text))] + [float(ord(c)) for c in text.ljust(width - 1)[: width - 1]]


def openai_error(message: str, kind: str) -> dict[str, Any]:
    """An error body as the OpenAI API sends it."""
    return {"error": {"message": message, "type": kind}}


def gemini_error(code: int, message: str, status: str) -> dict[str, Any]:
    """An error body as the Gemini API sends it."""
    return {"error": {"code": code, "message": message, "status": status}}


def refused_before_sending(
    model: ModelProvider, request: LlmRequest, server: HTTPServer, match: str
) -> None:
    """`request` is refused by name (a ConfigurationError matching `match`), nothing sent."""
    with pytest.raises(ConfigurationError, match=match):
        ask(model, request)
    assert sent(server) == []


def sent(server: HTTPServer) -> list[Request]:
    """Every request the loopback server received, in order."""
    return [request for request, _ in server.log]


def times_out(
    model: ModelProvider, server: HTTPServer, path: str, body: dict[str, Any]
) -> ProviderError:
    """The ProviderError HELLO raises when `path` answers `body` only after the client gave up.

    The held answer is released afterwards and its request awaited in the
    server's log, so it is logged in this test, not the next.
    """
    release = threading.Event()

    def slow(_request: Request) -> Response:
        release.wait(10)
        return Response(json.dumps(body), content_type="application/json")

    server.expect_request(path).respond_with_handler(slow)
    try:
        return fails(model, HELLO)
    finally:
        release.set()
        deadline = time.monotonic() + 10
        while not server.log and time.monotonic() < deadline:
            time.sleep(0.01)


def assert_key_kept_private(model: object, key: str) -> None:
    """The provider's repr names where its key lives, never the key, and it refuses to pickle."""
    assert key not in repr(model)
    assert KEY_ENV in repr(model)
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(model)


def assert_refused_at_once_without_the_key(
    error: ProviderError, server: HTTPServer, key: str, masked: str
) -> None:
    """A 401 fails on the first request, and the key the server echoed is `***` everywhere."""
    assert len(sent(server)) == 1
    assert (error.status, error.retries, error.error_class) == (401, 0, "auth")
    assert "HTTP 401" in str(error)
    assert masked in str(error)
    assert key not in str(error)
    assert key not in repr(pickle.loads(pickle.dumps(error)))
