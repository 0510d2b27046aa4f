"""Tools executed once: handlers, the ledger that makes them idempotent, `ExecuteIntents`.

Names are imported lazily (PEP 562, as in `beam_agents`): importing the
package loads no HTTP, Pub/Sub, MCP or Beam code until a name is used.
"""

from beam_agents._lazy import lazy_exports as _lazy_exports

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__, globals())
