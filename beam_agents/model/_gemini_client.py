"""The `google-genai` SDK as GeminiProvider and GeminiEmbedder both talk to it.

Both take the same options (a key, or Vertex AI with Application Default
Credentials), retry the same way and must fail in the same words, so the
options, the client built from them and the mapping of the SDK's exceptions
to a `ProviderError` live here once.

Retries are the SDK's (`HttpRetryOptions`): connection errors, timeouts,
408, 409, 429 and 5xx, with exponential backoff from `retry_backoff_s` up
to MAX_BACKOFF_S. google-genai ignores the server's `Retry-After` header.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from beam_agents.errors import ConfigurationError
from beam_agents.model import _options
from beam_agents.model._calls import Attempts, count_attempt, see_response, status_error_class
from beam_agents.model._refusals import (
    gemini_quota_exhausted,
    gemini_retry_delay_s,
    retry_after_s,
)

if TYPE_CHECKING:
    from google import genai

__all__ = [
    "MAX_BACKOFF_S",
    "RETRY_STATUSES",
    "GeminiSettings",
    "check_retry_backoff_s",
    "gemini_failures",
]

MAX_BACKOFF_S: Final = 8.0
RETRY_STATUSES: Final = (408, 409, 429, *range(500, 600))


def check_retry_backoff_s(value: object) -> float:
    """The first retry wait, in seconds: a number in (0, MAX_BACKOFF_S]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError("retry_backoff_s", "must be a number of seconds")
    if not 0 < value <= MAX_BACKOFF_S:
        raise ConfigurationError(
            "retry_backoff_s", f"must be in (0, {MAX_BACKOFF_S}] s, got {value!r}"
        )
    return float(value)


@dataclass(frozen=True, slots=True)
class GeminiSettings:
    """Where a Gemini model is served and how it is reached; names a key, never holds it."""

    api_key_env: str
    api_key_secret: str | None
    vertex_project: str | None
    vertex_location: str | None
    base_url: str | None
    timeout_s: float
    max_retries: int
    retry_backoff_s: float

    @classmethod
    def checked(
        cls,
        *,
        api_key_env: object,
        api_key_secret: object,
        vertex_project: object,
        vertex_location: object,
        base_url: object,
        timeout_s: object,
        max_retries: object,
        retry_backoff_s: object,
    ) -> GeminiSettings:
        """The options, each refused by name when wrong (in this order)."""
        settings = cls(
            api_key_env=_options.check_api_key_env(api_key_env),
            api_key_secret=_options.check_api_key_secret(api_key_secret),
            vertex_project=_options.check_name("vertex_project", vertex_project),
            vertex_location=_options.check_name("vertex_location", vertex_location),
            base_url=_options.check_base_url(base_url),
            timeout_s=_options.check_timeout_s(timeout_s),
            max_retries=_options.check_max_retries(max_retries),
            retry_backoff_s=check_retry_backoff_s(retry_backoff_s),
        )
        _options.check_vertex_location(settings.vertex_project, settings.vertex_location)
        return settings

    def connect(self, owner: str) -> tuple[str | None, genai.Client]:
        """The key (None on Vertex AI, which uses ADC) and a client whose HTTP hook counts attempts.

        `owner` is the class that needs the SDK, named when it is missing.
        """
        try:
            import httpx
            from google import genai
            from google.genai import types
        except ImportError:
            raise ConfigurationError(
                "google-genai", f"{owner} needs pip install 'beam-agents[providers]'"
            ) from None
        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=max(1, round(self.timeout_s * 1000)),
            retry_options=types.HttpRetryOptions(
                attempts=self.max_retries + 1,
                initial_delay=self.retry_backoff_s,
                max_delay=MAX_BACKOFF_S,
                exp_base=2.0,
                jitter=self.retry_backoff_s / 2,
                http_status_codes=list(RETRY_STATUSES),
            ),
            # An httpx client of our own: its hook counts attempts, and passing
            # one makes the SDK use httpx rather than aiohttp.
            httpx_async_client=httpx.AsyncClient(
                event_hooks={"request": [count_attempt], "response": [see_response]}
            ),
        )
        if self.vertex_project is not None:
            client = genai.Client(
                vertexai=True,
                project=self.vertex_project,
                location=self.vertex_location,
                http_options=options,
            )
            return None, client
        key = _options.read_api_key(self.api_key_env, self.api_key_secret)
        # vertexai=False explicitly: the SDK would otherwise let the worker's
        # GOOGLE_GENAI_USE_VERTEXAI variable switch backends behind the spec.
        return key, genai.Client(vertexai=False, api_key=key, http_options=options)

    def describe(self) -> str:
        """The options as the owner's repr shows them: where the key lives, not the key."""
        return (
            f"api_key_env={self.api_key_env!r}, api_key_secret={self.api_key_secret!r}, "
            f"vertex_project={self.vertex_project!r}, vertex_location={self.vertex_location!r}, "
            f"base_url={self.base_url!r}, timeout_s={self.timeout_s}, "
            f"max_retries={self.max_retries}"
        )


@contextlib.contextmanager
def gemini_failures(attempts: Attempts, timeout_s: float) -> Iterator[None]:
    """Fail the call through `attempts` on whatever the SDK raises in the block."""
    import httpx
    from google.auth.exceptions import GoogleAuthError
    from google.genai import errors

    try:
        yield
    except errors.APIError as exc:
        message = exc.message or json.dumps(exc.details, sort_keys=True, default=str)
        headers = getattr(exc.response, "headers", None)
        attempts.fail(
            status_error_class(exc.code),
            message,
            exc.code,
            retry_after_s=retry_after_s(headers) or gemini_retry_delay_s(exc.details),
            quota_exhausted=gemini_quota_exhausted(exc.code, exc.details, message),
        )
    except GoogleAuthError as exc:
        # Vertex AI: Application Default Credentials could not produce a token.
        attempts.fail("auth", f"credentials: {type(exc).__name__}: {exc}")
    except httpx.TimeoutException:
        attempts.fail("timeout", f"no answer within timeout_s={timeout_s}")
    except httpx.TransportError as exc:
        attempts.fail("connection", f"{type(exc).__name__}: {exc}")
    except (ValueError, RecursionError) as exc:
        # A body that is not JSON, or JSON the SDK cannot read as a response.
        attempts.fail("invalid_response", f"{type(exc).__name__}: {exc}")
