"""Model calls: requests, responses, the provider protocol, FakeLLM and the real providers.

Two wings hang off the providers: `embedders/` (the embedder protocol,
FakeEmbedder and `embedder_from_spec` for the real ones) and `flow/` (the
`RateLimit` a RunAgent's calls are held to, and the flow control that
holds them). Their public names are re-exported here.
"""

from beam_agents.model.embedders.fake import FakeEmbedder
from beam_agents.model.embedders.protocol import Embedded, Embedder, EmbedderFactory
from beam_agents.model.embedders.spec import embedder_from_spec
from beam_agents.model.errors import OutputInvalid, ProviderError
from beam_agents.model.fake import FakeLLM, FakeLLMError, Rule
from beam_agents.model.flow.rate_limit import RateLimit
from beam_agents.model.gemini import GeminiProvider
from beam_agents.model.messages import STOP_LENGTH, STOP_REFUSED, LlmRequest, LlmResponse
from beam_agents.model.openai_compat import OpenAICompatibleProvider
from beam_agents.model.provider import ModelProvider, ProviderFactory
from beam_agents.model.spec import provider_from_spec
from beam_agents.model.structured import OutputSchema, output_schema

__all__ = [
    "STOP_LENGTH",
    "STOP_REFUSED",
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
    "OutputInvalid",
    "OutputSchema",
    "ProviderError",
    "ProviderFactory",
    "RateLimit",
    "Rule",
    "embedder_from_spec",
    "output_schema",
    "provider_from_spec",
]
