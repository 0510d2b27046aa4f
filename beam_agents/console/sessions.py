"""Logged-in browsers and failed logins, both held in memory and both bounded.

A session is a random identifier (`secrets.token_urlsafe`) the console
issued at one login: each login gets its own, it lapses after an idle and
an absolute timeout, and `/logout` revokes it on the server, so a copied
cookie dies with the session. The console keeps only a SHA-256 of each
identifier, looked up by that digest, so neither the table nor the time a
lookup takes says anything about a live cookie. A restart forgets every
session: logging in again is the price of keeping no secret on disk.

Failed logins are slowed per client address and across all of them. An
address may fail `FREE_FAILURES` times; each further failure closes the
login form to it for twice as long as the last (1 s, 2 s, 4 s … at most
`MAX_LOCKOUT_S`), and a success clears its count. Across all addresses,
more than `GLOBAL_FAILURES` failures within `GLOBAL_WINDOW_S` close the
form to everyone until the window has room again, which bounds a guesser
spread over many addresses. Only the login form is closed: an open
session and `Authorization: Bearer` keep working, so an attacker can delay
a fresh login, never cut off someone already working.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "FREE_FAILURES",
    "GLOBAL_FAILURES",
    "GLOBAL_WINDOW_S",
    "MAX_LOCKOUT_S",
    "LoginThrottle",
    "SessionPolicy",
    "Sessions",
]

Clock = Callable[[], float]
FREE_FAILURES = 3
MAX_LOCKOUT_S = 300.0
GLOBAL_FAILURES = 30
GLOBAL_WINDOW_S = 60.0
_MAX_ADDRESSES = 10_000


@dataclass(frozen=True)
class SessionPolicy:
    """How long a login lasts: `idle_s` without a request, `absolute_s` in all."""

    idle_s: float = 30 * 60
    absolute_s: float = 12 * 3600
    max_sessions: int = 1000
    """Live sessions held; a login past it ends the oldest."""

    def __post_init__(self) -> None:
        if not 0 < self.idle_s <= self.absolute_s:
            raise ValueError("a session's idle timeout must be positive and at most its absolute")
        if self.max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")


def _digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode("utf-8", "replace")).digest()


class Sessions:
    """The live sessions: `open` one at login, `check` it on each request, `close` at logout."""

    def __init__(self, policy: SessionPolicy, clock: Clock = time.monotonic) -> None:
        self.policy = policy
        self.clock = clock
        self._live: OrderedDict[bytes, tuple[float, float]] = OrderedDict()
        """digest → (opened at, last seen), oldest opened first."""

    def open(self) -> str:
        """A new session's identifier: the cookie value, never stored itself."""
        session_id = secrets.token_urlsafe(32)
        now = self.clock()
        self._live[_digest(session_id)] = (now, now)
        while len(self._live) > self.policy.max_sessions:
            self._live.popitem(last=False)
        return session_id

    def check(self, session_id: str) -> bool:
        """Whether `session_id` is live; a live one's idle timeout restarts now."""
        if not session_id:
            return False
        digest = _digest(session_id)
        held = self._live.get(digest)
        if held is None:
            return False
        opened, seen = held
        now = self.clock()
        if now - seen > self.policy.idle_s or now - opened > self.policy.absolute_s:
            del self._live[digest]
            return False
        self._live[digest] = (opened, now)
        return True

    def close(self, session_id: str) -> None:
        """Revoke a session: its cookie opens nothing from now on."""
        self._live.pop(_digest(session_id), None)

    def __len__(self) -> int:
        return len(self._live)


class LoginThrottle:
    """Failed logins, per client address and in all (see the module docstring)."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()
        """address → (failures in a row, closed until), least recently failed first."""
        self._recent: deque[float] = deque()

    def wait_s(self, address: str) -> float:
        """Seconds before `address` may try again; 0 when it may now."""
        now = self.clock()
        while self._recent and now - self._recent[0] >= GLOBAL_WINDOW_S:
            self._recent.popleft()
        wait = 0.0
        if len(self._recent) >= GLOBAL_FAILURES:
            wait = GLOBAL_WINDOW_S - (now - self._recent[0])
        held = self._failures.get(address)
        if held is not None:
            wait = max(wait, held[1] - now)
        return max(wait, 0.0)

    def failed(self, address: str) -> None:
        """Count a failed login from `address`, closing the form to it as the count says."""
        now = self.clock()
        count = self._failures.pop(address, (0, 0.0))[0] + 1
        extra = count - FREE_FAILURES
        until = now + min(2.0 ** (extra - 1), MAX_LOCKOUT_S) if extra > 0 else now
        self._failures[address] = (count, until)
        while len(self._failures) > _MAX_ADDRESSES:
            self._failures.popitem(last=False)
        self._recent.append(now)

    def succeeded(self, address: str) -> None:
        self._failures.pop(address, None)
