"""`HttpWebhook`: a tool that POSTs the call as JSON, keyed for idempotency.

The body is `{"intent_id", "tool", "entity_key", "args"}` (sorted keys) and
the `Idempotency-Key` header carries the intent id, so a target that
deduplicates on it turns the ledger's one-execution-per-lease guarantee into
effectively-once. Transient failures (connection errors, timeouts, 429 and
5xx) are retried up to `max_attempts` calls in all, with exponential backoff
that honours a `Retry-After` in seconds; any other status fails at once.
Header values that are secrets are read on the worker from the environment
or Secret Manager and appear in no repr, log line or error; the plain
`headers` are pickled with the handler, so one that names or carries a
credential (`Authorization`, `Cookie`, `X-Api-Key`) is refused there.

Redirects are not followed: a redirect would carry the secret headers, the
`Idempotency-Key` and (307/308) the body to whatever host the target names,
and make that host's answer the tool's result. A 3xx fails, naming the host
it pointed to. With secret headers the URL must be `https://` (or loopback).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

from beam_agents._connections.plain_settings import check_plain_settings
from beam_agents._connections.secret_sources import check_secret_source, read_secret
from beam_agents._connections.url_credentials import check_url_credentials, redact_uri
from beam_agents.errors import ConfigurationError
from beam_agents.tools.calls import ToolCall, ToolHandler
from beam_agents.tools.errors import ToolCallError
from beam_agents.tools.ledger.base import MAX_RESULT_BYTES

__all__ = ["HttpWebhook"]

_log = logging.getLogger(__name__)
_RETRYABLE_STATUS: Final = frozenset({408, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S: Final = 30.0
_CHUNK_BYTES: Final = 64 * 1024


class HttpWebhook(ToolHandler):
    """POST each call to `url`; the response body is the tool's result."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        secret_headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        max_attempts: int = 4,
        backoff_s: float = 0.2,
        max_backoff_s: float = 5.0,
    ) -> None:
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError("HttpWebhook.url", "must be an http:// or https:// URL")
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ConfigurationError("HttpWebhook.max_attempts", "must be an int >= 1")
        for name, value in (("timeout_s", timeout_s), ("backoff_s", backoff_s)):
            if not isinstance(value, int | float) or value <= 0:
                raise ConfigurationError(f"HttpWebhook.{name}", "must be a positive number")
        self.url = url
        self.headers = check_plain_settings("HttpWebhook.headers", headers, twin="secret_headers")
        self._secret_sources = {
            name: check_secret_source(f"HttpWebhook.secret_headers[{name!r}]", source)
            for name, source in (secret_headers or {}).items()
        }
        check_url_credentials(
            "HttpWebhook.url",
            url,
            secret_rides=bool(self._secret_sources),
            hint="use secret_headers",
        )
        self.timeout_s = float(timeout_s)
        self.max_attempts = max_attempts
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self._secret_values: dict[str, str] | None = None
        self._session: Any = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        names = sorted(self._secret_sources)
        return f"HttpWebhook({redact_uri(self.url)!r}, secret_headers={names})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the configuration only: no session, no secret value read on this machine."""
        state = dict(self.__dict__)
        state.update(_secret_values=None, _session=None, _session_loop=None)
        return state

    async def __call__(self, call: ToolCall) -> bytes:
        headers = {
            **self.headers,
            **(await self._secrets()),
            "Content-Type": "application/json",
            "Idempotency-Key": call.intent_id,
        }
        body = call.body()
        last = ""
        for attempt in range(1, self.max_attempts + 1):
            outcome = await self._attempt(body, headers)
            if isinstance(outcome, bytes):
                return outcome
            last, retry_after = outcome
            if attempt < self.max_attempts:
                delay = min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s)
                delay = max(delay, retry_after)
                _log.info("tool %s attempt %d failed (%s); retrying", call.tool, attempt, last)
                await asyncio.sleep(delay)
        raise ToolCallError(
            f"{call.tool}: POST {redact_uri(self.url)} failed after {self.max_attempts} "
            f"attempt(s): {last}",
            attempts=self.max_attempts,
        )

    async def _attempt(self, body: bytes, headers: dict[str, str]) -> bytes | tuple[str, float]:
        """One POST: the result, or (why it failed, seconds the server asked to wait)."""
        import aiohttp

        session = self._client()
        try:
            post = session.post(self.url, data=body, headers=headers, allow_redirects=False)
            async with post as response:
                if 200 <= response.status < 300:
                    return await _whole_body(response)
                if 300 <= response.status < 400:
                    raise ToolCallError(_redirect_refused(self.url, response))
                why = f"HTTP {response.status}"
                if response.status not in _RETRYABLE_STATUS:
                    raise ToolCallError(f"POST {redact_uri(self.url)} answered {why}")
                return why, _retry_after(response.headers.get("Retry-After"))
        except (aiohttp.ClientError, TimeoutError) as exc:
            return type(exc).__name__, 0.0

    def _client(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop or self._session.closed:
            # A session belongs to the loop that made it; a handler moved to
            # another loop (another DoFn thread) gets its own.
            timeout = aiohttp.ClientTimeout(total=self.timeout_s)
            self._session = aiohttp.ClientSession(timeout=timeout)
            self._session_loop = loop
        return self._session

    async def _secrets(self) -> dict[str, str]:
        if self._secret_values is None:
            self._secret_values = {
                name: await read_secret(f"HttpWebhook.secret_headers[{name!r}]", source)
                for name, source in self._secret_sources.items()
            }
        return self._secret_values

    async def aclose(self) -> None:
        """Close the HTTP session (on the loop that opened it)."""
        session, self._session = self._session, None
        if session is not None and self._session_loop is asyncio.get_running_loop():
            await session.close()


async def _whole_body(response: Any) -> bytes:
    """The whole response body, or `ToolCallError` once it passes the ledger's limit.

    One read returns only what has arrived so far, so the body is read to its
    end; a body past the limit is refused, never cut, because a truncated
    result recorded in the ledger would be replayed as the tool's answer.
    """
    declared = response.content_length
    if declared is not None and declared > MAX_RESULT_BYTES:
        raise ToolCallError(_too_large(f"{declared:,} bytes"))
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_CHUNK_BYTES):
        size += len(chunk)
        if size > MAX_RESULT_BYTES:
            raise ToolCallError(_too_large(f"over {size:,} bytes"))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: str) -> str:
    return (
        f"the response body is {size}, over the {MAX_RESULT_BYTES:,}-byte limit "
        "of a tool result (return a reference to large data instead)"
    )


def _redirect_refused(url: str, response: Any) -> str:
    """Why a 3xx fails: where it pointed (the host only: a path or query may hold a token)."""
    location = response.headers.get("Location", "")
    try:
        host = urlsplit(urljoin(url, location)).hostname if location else None
    except ValueError:
        host = None
    target = f"to host {host!r}" if host else "without a usable Location"
    return (
        f"POST {redact_uri(url)} answered HTTP {response.status}, a redirect {target}; "
        "redirects are not followed (they would carry the secret headers and the body "
        "elsewhere): configure the final URL"
    )


def _retry_after(value: str | None) -> float:
    """A `Retry-After` in seconds, capped; an HTTP date or garbage counts as none."""
    try:
        return min(max(float(value or 0), 0.0), _MAX_RETRY_AFTER_S)
    except ValueError:
        return 0.0
