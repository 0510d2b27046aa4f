"""The `openai` SDK as OpenAICompatibleProvider and OpenAIEmbedder both talk to it.

Both take the same connection options, read the key the same way and must
fail in the same words, so the options, the client built from them and the
mapping of the SDK's exceptions to a `ProviderError` live here once.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from beam_agents.errors import ConfigurationError
from beam_agents.model import _options
from beam_agents.model._calls import Attempts, count_attempt, see_response, status_error_class
from beam_agents.model._refusals import openai_quota_exhausted, retry_after_s

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAISettings", "openai_failures"]


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    """Where an `openai`-SDK model is served and how it is reached; names a key, never holds it."""

    base_url: str | None
    api_key_env: str
    api_key_secret: str | None
    timeout_s: float
    max_retries: int

    @classmethod
    def checked(
        cls,
        *,
        base_url: object,
        api_key_env: object,
        api_key_secret: object,
        timeout_s: object,
        max_retries: object,
    ) -> OpenAISettings:
        """The options, each refused by name when wrong (in this order)."""
        return cls(
            base_url=_options.check_base_url(base_url),
            api_key_env=_options.check_api_key_env(api_key_env),
            api_key_secret=_options.check_api_key_secret(api_key_secret),
            timeout_s=_options.check_timeout_s(timeout_s),
            max_retries=_options.check_max_retries(max_retries),
        )

    def connect(self, owner: str) -> tuple[str, openai.AsyncOpenAI]:
        """The key, read here on the worker, and a client whose HTTP hook counts attempts.

        `owner` is the class that needs the SDK, named when it is missing.
        """
        try:
            import openai
        except ImportError:
            raise ConfigurationError(
                "openai", f"{owner} needs pip install 'beam-agents[providers]'"
            ) from None
        key = _options.read_api_key(self.api_key_env, self.api_key_secret)
        client = openai.AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=self.max_retries,
            http_client=openai.DefaultAsyncHttpxClient(
                event_hooks={"request": [count_attempt], "response": [see_response]}
            ),
        )
        return key, client

    def describe(self) -> str:
        """The options as the owner's repr shows them: where the key lives, not the key."""
        return (
            f"base_url={self.base_url!r}, api_key_env={self.api_key_env!r}, "
            f"api_key_secret={self.api_key_secret!r}, timeout_s={self.timeout_s}, "
            f"max_retries={self.max_retries}"
        )


@contextlib.contextmanager
def openai_failures(
    attempts: Attempts, timeout_s: float, *, also_invalid: tuple[type[Exception], ...] = ()
) -> Iterator[None]:
    """Fail the call through `attempts` on whatever the SDK raises in the block.

    An HTTP status keeps the server's own words; `also_invalid` adds
    exceptions that mean the answer could not be read.
    """
    import openai

    invalid: tuple[type[Exception], ...] = (openai.APIError, ValueError, *also_invalid)
    try:
        yield
    except openai.APIStatusError as exc:
        message = _status_message(exc)
        attempts.fail(
            status_error_class(exc.status_code),
            message,
            exc.status_code,
            retry_after_s=retry_after_s(exc.response.headers),
            quota_exhausted=openai_quota_exhausted(exc.status_code, exc.code, message),
        )
    except openai.APITimeoutError:
        attempts.fail("timeout", f"no answer within timeout_s={timeout_s}")
    except openai.APIConnectionError as exc:
        cause = exc.__cause__
        detail = f"{type(cause).__name__}: {cause}" if cause is not None else exc.message
        attempts.fail("connection", detail)
    except invalid as exc:
        attempts.fail("invalid_response", f"{type(exc).__name__}: {exc}")


def _status_message(exc: openai.APIStatusError) -> str:
    """The provider's own words: the error body's message, else the raw body."""
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        return json.dumps(body, sort_keys=True)
    if isinstance(body, str) and body:
        return body
    return exc.message
