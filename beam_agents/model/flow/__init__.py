"""Flow control of model calls: when each call goes, never what it says.

A provider's quota (`RateLimit`) is held by scheduling calls rather than by
letting them run into 429s: a limiter per process or shared by the fleet
through Redis, an in-flight window learned from latency, and the wrapper
that makes a provider's calls wait their turn. The runtime reaches all of
it through the names below; the modules behind them are private.

Names are imported lazily (see `beam_agents._lazy`): `RateLimit` is pickled
into every `AgentConfig`, and reading it should not load the machinery.
"""

from beam_agents._lazy import lazy_exports as _lazy_exports

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__, globals())
