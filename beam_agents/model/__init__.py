"""Model calls: requests, responses, the provider protocol, FakeLLM and the real providers.

Embedders too: the protocol, FakeEmbedder and `embedder_from_spec` for the real ones.
"""

from beam_agents.model.embedder import Embedded, Embedder, EmbedderFactory
from beam_agents.model.embedder_spec import embedder_from_spec
from beam_agents.model.errors import ProviderError
from beam_agents.model.fake import FakeLLM, FakeLLMError, Rule
from beam_agents.model.fake_embedder import FakeEmbedder
from beam_agents.model.gemini import GeminiProvider
from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.model.openai_compat import OpenAICompatibleProvider
from beam_agents.model.provider import ModelProvider, ProviderFactory
from beam_agents.model.rate_limit import RateLimit
from beam_agents.model.spec import provider_from_spec

__all__ = [
    "Embedded",
    "Embedder",
    "EmbedderFactory",
    "FakeEmbedder",
    "FakeLLM",
    "FakeLLMError",
    "GeminiProvider",
    "LlmRequest",
    "LlmResponse",
    "ModelProvider",
    "OpenAICompatibleProvider",
    "ProviderError",
    "ProviderFactory",
    "RateLimit",
    "Rule",
    "embedder_from_spec",
    "provider_from_spec",
]
