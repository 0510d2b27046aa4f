"""`HttpWebhook` against a real loopback HTTP server."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import socket
import uuid

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents.errors import ConfigurationError
from beam_agents.tools import ToolCall, ToolCallError
from beam_agents.tools.webhook import HttpWebhook

SECRET = "s3cr3t-token-value"


def _call(**args: object) -> ToolCall:
    return ToolCall(str(uuid.uuid4()), "open_ticket", b"case-7", args)


def _run(hook: HttpWebhook, call: ToolCall) -> bytes:
    async def main() -> bytes:
        try:
            return await hook(call)
        finally:
            await hook.aclose()

    return asyncio.run(main())


def test_webhook_posts_the_call_as_json_with_the_intent_id_as_idempotency_key(
    httpserver: HTTPServer,
) -> None:
    seen: list[Request] = []

    def answer(request: Request) -> Response:
        seen.append(request)
        return Response(b'{"ticket": "T-1"}', status=201)

    httpserver.expect_request("/hook", method="POST").respond_with_handler(answer)
    call = _call(severity="P1", tags=["db"])
    result = _run(HttpWebhook(httpserver.url_for("/hook"), headers={"X-Team": "sre"}), call)
    assert result == b'{"ticket": "T-1"}'
    (request,) = seen
    assert request.headers["Idempotency-Key"] == call.intent_id
    assert request.headers["X-Team"] == "sre"
    assert request.headers["Content-Type"] == "application/json"
    assert json.loads(request.get_data()) == {
        "intent_id": call.intent_id,
        "tool": "open_ticket",
        "entity_key": "case-7",
        "entity_key_hex": b"case-7".hex(),
        "args": {"severity": "P1", "tags": ["db"]},
    }


def test_a_key_that_is_not_utf8_is_sent_as_hex_only(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    call = ToolCall(str(uuid.uuid4()), "open_ticket", b"\xff\x00key", {})
    _run(HttpWebhook(httpserver.url_for("/hook")), call)
    ((request, _),) = httpserver.log
    body = json.loads(request.get_data())
    assert (body["entity_key"], body["entity_key_hex"]) == (None, "ff006b6579")


def test_webhook_retries_5xx_and_429_then_returns_the_answer(httpserver: HTTPServer) -> None:
    keys: list[str] = []

    def answer(status: int, body: bytes) -> object:
        def respond(request: Request) -> Response:
            keys.append(request.headers["Idempotency-Key"])
            return Response(body, status=status, headers={"Retry-After": "0"})

        return respond

    for status, body in ((503, b"busy"), (429, b"slow down"), (200, b"ok")):
        httpserver.expect_ordered_request("/hook").respond_with_handler(answer(status, body))
    call = _call()
    assert _run(HttpWebhook(httpserver.url_for("/hook"), backoff_s=0.01), call) == b"ok"
    assert keys == [call.intent_id] * 3


def test_webhook_gives_up_after_max_attempts_naming_the_status(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/hook").respond_with_data("down", status=500)
    hook = HttpWebhook(httpserver.url_for("/hook"), max_attempts=3, backoff_s=0.01)
    with pytest.raises(ToolCallError, match=r"after 3 attempt.*HTTP 500") as failure:
        _run(hook, _call())
    assert failure.value.attempts == 3
    assert len(httpserver.log) == 3


def test_webhook_fails_at_once_on_a_client_error(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/hook").respond_with_data("bad", status=422)
    with pytest.raises(ToolCallError, match="HTTP 422"):
        _run(HttpWebhook(httpserver.url_for("/hook"), backoff_s=0.01), _call())
    assert len(httpserver.log) == 1


def test_webhook_retries_a_refused_connection_then_fails() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hook = HttpWebhook(f"http://127.0.0.1:{port}/hook", max_attempts=2, backoff_s=0.01)
    with pytest.raises(ToolCallError, match="after 2 attempt"):
        _run(hook, _call())


def test_secret_header_is_sent_but_never_shown(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TICKETS_TOKEN", SECRET)
    httpserver.expect_ordered_request("/hook").respond_with_data("no", status=503)
    httpserver.expect_ordered_request("/hook").respond_with_data("no", status=403)
    hook = HttpWebhook(
        httpserver.url_for("/hook"),
        secret_headers={"Authorization": "env:TICKETS_TOKEN"},
        backoff_s=0.01,
    )
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ToolCallError) as failure:
        _run(hook, _call())
    assert [r.headers["Authorization"] for r, _ in httpserver.log] == [SECRET, SECRET]
    shown = [repr(hook), str(failure.value), caplog.text, repr(pickle.loads(pickle.dumps(hook)))]
    assert all(SECRET not in text for text in shown)
    assert SECRET.encode() not in pickle.dumps(hook)


def test_a_missing_secret_names_the_variable_not_a_value() -> None:
    hook = HttpWebhook("http://127.0.0.1:9/hook", secret_headers={"X-Key": "env:NO_SUCH_VAR"})
    with pytest.raises(ConfigurationError, match="NO_SUCH_VAR is not set"):
        _run(hook, _call())


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"url": "ftp://host/x"}, "url"),
        ({"url": f"https://user:{SECRET}@host/x"}, "url"),
        ({"url": "http://h/x", "max_attempts": 0}, "max_attempts"),
        ({"url": "http://h/x", "timeout_s": 0}, "timeout_s"),
        ({"url": "http://h/x", "secret_headers": {"A": SECRET}}, "secret_headers"),
    ],
)
def test_bad_configuration_is_refused_at_construction(
    kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(ConfigurationError, match=rf"HttpWebhook\.{field}") as failure:
        HttpWebhook(**kwargs)  # type: ignore[arg-type]
    assert SECRET not in str(failure.value)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_host_never_receives_the_secret_header_or_the_body(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    """An attacker-controlled target answers 3xx to its own server: nothing follows it there."""
    monkeypatch.setenv("TICKETS_TOKEN", SECRET)
    elsewhere = HTTPServer(host="127.0.0.1", port=0)
    elsewhere.start()
    try:
        elsewhere.expect_request("/steal").respond_with_data('{"ticket": "forged"}')
        httpserver.expect_request("/hook").respond_with_data(
            "", status=status, headers={"Location": elsewhere.url_for("/steal?x=1")}
        )
        hook = HttpWebhook(
            httpserver.url_for("/hook"),
            secret_headers={"X-Api-Key": "env:TICKETS_TOKEN"},
            backoff_s=0.01,
        )
        with pytest.raises(ToolCallError, match=r"redirect to host '127\.0\.0\.1'") as failure:
            _run(hook, _call(severity="P1"))
        assert elsewhere.log == [], "the redirect target was contacted"
    finally:
        elsewhere.clear()
        elsewhere.stop()
    ((request, _),) = httpserver.log
    assert request.headers["X-Api-Key"] == SECRET
    assert "not followed" in str(failure.value)
    assert SECRET not in str(failure.value)
    assert "forged" not in str(failure.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://tickets.example.com/hook",
        "http://10.0.0.7:8080/hook",
        "http://[2001:db8::1]/hook",
    ],
)
def test_secret_headers_over_plain_http_to_a_remote_host_are_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match=r"HttpWebhook\.url: must be https://"):
        HttpWebhook(url, secret_headers={"X-Api-Key": "env:TICKETS_TOKEN"})


@pytest.mark.parametrize(
    "url",
    ["https://tickets.example.com/hook", "http://127.0.0.1:8080/hook", "http://localhost/h"],
)
def test_secret_headers_over_https_or_to_loopback_are_accepted(url: str) -> None:
    assert HttpWebhook(url, secret_headers={"X-Api-Key": "env:TICKETS_TOKEN"}).url == url


def test_plain_http_without_secrets_stays_allowed() -> None:
    assert HttpWebhook("http://tickets.internal/hook").url == "http://tickets.internal/hook"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"https://tickets.example.com/hook?token={SECRET}", "'token'"),
        (f"https://tickets.example.com/hook?a=1&API-KEY={SECRET}", "'API-KEY'"),
        (f"https://{SECRET}@tickets.example.com/hook", "***@"),
    ],
)
def test_a_credential_in_the_webhook_url_is_refused_without_echoing_it(
    url: str, shown: str
) -> None:
    with pytest.raises(ConfigurationError, match=r"HttpWebhook\.url") as failure:
        HttpWebhook(url)
    assert shown in str(failure.value)
    assert SECRET not in str(failure.value)


@pytest.mark.parametrize(
    "name", ["Authorization", "Cookie", "X-Api-Key", "X-Auth-Token", "Proxy-Authorization"]
)
def test_a_credential_header_in_the_plain_headers_is_refused_pointing_to_secret_headers(
    name: str,
) -> None:
    """Plain headers are pickled with the handler, over https or not: no credential goes there."""
    with pytest.raises(ConfigurationError, match=rf"HttpWebhook\.headers\[{name!r}\]") as caught:
        HttpWebhook("https://tickets.example.com/hook", headers={name: SECRET})
    assert f"secret_headers={{{name!r}: 'env:NAME'" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_credential_value_under_a_plain_header_name_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigurationError, match=r"HttpWebhook\.headers\['X-Team'\]") as caught:
        HttpWebhook("https://tickets.example.com/hook", headers={"X-Team": f"Bearer {SECRET}"})
    assert SECRET not in str(caught.value)
