"""Working memory: the per-key facade, its caps and tier-1 compaction.

Names are imported lazily (PEP 562, as in `beam_agents`): the facade
imports Apache Beam's metrics, and `beam_agents.memory.stores` (which the
CLI uses) must not pay for that.
"""

from beam_agents._lazy import lazy_exports as _lazy_exports

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__, globals())
