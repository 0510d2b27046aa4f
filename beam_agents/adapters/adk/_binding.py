"""The activation an ADK run belongs to, found by the ADK objects built once per process.

ADK's model, session service, memory service and plugin are built once (an
`LlmAgent` holds its model from construction), while the activation they
must serve changes with every event. A context variable carries it: set by
the adapter around the run, read by each of them, and copied by asyncio
into every task ADK starts for the run.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from beam_agents._instants import unix_seconds
from beam_agents._scoped import Scoped
from beam_agents.errors import BeamAgentsError

if TYPE_CHECKING:
    from beam_agents.runtime.context import ActivationContext

__all__ = ["AdkAdapterError", "Binding", "bind", "bound"]

_ACTIVE: ContextVar[Binding | None] = ContextVar("beam_agents_adk_binding", default=None)
_ID_NAMESPACE = uuid.UUID("6f1c3f0e-6a59-4d2b-9a43-0d5b7c9e2a11")


class AdkAdapterError(BeamAgentsError):
    """The ADK agent did something the adapter cannot run deterministically; says what."""


@dataclass
class Binding:
    """What one activation's ADK run reads: the context and the sessions it loaded."""

    ctx: ActivationContext
    read_only_tools: frozenset[str]
    sessions: dict[str, Any] = field(default_factory=dict)
    ids: int = 0

    def new_id(self) -> str:
        """The next id ADK asks for: a UUIDv5 of (entity, seq, n), the same on every re-run."""
        self.ids += 1
        name = f"{self.ctx.entity_key.hex()}/{self.ctx.seq}/{self.ids}"
        return str(uuid.uuid5(_ID_NAMESPACE, name))

    def now_s(self) -> float:
        """ADK's clock: the activation's frozen one, in seconds.

        Clamped to the years a `datetime` holds: ADK's session services, and
        any plugin, turn an event's timestamp into one, and `beam.Create`
        stamps a time hundreds of millennia before year 1.
        """
        return unix_seconds(self.ctx.now_ms)


def bound() -> Binding:
    """The running activation's binding; an ADK object used outside one is refused."""
    binding = _ACTIVE.get()
    if binding is None:
        raise AdkAdapterError(
            "an adapter object (BeamAgentsLlm, the session or memory service) was used "
            "outside an activation: run the agent through adk_agent(...) under RunAgent"
        )
    return binding


@contextmanager
def bind(binding: Binding) -> Iterator[Binding]:
    """Bind `binding`, and ADK's clock, ids and randomness to it, for the `with` block.

    ADK stamps events with its platform clock and names events, invocations
    and function calls with its platform ids; here they come from the
    activation's event time and (entity, seq, n), so a re-run rebuilds the
    same session bytes.
    """
    from google.adk import platform as adk_random
    from google.adk.platform import time as adk_time
    from google.adk.platform import uuid as adk_uuid

    # Not for secrets: ADK draws jitter from it, which must replay alike.
    seeded = random.Random(f"{binding.ctx.entity_key.hex()}/{binding.ctx.seq}")  # noqa: S311
    with Scoped(_ACTIVE, binding):
        adk_time.set_time_provider(binding.now_s)
        adk_uuid.set_id_provider(binding.new_id)
        adk_random.set_random_provider(lambda: seeded)
        try:
            yield binding
        finally:
            adk_random.reset_random_provider()
            adk_uuid.reset_id_provider()
            adk_time.reset_time_provider()
