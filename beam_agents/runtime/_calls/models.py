"""One provider for both kinds of model call: chat completions and embeddings.

The runtime has one path for a model call (replay cache, parking on the call
loop, budgets, counters, spans), and it takes a provider. Rather than build a
second path for embeddings, the embedder is put beside the provider in one
object whose `complete` answers an `EmbedRequest` with the vectors' bytes:
wherever the runtime builds a provider (a DoFn's `setup()`, the call loop),
it builds this, and every rule for model calls holds for embeddings as is.

The chat provider is built behind its flow control (`beam_agents.model.flow`):
the RunAgent's rate limit, its adaptive in-flight window and the waits on
429s, one per RunAgent in the process, shared by the DoFn instances' own
providers and the call loop's.
"""

from __future__ import annotations

from dataclasses import dataclass

from beam_agents.config import AgentConfig
from beam_agents.memory.stores.base import Embedding
from beam_agents.model.embedders import (
    Embedder,
    EmbedderFactory,
    check_embedded,
    check_embedder,
    close_embedder,
)
from beam_agents.model.flow import FlowControlledProvider, RateLimit, flow_control
from beam_agents.model.messages import EmbedRequest, LlmRequest, LlmResponse
from beam_agents.model.provider import (
    ModelProvider,
    ProviderFactory,
    check_provider,
    close_provider,
)
from beam_agents.runtime._calls.missing_key import KeyMissingProvider, ReportMissingKey
from beam_agents.runtime.errors import ModelCallError

__all__ = [
    "FLOW_CONTROL",
    "Flow",
    "Models",
    "ModelsFactory",
    "decode_vectors",
    "flow_of",
    "models_factory",
    "parks_by_config",
]


FLOW_CONTROL = True
"""Off, chat providers are built without flow control: the call path as it was
before there was any (no window, no limiter, a 429 past the SDK's own retries
is a `model_error`). Only a benchmark's baseline turns it off, in its own process."""


@dataclass(frozen=True, slots=True)
class Flow:
    """How a RunAgent's chat calls are paced: its rate limit, its window's bound, its time."""

    token: str
    """The RunAgent's token: one flow control per RunAgent in the process."""
    rate_limit: RateLimit | None
    max_inflight: int
    budget_s: float
    """How long a call may keep waiting on 429s: the activation's timeout."""
    windowed: bool
    """Whether its calls take places in the in-flight window: the call loop's do."""


@dataclass(frozen=True, slots=True)
class _FlowControlledFactory:
    """The user's provider factory, its provider built behind the RunAgent's flow control."""

    provider_factory: ProviderFactory
    flow: Flow

    def __call__(self) -> ModelProvider:
        flow = self.flow
        control = flow_control(flow.token, flow.rate_limit, flow.max_inflight)
        provider = check_provider(self.provider_factory())
        if isinstance(provider, KeyMissingProvider):
            return provider  # its calls fail at once: they must not take a shared rate's turns
        return FlowControlledProvider(
            provider, control, budget_s=flow.budget_s, windowed=flow.windowed
        )


@dataclass(frozen=True, slots=True)
class ModelsFactory:
    """Builds `Models` where the runtime builds a provider; picklable as its two factories."""

    provider_factory: ProviderFactory | None
    embedder_factory: EmbedderFactory

    def __call__(self) -> Models:
        embedder = check_embedder(self.embedder_factory())
        provider = None
        if self.provider_factory is not None:
            provider = check_provider(self.provider_factory())
        return Models(provider, embedder)


def parks_by_config(config: AgentConfig) -> bool:
    """Whether `config` parks calls that wait: it has calls, and more than one may fly or
    it coalesces (its calls then answer in place first: `Parking.answers_in_place`)."""
    has_calls = (
        config.provider_factory is not None or config.embedder is not None or bool(config.tools)
    )
    return has_calls and (config.max_inflight_calls > 1 or config.coalesce_max > 1)


def flow_of(config: AgentConfig, token: str, *, windowed: bool) -> Flow:
    """The RunAgent's flow settings, from its config."""
    return Flow(
        token,
        config.rate_limit,
        config.max_inflight_calls,
        config.activation_timeout_s,
        windowed,
    )


def models_factory(
    provider_factory: ProviderFactory | None,
    embedder_factory: EmbedderFactory | None,
    flow: Flow | None = None,
) -> ProviderFactory | None:
    """What the runtime builds its provider with: the provider's own factory without an embedder.

    With `flow`, the chat provider is built behind that flow control. A key
    missing on this worker is reported once and fails each call instead
    (`missing_key`).
    """
    if provider_factory is not None:
        provider_factory = ReportMissingKey(provider_factory)
    if flow is not None and provider_factory is not None and FLOW_CONTROL:
        provider_factory = _FlowControlledFactory(provider_factory, flow)
    if embedder_factory is None:
        return provider_factory
    return ModelsFactory(provider_factory, embedder_factory)


class Models:
    """A provider that also embeds: `EmbedRequest`s go to the embedder."""

    __slots__ = ("embedder", "provider")

    def __init__(self, provider: ModelProvider | None, embedder: Embedder) -> None:
        self.provider = provider
        self.embedder = embedder

    async def complete(self, request: LlmRequest) -> LlmResponse:
        if isinstance(request, EmbedRequest):
            return await self._embed(request)
        if self.provider is None:
            raise ModelCallError(
                "no model provider: set AgentConfig.provider_factory to call ctx.call_model"
            )
        return await self.provider.complete(request)

    async def _embed(self, request: EmbedRequest) -> LlmResponse:
        embedder = self.embedder
        texts = list(request.messages)
        embedded = check_embedded(embedder, texts, await embedder.embed(texts))
        vectors = b"".join(
            Embedding.of(embedder.model_id, vector).vector for vector in embedded.vectors
        )
        return LlmResponse(
            response=vectors, model_id=embedder.model_id, input_tokens=embedded.input_tokens
        )

    async def aclose(self) -> None:
        try:
            if self.provider is not None:
                await close_provider(self.provider)
        finally:
            await close_embedder(self.embedder)


def decode_vectors(
    response: LlmResponse, model_id: str, dimensions: int, count: int
) -> list[Embedding]:
    """The `count` embeddings an `EmbedRequest`'s answer holds; refused if it holds otherwise."""
    width = 4 * dimensions
    data = response.response
    if len(data) != width * count:
        raise ModelCallError(
            f"embedder {model_id} answered {len(data)} bytes for {count} texts of "
            f"{dimensions} dimensions (expected {width * count})"
        )
    return [
        Embedding(model_id, dimensions, data[i * width : (i + 1) * width]) for i in range(count)
    ]
