"""The live progress line of a replay, and the summary table printed after it.

On a terminal the bar redraws in place; when output is captured (CI, a
test, a log file) it prints a plain line at every tenth of the way instead,
so logs stay readable.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

__all__ = ["ProgressBar", "summary_table"]

_WIDTH = 30
_TABLE_KEYS = (
    ("events", "alerts replayed"),
    ("services", "services"),
    ("activations", "activations"),
    ("model_calls", "model calls"),
    ("cache_hits", "replay-cache hits"),
    ("tier1_compactions", "tier-1 compactions"),
    ("tier2_summaries", "tier-2 summaries"),
    ("ttl_expiries", "TTL expiries"),
    ("expire_flushes", "on_expire flushes"),
    ("longterm_rows", "long-term rows"),
    ("suspensions", "P1 approvals asked"),
    ("approved", "  approved (paged)"),
    ("denied", "  denied (noted)"),
    ("timed_out", "  timed out (escalated)"),
    ("buffered", "alerts buffered behind a P1"),
    ("follow_ups_scheduled", "follow-ups scheduled (pages, tickets)"),
    ("follow_ups_cancelled", "  cancelled (a later alert settled it)"),
    ("follow_ups_fired", "  fired (rechecked when due)"),
    ("escalated_by_follow_up", "    escalated (still open)"),
    ("intents", "intents"),
    ("deliveries", "deliveries (webhooks)"),
    ("duplicate_deliveries", "  delivered twice"),
    ("tool_retries", "  replayed after a failed bundle"),
    ("errors", "dead letters"),
    ("alerts_with_history", "alerts that recalled incidents"),
    ("recalled_incidents", "  incidents recalled"),
    ("decisions_changed_by_recall", "  decisions changed by recall"),
    ("escalated_by_recall", "    escalated"),
    ("downgraded_by_recall", "    downgraded"),
)


class ProgressBar:
    """`events replayed / total` and the rate, redrawn at most a few times a second."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self._total = max(total, 1)
        self._stream = stream
        self._tty = stream.isatty()
        self._started = time.monotonic()
        self._last_tenth = -1
        self._done = False

    def update(self, replayed: int) -> None:
        """Show `replayed` events of the total."""
        elapsed = max(time.monotonic() - self._started, 1e-6)
        fraction = min(replayed / self._total, 1.0)
        rate = replayed / elapsed
        text = (
            f"{replayed:,}/{self._total:,} alerts replayed  {rate:,.0f} alerts/s  "
            f"{int(elapsed) // 60}:{int(elapsed) % 60:02d}"
        )
        if self._tty:
            filled = int(fraction * _WIDTH)
            bar = "█" * filled + "░" * (_WIDTH - filled)
            self._stream.write(f"\r[{bar}] {text} ")
            self._stream.flush()
            return
        tenth = int(fraction * 10)
        if tenth > self._last_tenth:
            self._last_tenth = tenth
            self._stream.write(f"replay {fraction:4.0%}  {text}\n")
            self._stream.flush()

    def finish(self, replayed: int) -> None:
        """Draw the final state and end the line."""
        if self._done:
            return
        self._done = True
        self.update(replayed)
        if self._tty:
            self._stream.write("\n")
            self._stream.flush()


def summary_table(summary: dict[str, Any]) -> str:
    """The run's main figures as an aligned two-column table."""
    width = max(len(label) for _, label in _TABLE_KEYS)
    lines = [f"{'figure':<{width}}  {'count':>8}", f"{'-' * width}  {'-' * 8}"]
    for key, label in _TABLE_KEYS:
        lines.append(f"{label:<{width}}  {summary.get(key, 0):>8,}")
    for title, field in (("intents by tool", "intents_by_tool"), ("outcomes", "outcomes")):
        parts = ", ".join(f"{k} {v:,}" for k, v in summary.get(field, {}).items())
        lines.append(f"{title:<{width}}  {parts}")
    return "\n".join(lines)
