"""A local run's look at its long-term store before the pipeline starts.

A store that is not provisioned, or not reachable, fails every worker's
setup: the runner retries each bundle and logs a traceback per attempt, and
the one fact that matters (which store, what is wrong, what fixes it) is
buried in hundreds of lines. `check_local_store` finds it first and raises
`StoreNotReadyError`, whose message is that one line.

`StoreNotReadyError` is a `ConfigurationError`, so callers catch it as any
other bad configuration; it is also a `SystemExit`, so a script that does
not catch it (a quickstart, a notebook cell's `with beam.Pipeline()`) ends
with that one line and exit status 1 instead of a traceback.

Only local runs are checked: a job launched on Dataflow reaches its store
from private workers, with their credentials, and checks it there.
"""

from __future__ import annotations

import asyncio
import threading

from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.memory.stores.errors import StoreNotProvisionedError
from beam_agents.memory.stores.uri import redact_uri

__all__ = ["StoreNotReadyError", "check_local_store"]

_FIELD = "AgentConfig.longterm_memory"


class StoreNotReadyError(ConfigurationError, SystemExit):
    """A local run's long-term store cannot be used; the message says which, why, the fix."""

    def __init__(self, uri: str, problem: str, fix: str) -> None:
        super().__init__(_FIELD, f"long-term store {redact_uri(uri)} {problem}; {fix}")
        self.code = f"error: {self.problem}"
        """What Python prints when the error ends the program (exit status 1)."""


async def _check(uri: str) -> None:
    from beam_agents.memory.stores import open_store

    async with open_store(uri) as store:
        await store.check_provisioned()


def check_local_store(uri: str, *, unreachable_is_fatal: bool = True) -> None:
    """Raise `StoreNotReadyError` when a local run could not use the store at `uri`.

    With `unreachable_is_fatal=False` only a store that answered and lacks
    its table is refused (nothing at runtime would fix that), and a store
    that could not be reached is left for the workers, which retry.
    """
    failure: list[BaseException] = []

    def run() -> None:
        # A thread of its own: the caller may be inside a running event loop (a notebook).
        try:
            asyncio.run(_check(uri))
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)

    worker = threading.Thread(target=run, name="beam-agents-store-check", daemon=True)
    worker.start()
    worker.join()
    if not failure:
        return
    exc = failure[0]
    shown = redact_uri(uri)
    if isinstance(exc, StoreNotProvisionedError):
        raise StoreNotReadyError(
            uri,
            "is not provisioned (nothing is created at runtime)",
            f"create it once with: beam-agents provision '{shown}'",
        ) from None
    if isinstance(exc, ConfigurationError):
        raise exc
    if not unreachable_is_fatal:
        return
    if isinstance(exc, BeamAgentsError | OSError | TimeoutError):
        raise StoreNotReadyError(
            uri,
            f"cannot be reached ({type(exc).__name__})",
            f"start it or correct the URI; check with: beam-agents inspect '{shown}' --entities",
        ) from None
    raise exc
