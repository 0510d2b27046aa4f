"""`fail_after_tool_calls`: a worker crash between a tool call and the commit, on demand."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from beam_agents import _failpoints as failpoints

__all__ = ["fail_after_tool_calls"]


@contextlib.contextmanager
def fail_after_tool_calls(*, times: int = 1) -> Iterator[failpoints.Failpoint]:
    """While active, the commits of the first `times` activations that called a tool fail once.

    What a worker crash between a tool call and the commit does to a running
    pipeline, on demand: each failed activation's tool calls ran and were
    recorded, the runner retries its bundle, and the retry gets the recorded
    results back instead of calling the tools again. The triage demo shows
    it by default. Any key, any seq; yields the failpoint, whose `fired`
    lists each (entity_key, seq) it failed.
    """
    failed: set[tuple[bytes, int]] = set()

    def first_time(entity_key: bytes, seq: int) -> bool:
        if (entity_key, seq) in failed:
            return False
        failed.add((entity_key, seq))
        return True

    point = failpoints.Failpoint(match=first_time, times=times)
    failpoints.arm(failpoints.AFTER_TOOL, point)
    try:
        yield point
    finally:
        failpoints.disarm(failpoints.AFTER_TOOL)
