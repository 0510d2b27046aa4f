"""beam-agents: LLM agents as first-class citizens of Apache Beam pipelines.

`events | RunAgent(agent, AgentConfig(...))` runs `agent` once per event,
keyed by entity, inside one stateful DoFn. The names below are the public
surface; code outside this repository relies on them (docs/architecture.md).

They are imported lazily (PEP 562): `import beam_agents` costs almost
nothing, and Apache Beam is imported only when a name that needs it is first
used, so the `beam-agents` command (which never builds a pipeline) starts
fast. The names are listed once, in `__init__.pyi`, which type checkers
read and `beam_agents._lazy` turns into `__all__`.
"""

from beam_agents._lazy import lazy_exports as _lazy_exports
from beam_agents._moved import install as _install_moved

_install_moved()

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__, globals())
