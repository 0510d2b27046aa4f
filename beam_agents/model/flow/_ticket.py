"""A call loop's ticket: when a queued model call was admitted, and what it holds.

The call loop bounds every call it runs by the activation's timeout. A
model call that waits for its share of a rate limit, or for a place in the
in-flight window, has not started yet: the activation is parked, no thread
is held, and a provider's quota, not the call, decides how long that takes.
So the loop lends each call a ticket, and flow control marks it: queued as
the call starts waiting, admitted as its request is sent. The loop's clock
for the call runs from the admission, and a call it abandons (one that
ignored every cancellation) gives back what the ticket says it holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar

__all__ = ["Ticket", "call_ticket"]


class Ticket:
    """One call on the call loop, as flow control marks it."""

    __slots__ = ("_releases", "_since")

    def __init__(self) -> None:
        self._since: float | None = time.monotonic()
        self._releases: list[Callable[[], None]] = []

    @property
    def since(self) -> float | None:
        """Monotonic time the call's clock runs from; None while it is queued."""
        return self._since

    def queue(self) -> None:
        """The call waits for its turn: its clock stops until `admit()`."""
        self._since = None

    def admit(self) -> None:
        """The call's request goes now: its clock starts."""
        self._since = time.monotonic()

    def hold(self, release: Callable[[], None]) -> None:
        """Register what to give back if the call is abandoned (an idempotent release)."""
        self._releases.append(release)

    def abandon(self) -> None:
        """The loop gave up on the call: give back what it holds."""
        releases, self._releases = self._releases, []
        for release in releases:
            release()


call_ticket: ContextVar[Ticket | None] = ContextVar("beam_agents_call_ticket", default=None)
"""The ticket of the call-loop call running in this context; None in place."""
