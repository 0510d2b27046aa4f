"""The long-term tier's stores: the contract, the URI grammar and `open_store`.

Nothing here imports a store client library; `open_store` imports a
backend's client only when a URI names it. Names are imported lazily
(PEP 562, as in `beam_agents`), so the CLI can validate a URI without
loading the protobuf envelope or the in-memory store.
"""

from beam_agents._lazy import lazy_exports as _lazy_exports

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__, globals())
