"""Embedders: anything that turns texts into vectors for `recall`, and the ones we ship.

The protocol and its checks, `FakeEmbedder` for tests, the hosted ones
(OpenAI-compatible, Gemini), the local sentence-transformers one, and
`embedder_from_spec`, which names any of them on a command line. An
embedder is a model like a provider is, so it lives beside the providers;
its names are public through `beam_agents.model`, and here for the runtime.

Names are imported lazily (see `beam_agents._lazy`): a hosted or a local
embedder's module is loaded only when it is named.
"""

from beam_agents._lazy import lazy_exports as _lazy_exports

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__, globals())
