"""Model calls: requests, responses, the provider protocol, FakeLLM and the real providers."""

from beam_agents.model.errors import ProviderError
from beam_agents.model.fake import FakeLLM, FakeLLMError, Rule
from beam_agents.model.gemini import GeminiProvider
from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.model.openai_compat import OpenAICompatibleProvider
from beam_agents.model.provider import ModelProvider, ProviderFactory
from beam_agents.model.spec import provider_from_spec

__all__ = [
    "FakeLLM",
    "FakeLLMError",
    "GeminiProvider",
    "LlmRequest",
    "LlmResponse",
    "ModelProvider",
    "OpenAICompatibleProvider",
    "ProviderError",
    "ProviderFactory",
    "Rule",
    "provider_from_spec",
]
