"""What a failed activation says about itself: the exception, the agent's frames, one log line.

A dead letter that reads `RuntimeError: boom` sends its reader hunting; one
that names the file, line and function of the agent code that raised does
not. `describe_exception` renders the exception type and message followed
by the frames of the user's own code (innermost last), leaving out the
frames of beam-agents, the standard library and installed packages, which
are the same for every failure. The text is bounded and scrubbed of
credentials, and it is a pure function of the exception and the deployed
code, so a retried bundle re-emits a byte-identical record.

`DeadLetterLog` writes each dead letter once at WARNING, rate-limited per
reason: a poison stream that fails every element must not flood the
workers' logs. Logging is the one side effect here, and it sits outside the
replayed outputs (a retried bundle may log a record again).
"""

from __future__ import annotations

import logging
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from beam_agents._scrub import scrub_secrets
from beam_agents.entity_hash import process_hasher
from beam_agents.errors import exception_text
from beam_agents.runtime.errors import ActivationError

__all__ = [
    "MAX_FRAMES",
    "DeadLetterLog",
    "dead_letter_log",
    "describe_exception",
]

MAX_FRAMES: Final = 8
"""At most this many frames are shown, the innermost ones."""
_MAX_MESSAGE_CHARS: Final = 800
_MAX_LINE_CHARS: Final = 200
_PATH_PARTS: Final = 3
_PACKAGE_DIR: Final = str(Path(__file__).resolve().parents[1])
_LIBRARY_DIRS: Final = tuple(
    str(Path(path).resolve())
    for path in {
        sysconfig.get_paths().get(name, "")
        for name in ("stdlib", "platstdlib", "purelib", "platlib")
    }
    if path
)

_log = logging.getLogger("beam_agents.runtime.dead_letters")


def describe_exception(exc: BaseException) -> str:
    """`Type: message`, then the agent's own frames, innermost last; bounded and scrubbed.

    The frames of explicit causes (`raise ... from cause`) are followed
    inwards, so a user-written provider's or store's frames are shown too.

    When no frame is the user's (a store failing inside its client), the
    innermost frames are shown instead, marked as such.
    """
    # Scrub before bounding: a cut that falls inside a URL's password would
    # leave a prefix of it that the patterns no longer recognise.
    message = scrub_secrets(exception_text(exc))
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[: _MAX_MESSAGE_CHARS - 1] + "…"
    head = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    frames = _frames(exc)
    own = [frame for frame in frames if _is_user_code(frame.filename)]
    title = "agent frames, innermost last"
    if not own:
        own, title = list(frames), "innermost frames, no agent code involved"
    if not own:
        return head
    shown = own[-MAX_FRAMES:]
    lines = [f"{head}", f"Traceback ({title}):"]
    if len(own) > len(shown):
        lines.append(f"  ... {len(own) - len(shown)} outer frame(s) omitted")
    for frame in shown:
        line = f"  {_short_path(frame.filename)}:{frame.lineno} in {frame.name}"
        lines.append(line[:_MAX_LINE_CHARS])
    return "\n".join(lines)


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames from the outermost down to where the root cause was raised.

    A wrapper raised `from` its cause (`ModelCallError` around a provider's
    error, `LongtermReadError` around a store's) stops at the `raise` in the
    wrapping code; the cause's own frames continue from there inwards, so
    they follow, and a user-written provider shows its frames too.
    """
    frames: list[traceback.FrameSummary] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 4:
        seen.add(id(current))
        frames.extend(traceback.extract_tb(current.__traceback__))
        current = current.__cause__
    return frames


def _is_user_code(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen ...>, <string>
        return False
    resolved = str(Path(filename).resolve())
    if resolved.startswith(_PACKAGE_DIR + "/"):
        return False
    return not any(resolved.startswith(lib + "/") for lib in _LIBRARY_DIRS)


def _short_path(filename: str) -> str:
    parts = Path(filename).parts
    return "/".join(parts[-_PATH_PARTS:]) if len(parts) > _PATH_PARTS else filename


@dataclass(slots=True)
class _Window:
    started: float
    logged: int = 0
    suppressed: int = 0


class DeadLetterLog:
    """Logs dead letters at WARNING, at most `per_window` per reason every `window_s` seconds.

    When a reason's window rolls over, the first record logged in the new
    window says how many of that reason were left out of the last one.
    """

    def __init__(
        self,
        *,
        per_window: int = 10,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = _log,
    ) -> None:
        self.per_window = per_window
        self.window_s = window_s
        self._clock = clock
        self._logger = logger
        self._lock = threading.Lock()
        self._windows: dict[str, _Window] = {}

    def reset(self) -> None:
        """Forget every reason's window, so the next dead letter of each is logged.

        A long-lived process (a test session, an interactive notebook) runs
        many pipelines through the one process-wide log; this starts afresh.
        """
        with self._lock:
            self._windows.clear()

    def record(
        self, error: ActivationError, hash_key: Callable[[bytes], str] | None = None
    ) -> bool:
        """Log `error` unless its reason is over budget; True if it was logged.

        The entity is shown as `hash_key` hashes it, the deployment's keyed hash
        its spans carry too (`beam_agents.entity_hash`), never as the key itself:
        keys can be personal data, and logs travel further than the errors
        output. Without `hash_key`, this process's fallback key hashes it.
        """
        now = self._clock()
        with self._lock:
            window = self._windows.get(error.reason)
            carried = 0
            if window is None or now - window.started >= self.window_s:
                carried = window.suppressed if window is not None else 0
                window = self._windows[error.reason] = _Window(started=now)
            if window.logged >= self.per_window:
                window.suppressed += 1
                return False
            window.logged += 1
        note = (
            f" ({carried} more {error.reason} dead letter(s) were not logged in the last "
            f"{self.window_s:.0f} s)"
            if carried
            else ""
        )
        hashed = (hash_key or process_hasher())(error.entity_key)
        self._logger.warning(
            "dead letter %s for entity_key.hmac %s at event time %d ms%s: %s",
            error.reason,
            hashed,
            error.event_time_ms,
            note,
            error.detail,
        )
        return True


dead_letter_log: Final = DeadLetterLog()
"""The process-wide log every `RunAgent` in this process writes its dead letters to."""
