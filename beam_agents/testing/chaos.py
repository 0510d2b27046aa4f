"""Chaos helpers: make an activation's commit fail once, the way a worker crash would.

The streaming DirectRunner retries a bundle whose processing raised, rolling
back its state writes and outputs. Failing an activation after it has
staged everything (state, outputs, intents, long-term flush) but before the
bundle commits reproduces the failure that matters for exactly-once
thinking: the work happened, the commit did not, the runner replays it.
A retry-determinism test then compares the run with the fault to one
without it, byte for byte.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from beam_agents import _failpoints as failpoints
from beam_agents.local import fail_after_tool_calls

__all__ = [
    "fail_after_tool_calls",
    "fail_after_tool_once",
    "fail_commit_once",
    "fail_park_once",
    "fail_store_reads",
    "fail_store_writes",
    "lose_call_at_poll",
]


@contextlib.contextmanager
def _arm(
    name: str, match: Callable[[bytes, int], bool], times: int
) -> Iterator[failpoints.Failpoint]:
    point = failpoints.Failpoint(match=match, times=times)
    failpoints.arm(name, point)
    try:
        yield point
    finally:
        failpoints.disarm(name)


def fail_commit_once(
    entity_key: bytes, seq: int, *, times: int = 1
) -> contextlib.AbstractContextManager[failpoints.Failpoint]:
    """While active, the commit of activation `seq` of `entity_key` fails `times` times.

    Yields the failpoint; `failpoint.fired` lists each (entity_key, seq) it
    failed, so a test can prove the fault actually happened.
    """
    return _arm(failpoints.COMMIT, lambda key, s: key == entity_key and s == seq, times)


def fail_park_once(
    entity_key: bytes, seq: int, *, times: int = 1
) -> contextlib.AbstractContextManager[failpoints.Failpoint]:
    """While active, the park of activation `seq` of `entity_key` fails `times` times.

    The park fails after its model call started on the call loop: the retried
    bundle must find that call rather than ask the provider again.
    """
    return _arm(failpoints.PARK, lambda key, s: key == entity_key and s == seq, times)


def lose_call_at_poll(
    entity_key: bytes, seq: int, *, times: int = 1
) -> contextlib.AbstractContextManager[failpoints.Failpoint]:
    """While active, the poll of activation `seq` of `entity_key` finds its call unknown.

    What a poll sees after the key moved to another worker, or the worker
    restarted: the re-run must issue the call again.
    """
    return _arm(failpoints.POLL, lambda key, s: key == entity_key and s == seq, times)


def fail_store_writes(
    entity_key: bytes, *, times: int = 1
) -> contextlib.AbstractContextManager[failpoints.Failpoint]:
    """While active, the next `times` long-term writes for `entity_key` fail as unavailable.

    Covers the commit-tail flush and the on_expire upsert. Arm it before the
    pipeline runs: DoFns wrap their store in `setup()`.
    """
    return _arm(failpoints.STORE_WRITE, lambda key, _seq: key == entity_key, times)


def fail_store_reads(
    entity_key: bytes, *, times: int = 1
) -> contextlib.AbstractContextManager[failpoints.Failpoint]:
    """While active, the next `times` long-term reads for `entity_key` fail as unavailable."""
    return _arm(failpoints.STORE_READ, lambda key, _seq: key == entity_key, times)


def fail_after_tool_once(
    entity_key: bytes, seq: int, *, times: int = 1
) -> contextlib.AbstractContextManager[failpoints.Failpoint]:
    """While active, `ExecuteIntents` fails its bundle right after executing and recording
    an intent of activation `seq` of `entity_key`, `times` times.

    The tool ran and its result is in the ledger, but the bundle's outputs
    are lost: the runner retries the bundle, and the retry must find the
    result in the ledger instead of calling the tool again.
    """
    from beam_agents.tools.execute import TOOL_EXECUTED

    return _arm(TOOL_EXECUTED, lambda key, s: key == entity_key and s == seq, times)
