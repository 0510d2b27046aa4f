"""beam-agents: LLM agents as first-class citizens of Apache Beam pipelines.

`events | RunAgent(agent, AgentConfig(...))` runs `agent` once per event,
keyed by entity, inside one stateful DoFn. The names below are the public
surface (DESIGN section 3); code outside this repository relies on them.

They are imported lazily (PEP 562): `import beam_agents` costs almost
nothing, and Apache Beam is imported only when a name that needs it is first
used, so the `beam-agents` command (which never builds a pipeline) starts
fast. To add a public name, add it to `_LAZY`, `__all__` and the
`TYPE_CHECKING` block.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

__version__ = "0.1.0"

_LAZY: Final[dict[str, str]] = {
    "ActivationContext": "beam_agents.runtime.context",
    "ActivationError": "beam_agents.runtime.errors",
    "AgentConfig": "beam_agents.config",
    "Complete": "beam_agents.runtime.results",
    "FlushToLongterm": "beam_agents.memory.expire",
    "LifecycleEvent": "beam_agents.runtime.lifecycle",
    "LlmRequest": "beam_agents.model.messages",
    "LlmResponse": "beam_agents.model.messages",
    "RunAgent": "beam_agents.runtime.transform",
    "Suspend": "beam_agents.runtime.results",
    "intent_id": "beam_agents.runtime.intents",
}
"""Public name -> the module that defines it, imported on first access."""

__all__ = [
    "ActivationContext",
    "ActivationError",
    "AgentConfig",
    "Complete",
    "FlushToLongterm",
    "LifecycleEvent",
    "LlmRequest",
    "LlmResponse",
    "RunAgent",
    "Suspend",
    "__version__",
    "intent_id",
]

if TYPE_CHECKING:
    from beam_agents.config import AgentConfig
    from beam_agents.memory.expire import FlushToLongterm
    from beam_agents.model.messages import LlmRequest, LlmResponse
    from beam_agents.runtime.context import ActivationContext
    from beam_agents.runtime.errors import ActivationError
    from beam_agents.runtime.intents import intent_id
    from beam_agents.runtime.lifecycle import LifecycleEvent
    from beam_agents.runtime.results import Complete, Suspend
    from beam_agents.runtime.transform import RunAgent


def __getattr__(name: str) -> object:
    return _lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _lazy_attribute(
    package: str, table: dict[str, str], namespace: dict[str, object], name: str
) -> object:
    """Import `name` from the module `table` maps it to, and cache it in `namespace`.

    Shared by every package with a lazy `__init__` (`beam_agents.memory`,
    `beam_agents.runtime`), so they all behave the same way.
    """
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
