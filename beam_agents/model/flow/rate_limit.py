"""RateLimit: a provider's per-minute quota, held by scheduling calls instead of dropping them.

A provider enforces its quota over short periods (600 requests a minute
is 10 a second), answering 429 past it. Letting calls run into that wall
and retrying wastes the quota on refusals and, inside an activation with a
timeout, turns a busy minute into dead letters. So the runtime spreads
calls evenly at the configured rate before they are sent, and `scope`
says whether that schedule is one per process or one shared by every
worker through Redis.

The limit travels pickled inside `AgentConfig`, so like every store URI
`scope` carries no credential: a Redis that needs a password is named by
the Secret Manager version that holds its URL
(`secretmanager://projects/P/secrets/S/versions/V`), read on the worker.

This module is the value only: validated at construction, on the machine
that builds the pipeline, and pickled with `AgentConfig`. The machinery
that enforces it is the rest of this package: the limiters
(`_process_limiter`, `_fleet_limiter`), the in-flight window (`_window`)
and the wrapper that makes a provider's calls wait (`_control`, `_provider`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from beam_agents._connections.secret_sources import SECRET_SCHEME, secret_uri_version
from beam_agents._connections.url_credentials import check_url_credentials, redact_uri
from beam_agents.errors import ConfigurationError

__all__ = ["DEFAULT_MAX_HOLD_S", "PROCESS_SCOPE", "RateLimit", "redact_scope"]

PROCESS_SCOPE: Final = "process"
DEFAULT_MAX_HOLD_S: Final = 60.0
"""The longest one 429 may hold a schedule: a minute, the period a per-minute quota refills in."""
_REDIS_SCHEMES: Final = ("redis", "rediss")
_PASSWORD_HINT: Final = (
    "a URL with a credential would be pickled into the job graph: keep it in "
    f"Secret Manager and pass '{SECRET_SCHEME}://projects/P/secrets/S/versions/V'"
)


def redact_scope(scope: str) -> str:
    """`scope` with any password replaced by `***`; never raises."""
    return redact_uri(scope)


@dataclass(frozen=True, slots=True)
class RateLimit:
    """The quota one RunAgent's model calls are held to.

    `requests_per_minute` and `tokens_per_minute` are the provider's limits
    (at least one). Tokens are counted before the call from an estimate
    (the request's characters / 4 plus its `max_output_tokens`, else 512)
    and corrected by the answer's usage afterwards.

    `scope` is `"process"` (each worker process holds its own schedule), a
    `redis://` / `rediss://` URL without a password, or, for a Redis that
    needs one, `secretmanager://projects/P/secrets/S/versions/V` naming the
    version that holds its URL (read once per worker process). With a Redis
    every process naming the same `key` on it shares one atomic schedule,
    and while Redis cannot be reached each process holds itself to
    `fallback_share` of the limits.
    `burst_s` is how much of the rate may go back to back: calls are
    spread evenly, at most `burst_s` seconds' worth at once.
    `max_hold_s` bounds how long one 429 holds the schedule (every worker
    and entity on `key`, when shared): a per-minute quota refills within a
    minute, so a `Retry-After` past the bound (a day, say) is about that
    caller, or wrong, and the call it refused fails as rate-limited
    instead of stopping everyone for as long.

    Bad values raise `ConfigurationError` naming the field; a password in
    `scope` is refused, and never appears in the error.
    """

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    scope: str = field(default=PROCESS_SCOPE, repr=False)
    key: str = "default"
    fallback_share: float = 1.0
    burst_s: float = 0.25
    max_hold_s: float = DEFAULT_MAX_HOLD_S

    def __post_init__(self) -> None:
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ConfigurationError(
                "RateLimit.requests_per_minute",
                "set requests_per_minute, tokens_per_minute or both",
            )
        _check_positive_int("RateLimit.requests_per_minute", self.requests_per_minute)
        _check_positive_int("RateLimit.tokens_per_minute", self.tokens_per_minute)
        _check_scope(self.scope)
        if not isinstance(self.key, str) or not self.key or not self.key.isprintable():
            raise ConfigurationError(
                "RateLimit.key", f"must be a non-empty printable string, got {self.key!r}"
            )
        share = self.fallback_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ConfigurationError(
                "RateLimit.fallback_share", f"must be a number in (0, 1], got {share!r}"
            )
        burst = self.burst_s
        if isinstance(burst, bool) or not isinstance(burst, int | float) or not burst > 0:
            raise ConfigurationError(
                "RateLimit.burst_s", f"must be a number of seconds > 0, got {burst!r}"
            )
        if burst == float("inf"):
            raise ConfigurationError("RateLimit.burst_s", "must be finite")
        _check_max_hold_s(self.max_hold_s)

    @property
    def shared(self) -> bool:
        """Whether the schedule is shared through Redis (named or held in Secret Manager)."""
        return self.scope != PROCESS_SCOPE

    def scaled(self, share: float) -> RateLimit:
        """The same limit at `share` of its rates, per process: what a fallback holds to."""
        return RateLimit(
            requests_per_minute=_share_of(self.requests_per_minute, share),
            tokens_per_minute=_share_of(self.tokens_per_minute, share),
            key=self.key,
            burst_s=self.burst_s,
            max_hold_s=self.max_hold_s,
        )

    def __repr__(self) -> str:
        return (
            f"RateLimit(requests_per_minute={self.requests_per_minute!r}, "
            f"tokens_per_minute={self.tokens_per_minute!r}, "
            f"scope={redact_scope(self.scope)!r}, key={self.key!r}, "
            f"fallback_share={self.fallback_share!r}, burst_s={self.burst_s!r}, "
            f"max_hold_s={self.max_hold_s!r})"
        )


def _share_of(limit: int | None, share: float) -> int | None:
    return None if limit is None else max(1, int(limit * share))


def _check_max_hold_s(value: object) -> None:
    """Refuse a hold bound that is not a finite number of seconds > 0, naming the field."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(
            "RateLimit.max_hold_s", f"must be a number of seconds, got {value!r}"
        )
    if not math.isfinite(value) or value <= 0:
        raise ConfigurationError(
            "RateLimit.max_hold_s", f"must be a finite number of seconds > 0, got {value!r}"
        )


