"""Model calls: requests, responses, the provider protocol and FakeLLM."""

from beam_agents.model.fake import FakeLLM, FakeLLMError, Rule
from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.model.provider import ModelProvider, ProviderFactory
from beam_agents.model.spec import provider_from_spec

__all__ = [
    "FakeLLM",
    "FakeLLMError",
    "LlmRequest",
    "LlmResponse",
    "ModelProvider",
    "ProviderFactory",
    "Rule",
    "provider_from_spec",
]
