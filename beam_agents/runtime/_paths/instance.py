"""What one DoFn instance owns: the agent, its config, its loop, provider, store and parking.

Every path of the lifecycle (`event`, `answer`, `poll`, `expiry`,
`drain`, `attempt`, `commit`) takes it as its first argument. The
`Activator` above them all builds it from a `Setup` and hands itself in as
the `Entrance`, the one way a path below hands an element in again (an
event or an answer that waited in a buffer), so no path module imports the
entry points that import it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from beam_agents.answer_signing import read_signing_key
from beam_agents.config import AgentConfig
from beam_agents.entity_hash import EntityHasher, process_hasher
from beam_agents.memory.resident import shared_resident
from beam_agents.memory.stores.base import MAX_ENTITY_KEY_BYTES, MemoryStore
from beam_agents.model.provider import ModelProvider
from beam_agents.model.replay import ReplayLimits
from beam_agents.model.spec import on_network
from beam_agents.proto.beam_agents_pb2 import BufferedEvent
from beam_agents.runtime._calls.call_loop import Parking
from beam_agents.runtime._calls.driver import LoopDriver
from beam_agents.runtime._calls.models import Models, flow_of, models_factory, parks_by_config
from beam_agents.runtime._calls.tools import ActivationTools
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._metrics import ActivationTally
from beam_agents.runtime._outputs import Emitter, Output
from beam_agents.runtime._typed_outputs import TypedOutput, typed_output
from beam_agents.runtime.agent import Agent
from beam_agents.telemetry import sdk_installed

__all__ = ["Entrance", "Instance", "Setup"]


class Entrance(Protocol):
    """How an element that waited in a buffer enters its key again, as if it arrived now."""

    def on_event(
        self, entity_key: bytes, event: bytes, event_time_ms: int, cells: KeyCells
    ) -> list[Output]: ...

    def answered(
        self,
        entity_key: bytes,
        intent_id: str,
        answer: bytes,
        element_time_ms: int,
        cells: KeyCells,
        approver: str | None = None,
    ) -> list[Output]:
        """An answer already verified (or taken unsigned) as it first arrived."""
        ...

    def woke(self, entity_key: bytes, wake: BufferedEvent, cells: KeyCells) -> list[Output]:
        """A follow-up that came due and waited in a buffer."""
        ...


@dataclass(frozen=True, slots=True)
class Setup:
    """What a DoFn's `setup` hands its activator: the agent, its config and what it opened."""

    agent: Agent
    config: AgentConfig
    token: str
    """This transform's identity: the replay memo's and the resident cache's namespace."""
    clock_ms: Callable[[], int]
    """Processing time, which HITL deadlines are set by."""
    driver: LoopDriver
    provider: ModelProvider | None
    store: MemoryStore | None = None
    limits: ReplayLimits | None = None
    lifecycle: bool = False
    """Whether each path also yields the lifecycle records of what it committed."""
    poll_clock_ms: Callable[[], int] | None = None
    """The clock a park's poll is due by; None: due at once (`_parking.POLL_AT_MS`)."""
    can_park: bool = True
    """False on a runner that cannot deliver a poll's outputs: every call runs in place."""
    poll_after_call: bool = False
    """Set the poll when the call is expected to have answered, not at once: a
    deployed runner fires processing-time timers on the wall clock, and a poll
    that fired at once would hold a worker thread for the rest of the call."""
    tools: ActivationTools | None = None
    entity_hasher: EntityHasher | None = None
    answer_key: bytes | None = None
    """The answer signing key, when the DoFn read it already; else read here."""
    output_type: type | None = None
    """`RunAgent(output_type=...)`: what a completion's output is held to; None: bytes."""


class Instance:
    """What one DoFn instance owns, as every path of the lifecycle reads it."""

    def __init__(self, setup: Setup, entrance: Entrance) -> None:
        config = setup.config
        self.entrance = entrance
        self.agent = setup.agent
        self.config = config
        self.token = setup.token
        self.clock_ms = setup.clock_ms
        self.driver = setup.driver
        self.provider = setup.provider
        self.store = setup.store
        self.limits = setup.limits or ReplayLimits()
        self.resident = shared_resident()
        self.lifecycle = setup.lifecycle
        self.poll_clock_ms = setup.poll_clock_ms
        self.poll_after_call = setup.poll_after_call
        self.tools = setup.tools
        """The configured tools and their ledger; None when the config has none."""
        hasher = setup.entity_hasher
        self.entity_hasher = hasher if hasher is not None else process_hasher()
        """How spans and the dead-letter log show entity keys: the deployment's keyed hash,
        or this process's fallback (`beam_agents.entity_hash`)."""
        self.emit = Emitter(lifecycle=setup.lifecycle, hash_key=self.entity_hasher)
        """Dead letters, with their lifecycle records when records are on."""
        self.answer_key = _answer_key(setup)
        """Answers are verified under it and approval ids keyed by it; None takes
        answers unsigned."""
        self.tally = ActivationTally()
        """Held per-activation metrics; whoever runs the activator flushes them per bundle."""
        self.max_key_bytes = MAX_ENTITY_KEY_BYTES if setup.store is not None else sys.maxsize
        """Longest entity key admitted: with a store, the longest every backend can hold."""
        provider = setup.provider
        self.embedder = provider.embedder if isinstance(provider, Models) else None
        """The configured embedder (its model id and width name every embedding); None without."""
        self.parking = _parking(setup)
        """Where calls that wait go; None runs every call in place (`max_inflight_calls=1`
        without coalescing, or a runner that cannot deliver a poll's outputs)."""
        self.traced = sdk_installed()
        """Whether activations get spans; whoever runs the activator re-asks per bundle."""
        output_type = setup.output_type
        # Built here too on a worker: it registers the schema rows decode by.
        self.typed: TypedOutput | None = (
            typed_output(output_type) if output_type is not None else None
        )
        """What a completion's output is checked against; None for bytes outputs."""


def _answer_key(setup: Setup) -> bytes | None:
    source = setup.config.answer_signing_key
    if setup.answer_key is None and source is not None:
        return read_signing_key("AgentConfig.answer_signing_key", source)
    return setup.answer_key


def _parking(setup: Setup) -> Parking | None:
    """The call loop's parking, when calls can wait there: `max_inflight_calls` over 1, or
    a coalescing agent's, whose calls answer in place first (`Parking.answers_in_place`)."""
    config, tools = setup.config, setup.tools
    if not setup.can_park or not parks_by_config(config):
        return None
    flow = flow_of(config, setup.token, windowed=True)
    factory = models_factory(config.provider_factory, config.embedder, flow)
    return Parking(
        answers_in_place=config.max_inflight_calls <= 1,
        token=setup.token,
        factory=factory,
        limit=config.max_inflight_calls,
        timeout_s=config.activation_timeout_s,
        tools_factory=None if tools is None else tools.copy,
        parks_first=config.rate_limit is not None or on_network(config.provider_factory),
    )