def _check_positive_int(name: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(name, f"must be an int, got {type(value).__name__}")
    if value <= 0:
        raise ConfigurationError(name, f"must be > 0, got {value}")


def _check_scope(scope: object) -> None:
    if not isinstance(scope, str):
        raise ConfigurationError("RateLimit.scope", f"must be a string, got {type(scope).__name__}")
    if scope == PROCESS_SCOPE:
        return
    if secret_uri_version("RateLimit.scope", scope) is not None:
        return
    shown = redact_scope(scope)
    try:
        parts = urlsplit(scope)
        port = parts.port
    except ValueError:
        raise ConfigurationError(
            "RateLimit.scope", f"is not a valid redis:// URL (got {shown!r})"
        ) from None
    if parts.scheme not in _REDIS_SCHEMES:
        raise ConfigurationError(
            "RateLimit.scope",
            "must be 'process', a redis:// or rediss:// URL, or "
            f"'{SECRET_SCHEME}://projects/P/secrets/S/versions/V' (got {shown!r})",
        )
    # The limit is pickled into the job graph: a password goes through Secret Manager.
    check_url_credentials("RateLimit.scope", scope, hint=_PASSWORD_HINT)
    if not parts.hostname:
        raise ConfigurationError("RateLimit.scope", f"names no host (got {shown!r})")
    if port == 0:
        raise ConfigurationError("RateLimit.scope", f"port must be 1-65535 (got {shown!r})")
    database = parts.path.strip("/")
    if database and not database.isdigit():
        raise ConfigurationError(
            "RateLimit.scope", f"database must be a number, got {database!r} (in {shown!r})"
        )
