"""Logged-in browsers and failed credential checks, both held in memory and both bounded.

A session is a random identifier (`secrets.token_urlsafe`) the console
issued at one login: each login gets its own, it lapses after an idle and
an absolute timeout, and `/logout` revokes it on the server, so a copied
cookie dies with the session. The console keeps only a SHA-256 of each
identifier, looked up by that digest, so neither the table nor the time a
lookup takes says anything about a live cookie. A restart forgets every
session: logging in again is the price of keeping no secret on disk.

Every failed credential check counts, whatever carried it: the login form,
an `Authorization` header, a session cookie that is not live. They are
slowed per client address and across all of them, by one `LoginThrottle`.
An address may fail `FREE_FAILURES` times; each further failure closes the
token check to it for twice as long as the last (1 s, 2 s, 4 s … at most
`MAX_LOCKOUT_S`). A login through the form clears the count; a request
that merely carries the right token does not, or a guesser sharing an
address (a proxy, a NAT) with a busy API client would be handed fresh
tries by every one of its requests. An address that fails no more for
`FORGET_S` starts afresh. Across all addresses, more than
`GLOBAL_FAILURES` failures within `GLOBAL_WINDOW_S` close the token check
to every address that has not passed it within `PROVEN_S`, which bounds a
guesser spread over many addresses without cutting off the clients
already working. A live session is never closed: it can only come from a
token check the throttle let through.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "FORGET_S",
    "FREE_FAILURES",
    "GLOBAL_FAILURES",
    "GLOBAL_WINDOW_S",
    "MAX_LOCKOUT_S",
    "PROVEN_S",
    "LoginThrottle",
    "SessionPolicy",
    "Sessions",
]

Clock = Callable[[], float]
FREE_FAILURES = 3
MAX_LOCKOUT_S = 300.0
GLOBAL_FAILURES = 30
GLOBAL_WINDOW_S = 60.0
FORGET_S = 3600.0
"""An address whose last failure is this old starts again with its free failures."""
PROVEN_S = 12 * 3600.0
"""An address that passed a token check this recently stays open when failures elsewhere
close the check to everyone else."""
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
    """Failed credential checks, per client address and in all (see the module docstring)."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._failures: OrderedDict[str, tuple[int, float, float]] = OrderedDict()
        """address → (failures in a row, closed until, last failed), least recently failed
        first."""
        self._recent: deque[float] = deque()
        self._proven: OrderedDict[str, float] = OrderedDict()
        """address → when it last passed a token check, least recently passed first."""

    def wait_s(self, address: str) -> float:
        """Seconds before `address` may have a credential checked again; 0 when it may now."""
        now = self.clock()
        while self._recent and now - self._recent[0] >= GLOBAL_WINDOW_S:
            self._recent.popleft()
        wait = 0.0
        if len(self._recent) >= GLOBAL_FAILURES and not self._is_proven(address, now):
            wait = GLOBAL_WINDOW_S - (now - self._recent[0])
        held = self._held(address, now)
        if held is not None:
            wait = max(wait, held[1] - now)
        return max(wait, 0.0)

    def failed(self, address: str) -> None:
        """Count a failed check from `address`, closing the check to it as the count says."""
        now = self.clock()
        held = self._held(address, now)
        self._failures.pop(address, None)
        count = (held[0] if held is not None else 0) + 1
        extra = count - FREE_FAILURES
        until = now + min(2.0 ** (extra - 1), MAX_LOCKOUT_S) if extra > 0 else now
        self._failures[address] = (count, until, now)
        while len(self._failures) > _MAX_ADDRESSES:
            self._failures.popitem(last=False)
        self._recent.append(now)

    def passed(self, address: str) -> None:
        """`address` showed the token: it stays open when others' failures close the check.

        Its failure count stays: a request carrying the right token must not hand
        fresh tries to a guesser behind the same address.
        """
        self._proven.pop(address, None)
        self._proven[address] = self.clock()
        while len(self._proven) > _MAX_ADDRESSES:
            self._proven.popitem(last=False)

    def succeeded(self, address: str) -> None:
        """A login through the form: `address` is proven and its count cleared."""
        self._failures.pop(address, None)
        self.passed(address)

    def _held(self, address: str, now: float) -> tuple[int, float, float] | None:
        held = self._failures.get(address)
        if held is not None and now - held[2] >= FORGET_S:
            del self._failures[address]
            return None
        return held

    def _is_proven(self, address: str, now: float) -> bool:
        at = self._proven.get(address)
        return at is not None and now - at < PROVEN_S
