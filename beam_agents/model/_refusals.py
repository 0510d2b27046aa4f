"""What a provider's refusal says about waiting: how long, and whether waiting helps at all.

A 429 is two different things. Usually the per-minute quota is spent for
the moment, and the provider says when to come back (`retry-after-ms`, or
`Retry-After` as seconds or an HTTP date; Gemini puts a `RetryInfo` with a
`retryDelay` in the body instead). Sometimes the quota will not come back
for hours (OpenAI's `insufficient_quota`, a Gemini per-day quota, billing):
then every retry is a wasted request and the call should fail at once.
These readers turn either SDK's error into that answer.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "MAX_RETRY_AFTER_S",
    "gemini_quota_exhausted",
    "gemini_retry_delay_s",
    "openai_quota_exhausted",
    "retry_after_s",
]

MAX_RETRY_AFTER_S: Final = 24 * 3600.0
"""A longer wait than this is read as a header that makes no sense, and ignored."""
_QUOTA_WORDS: Final = re.compile(r"quota|billing", re.IGNORECASE)
_PER_DAY: Final = re.compile(r"per[_ -]?day|daily", re.IGNORECASE)
_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _bounded(seconds: float) -> float | None:
    if seconds != seconds or seconds < 0 or seconds > MAX_RETRY_AFTER_S:  # NaN, negative, absurd
        return None
    return seconds


def retry_after_s(headers: Mapping[str, str] | Any) -> float | None:
    """The wait a response's headers ask for, in seconds, or None when they name none.

    `retry-after-ms` wins over `Retry-After`, as the OpenAI SDK reads them.
    An HTTP date is measured against this machine's clock: it is the only
    way to read one, and it changes when a call is sent, never its answer.
    """
    get = getattr(headers, "get", None)
    if get is None:
        return None
    millis = get("retry-after-ms")
    if millis:
        try:
            return _bounded(float(millis) / 1000.0)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return _bounded(float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return _bounded(max(0.0, when.timestamp() - time.time()))


def openai_quota_exhausted(status: int, code: object, message: str) -> bool:
    """Whether an OpenAI-style refusal is a quota that waiting will not restore."""
    if status == 429:
        return code == "insufficient_quota"
    if status == 403:
        return code == "insufficient_quota" or bool(_QUOTA_WORDS.search(message))
    return False


def _details(body: object) -> list[Any]:
    """The `error.details` list of a Google API error body (or the body's own `details`)."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            details = error.get("details")
            if isinstance(details, list):
                return details
    return []


def gemini_retry_delay_s(body: object) -> float | None:
    """The `RetryInfo.retryDelay` of a Gemini error body ("26s"), or None."""
    for detail in _details(body):
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith("RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return _bounded(float(match.group(1)))
    return None


def gemini_quota_exhausted(status: int, body: object, message: str) -> bool:
    """Whether a Gemini refusal names a per-day quota (QuotaFailure), or billing on a 403."""
    if status == 403:
        return bool(_QUOTA_WORDS.search(message))
    if status != 429:
        return False
    for detail in _details(body):
        if not isinstance(detail, Mapping) or not str(detail.get("@type", "")).endswith(
            "QuotaFailure"
        ):
            continue
        for violation in detail.get("violations") or []:
            if isinstance(violation, Mapping) and any(
                _PER_DAY.search(str(violation.get(field, "")))
                for field in ("quotaId", "quotaMetric")
            ):
                return True
    return False
