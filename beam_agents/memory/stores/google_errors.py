"""Which Google API failures are worth retrying, shared by the Bigtable and Firestore stores.

Both clients raise `google.api_core` exceptions; a store maps the transient
ones to `StoreUnavailableError` (the runner may retry the bundle) and keeps
the rest apart. Imported only by those two backends, so the client library
stays an optional dependency.
"""

from __future__ import annotations

from typing import Final

from google.api_core import exceptions as api_errors

__all__ = ["RETRYABLE_GOOGLE_ERRORS"]

RETRYABLE_GOOGLE_ERRORS: Final[tuple[type[BaseException], ...]] = (
    api_errors.ServiceUnavailable,
    api_errors.DeadlineExceeded,
    api_errors.Aborted,
    api_errors.InternalServerError,
    api_errors.TooManyRequests,
    api_errors.RetryError,
    TimeoutError,
    OSError,
)
"""Unavailability, timeouts, contention and exhausted client-side retries."""
