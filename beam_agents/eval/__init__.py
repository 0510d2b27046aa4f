"""`beam_agents.eval`: replay a recorded event log through candidate agents and score them.

Names are imported lazily (PEP 562, as in `beam_agents`): the `beam-agents`
command wires `eval` into its parser without importing Apache Beam.
"""

from beam_agents._lazy import lazy_exports as _lazy_exports

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__, globals())
