"""How a model call fails: the provider's own failure, and what the activation sees.

`ModelCallError` and `ModelRateLimited` live here, below the runtime that
classifies them and the flow control that raises them; the runtime's
errors module names them too, where agents have always imported them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from beam_agents.errors import BeamAgentsError

__all__ = ["ModelCallError", "ModelRateLimited", "OutputInvalid", "ProviderError"]


class ModelCallError(BeamAgentsError):
    """A provider call failed; uncaught, it fails the activation as `model_error`."""


class ModelRateLimited(ModelCallError):
    """The provider's rate limit outlasted the activation's time, or its quota is exhausted.

    A `ModelCallError`, so an agent's `except ModelCallError` still catches
    it; uncaught, the activation fails as `model_rate_limited`, which tells
    an operator to raise the quota or lower the rate rather than debug.
    """


_SHOWN_RAW_BYTES: Final = 1200


class OutputInvalid(BeamAgentsError):
    """An answer or a result is not a value of its output type; uncaught, `output_invalid`.

    Raised by a structured model call once its repairs are spent (or at
    once, for an answer the model refused or that was cut off), and for an
    agent's result that is not its RunAgent's `output_type`. It carries the
    raw answer and every error, so the dead letter says what came back and
    why it was refused; nothing was coerced and nothing commits.
    """

    def __init__(self, schema: str, errors: Sequence[str], raw: bytes, *, what: str = "") -> None:
        self.schema = schema
        self.errors = tuple(errors)
        self.raw = raw
        self.what = what
        shown = raw[:_SHOWN_RAW_BYTES].decode("utf-8", "replace")
        if len(raw) > _SHOWN_RAW_BYTES:
            shown += f"… ({len(raw)} bytes)"
        lead = f"{what}: " if what else ""
        super().__init__(f"{lead}not a valid {schema}: {'; '.join(self.errors)}; raw: {shown}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_invalid, (self.schema, self.errors, self.raw, self.what))


def _rebuild_invalid(schema: str, errors: Sequence[str], raw: bytes, what: str) -> OutputInvalid:
    return OutputInvalid(schema, errors, raw, what=what)


class ProviderError(BeamAgentsError):
    """A model provider call failed; the activation reports it as `model_error`.

    The message carries what an operator needs and nothing secret: the HTTP
    status (when there was a response), the provider's own message
    (truncated, with the key masked) and how many retries the SDK made.

    For a refusal for rate (`error_class="rate_limited"`), `retry_after_s` is
    the wait the provider asked for (its `retry-after-ms` / `Retry-After`
    header, None when it named none), and `quota_exhausted` says the quota
    will not come back soon (a daily quota, billing): waiting would not help.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        *,
        error_class: str,
        message: str,
        retries: int,
        status: int | None = None,
        retry_after_s: float | None = None,
        quota_exhausted: bool = False,
    ) -> None:
        self.provider = provider
        self.model = model
        self.error_class = error_class
        self.status = status
        self.retries = retries
        self.provider_message = message
        self.retry_after_s = retry_after_s
        self.quota_exhausted = quota_exhausted
        what = f"HTTP {status}" if status is not None else error_class.replace("_", " ")
        plural = "retry" if retries == 1 else "retries"
        super().__init__(f"{provider} model {model!r}: {what} after {retries} {plural}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields: the default exception pickling would lose them.
        return (
            _rebuild,
            (
                self.provider,
                self.model,
                self.error_class,
                self.provider_message,
                self.retries,
                self.status,
                self.retry_after_s,
                self.quota_exhausted,
            ),
        )


def _rebuild(
    provider: str,
    model: str,
    error_class: str,
    message: str,
    retries: int,
    status: int | None,
    retry_after_s: float | None = None,
    quota_exhausted: bool = False,
) -> ProviderError:
    return ProviderError(
        provider,
        model,
        error_class=error_class,
        message=message,
        retries=retries,
        status=status,
        retry_after_s=retry_after_s,
        quota_exhausted=quota_exhausted,
    )
