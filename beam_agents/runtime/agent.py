"""What an agent is to the runtime: one coroutine function, run once per activation.

A type, not a base class: any `async def agent(ctx) -> Complete | Suspend`
is one, and so is what an adapter builds around another framework's agent
(`beam_agents.adapters`), which is why the name is public.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeAlias

from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.results import Complete, Suspend

__all__ = ["Agent"]

Agent: TypeAlias = Callable[[ActivationContext], Coroutine[Any, Any, Complete | Suspend]]
"""An agent: one coroutine per activation, ending in `Complete` or `Suspend`."""
