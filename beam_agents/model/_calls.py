"""Accounting for one provider call: attempts, latency, tokens, and the error it ends in.

Retries happen inside the SDKs, out of sight. Each SDK is given an HTTP
client whose request hook counts attempts into a context variable set for
the duration of one `complete()`; the hook runs in the caller's task, so
concurrent calls on one loop never mix their counts. That count is what
`ProviderError.retries` and the `provider_retries` metric report.

Metrics are Beam metrics in the `beam_agents.model` namespace. The runtime
drives agents on the Beam thread, so updates made here land in the current
bundle; outside a pipeline they are no-ops.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Final, NoReturn

from beam_agents._beam_metrics import counter, distribution
from beam_agents._scoped import Scoped
from beam_agents.errors import ConfigurationError
from beam_agents.model._refusals import retry_after_s
from beam_agents.model.errors import ProviderError
from beam_agents.model.messages import LlmResponse

__all__ = [
    "ERROR_CLASSES",
    "NAMESPACE",
    "Attempts",
    "Throttled",
    "count_attempt",
    "metered_call",
    "record_usage",
    "see_response",
    "status_error_class",
    "throttle_callback",
    "truncate",
]

NAMESPACE: Final = "beam_agents.model"
MAX_MESSAGE_CHARS: Final = 300

ERROR_CLASSES: Final = (
    "timeout",
    "connection",
    "rate_limited",
    "server_error",
    "auth",
    "client_error",
    "invalid_response",
    "invalid_request",
)
"""Each failure is counted under one of these, as `provider_errors_<class>`."""

_input_tokens = counter(NAMESPACE, "input_tokens")
_output_tokens = counter(NAMESPACE, "output_tokens")
_calls = counter(NAMESPACE, "provider_calls")
_retries = counter(NAMESPACE, "provider_retries")
_without_usage = counter(NAMESPACE, "responses_without_usage")
_latency_ms = distribution(NAMESPACE, "provider_latency_ms")
_errors = {name: counter(NAMESPACE, f"provider_errors_{name}") for name in ERROR_CLASSES}


def truncate(text: str, secret: str | None) -> str:
    """One line of at most MAX_MESSAGE_CHARS characters, with `secret` masked."""
    if secret:
        text = text.replace(secret, "***")
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


def status_error_class(status: int) -> str:
    """The error class of an HTTP status the server answered with."""
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limited"
    if status in (408, 504):
        return "timeout"
    if status >= 500:
        return "server_error"
    return "client_error"


class Attempts:
    """HTTP requests sent so far for one `complete()` call, and how that call fails."""

    __slots__ = ("model", "provider", "secret", "sent")

    def __init__(self, provider: str, model: str, secret: str | None) -> None:
        self.provider = provider
        self.model = model
        self.secret = secret
        self.sent = 0

    @property
    def retries(self) -> int:
        """Requests after the first."""
        return max(0, self.sent - 1)

    def fail(
        self,
        error_class: str,
        message: str,
        status: int | None = None,
        *,
        retry_after_s: float | None = None,
        quota_exhausted: bool = False,
    ) -> NoReturn:
        """Raise the call's ProviderError: `message` truncated and masked, retries so far."""
        raise ProviderError(
            self.provider,
            self.model,
            error_class=error_class,
            message=truncate(message, self.secret),
            retries=self.retries,
            status=status,
            retry_after_s=retry_after_s,
            quota_exhausted=quota_exhausted,
        ) from None


_current: ContextVar[Attempts | None] = ContextVar("beam_agents_provider_attempts", default=None)


async def count_attempt(_request: Any) -> None:
    """HTTP client request hook: one more attempt for the call in progress."""
    attempts = _current.get()
    if attempts is not None:
        attempts.sent += 1


Throttled = Callable[[float | None], None]
"""Told of each 429 a flow-controlled call meets: the wait the provider asked for, if any."""

throttle_callback: ContextVar[Throttled | None] = ContextVar(
    "beam_agents_throttle_callback", default=None
)
"""Set by the flow control around one call; the response hook reports 429s to it."""

_throttled = counter(NAMESPACE, "provider_throttled")


async def see_response(response: Any) -> None:
    """HTTP client response hook: a 429 slows every call to the provider at once.

    The hook sees each response, the ones the SDK then retries included, so
    the flow control hears of a refusal even when the SDK's retry succeeds.
    Under flow control the retry is the flow control's, not the SDK's: it
    waits in the shared schedule and within the activation's time, where the
    SDK would sleep out of sight, past the deadline. So the 429 is marked
    `x-should-retry: false`, which the `openai` SDK honours (google-genai
    retries regardless, within its own short backoff).
    """
    if response.status_code != 429:
        return
    _throttled.inc()
    callback = throttle_callback.get()
    if callback is None:
        return
    response.headers["x-should-retry"] = "false"
    callback(retry_after_s(response.headers))


@contextlib.contextmanager
def metered_call(provider: str, model: str, secret: str | None) -> Iterator[Attempts]:
    """Count one provider call, its retries, latency and (on ProviderError) its error class.

    `secret` (the API key, if any) is masked in every message the call fails with.
    """
    attempts = Attempts(provider, model, secret)
    started = time.perf_counter()
    _calls.inc()
    try:
        with Scoped(_current, attempts):
            yield attempts
    except ProviderError as exc:
        _errors[exc.error_class].inc()
        raise
    except ConfigurationError:
        # A request the provider cannot express (an unknown sampling key, a
        # tool result without a name): refused before any HTTP request.
        _errors["invalid_request"].inc()
        raise
    finally:
        if attempts.retries:
            _retries.inc(attempts.retries)
        _latency_ms.update(round((time.perf_counter() - started) * 1000))


def record_usage(response: LlmResponse, *, had_usage: bool) -> LlmResponse:
    """Count a successful answer's tokens (or that the server reported none)."""
    if had_usage:
        _input_tokens.inc(response.input_tokens)
        _output_tokens.inc(response.output_tokens)
    else:
        _without_usage.inc()
    return response
