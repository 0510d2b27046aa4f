"""The runtime: RunAgent, the activation context, results, errors and lifecycle records.

The public names are listed once, in `__init__.pyi`, and imported lazily
(PEP 562, as in `beam_agents`). Modules whose names start with `_` are the
implementation behind them: not API, free to change.
"""

from beam_agents._lazy import lazy_exports as _lazy_exports

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__, globals())
