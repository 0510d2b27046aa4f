"""What one DoFn instance owns: the agent, its config, its loop, provider, store and parking.

Every path of the lifecycle (`_event`, `_answer`, `_poll`, `_expiry`,
`_drain`, `_attempt`, `_commit`) takes it as its first argument; the
`Activator` above them all is this plus the entry points, so no path
module needs the activator itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import Any

from beam_agents.answer_signing import read_signing_key
from beam_agents.config import AgentConfig
from beam_agents.entity_hash import EntityHasher, process_hasher
from beam_agents.memory.resident import shared_resident
from beam_agents.memory.stores.base import MAX_ENTITY_KEY_BYTES, MemoryStore
from beam_agents.model.provider import ModelProvider
from beam_agents.model.replay import ReplayLimits
from beam_agents.model.spec import on_network
from beam_agents.runtime._calls import Parking
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._driver import LoopDriver
from beam_agents.runtime._metrics import ActivationTally
from beam_agents.runtime._models import Models, flow_of, models_factory
from beam_agents.runtime._outputs import Emitter, Output
from beam_agents.runtime._tools import ActivationTools
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.results import Complete, Suspend
from beam_agents.telemetry import sdk_installed

__all__ = ["Agent", "Instance"]

Agent = Callable[[ActivationContext], Coroutine[Any, Any, Complete | Suspend]]
"""An agent: one coroutine per activation, ending in `Complete` or `Suspend`."""


class Instance:
    """What one DoFn instance owns, as every path of the lifecycle reads it."""

    def __init__(
        self,
        *,
        agent: Agent,
        config: AgentConfig,
        token: str,
        clock_ms: Callable[[], int],
        driver: LoopDriver,
        provider: ModelProvider | None,
        store: MemoryStore | None = None,
        limits: ReplayLimits | None = None,
        lifecycle: bool = False,
        poll_clock_ms: Callable[[], int] | None = None,
        poll_after_call: bool = False,
        tools: ActivationTools | None = None,
        entity_hasher: EntityHasher | None = None,
        answer_key: bytes | None = None,
    ) -> None:
        self.agent = agent
        self.config = config
        self.token = token
        self.clock_ms = clock_ms
        self.driver = driver
        self.provider = provider
        self.store = store
        self.limits = limits or ReplayLimits()
        self.resident = shared_resident()
        self.lifecycle = lifecycle
        self.entity_hasher = entity_hasher if entity_hasher is not None else process_hasher()
        """How spans and the dead-letter log show entity keys: the deployment's keyed hash,
        or this process's fallback (`beam_agents.entity_hash`)."""
        self.emit = Emitter(lifecycle=lifecycle, hash_key=self.entity_hasher)
        source = config.answer_signing_key
        self.answer_key = (
            read_signing_key("AgentConfig.answer_signing_key", source)
            if answer_key is None and source is not None
            else answer_key
        )
        """The answer signing key, read on the worker: answers are verified under it and
        approval ids keyed by it; None takes answers unsigned."""
        """Dead letters, with their lifecycle records when records are on."""
        self.tally = ActivationTally()
        """Held per-activation metrics; whoever runs the activator flushes them per bundle."""
        self.max_key_bytes = MAX_ENTITY_KEY_BYTES if store is not None else sys.maxsize
        """Longest entity key admitted: with a store, the longest every backend can hold."""
        flow = flow_of(config, token, windowed=True)
        factory = models_factory(config.provider_factory, config.embedder, flow)
        self.embedder = provider.embedder if isinstance(provider, Models) else None
        """The configured embedder (its model id and width name every embedding); None without."""
        self.parking = (
            Parking(
                token=token,
                factory=factory,
                limit=config.max_inflight_calls,
                timeout_s=config.activation_timeout_s,
                tools_factory=None if tools is None else tools.copy,
                parks_first=config.rate_limit is not None or on_network(config.provider_factory),
            )
            if (factory is not None or tools is not None) and config.max_inflight_calls > 1
            else None
        )
        """Where calls that wait go; None runs every call in place (`max_inflight_calls=1`)."""
        self.tools = tools
        """The configured tools and their ledger; None when the config has none."""
        self.poll_clock_ms = poll_clock_ms
        """The clock a park's poll is due by; None: due at once (`_parking.POLL_AT_MS`)."""
        self.poll_after_call = poll_after_call
        """Set the poll when the call is expected to have answered, not at once: a
        deployed runner fires processing-time timers on the wall clock, and a poll
        that fired at once would hold a worker thread for the rest of the call."""
        self.traced = sdk_installed()
        """Whether activations get spans; whoever runs the activator re-asks per bundle."""

    def on_event(
        self, entity_key: bytes, event: bytes, event_time_ms: int, cells: KeyCells
    ) -> list[Output]:
        """An event for a key, as it enters: defined by `Activator`.

        Declared here so that a path handing an element in again (an answer
        or an event that waited in a park's buffer) enters through the
        instance, not through the modules of the entry points, which import
        that path.
        """
        raise NotImplementedError

    def on_answer(
        self,
        entity_key: bytes,
        intent_id: str,
        answer: bytes,
        element_time_ms: int,
        cells: KeyCells,
        approver: str | None = None,
    ) -> list[Output]:
        """An answer for a key, as it enters: defined by `Activator` (see `on_event`)."""
        raise NotImplementedError
