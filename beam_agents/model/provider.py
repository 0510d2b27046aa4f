"""The provider protocol: anything that can complete an `LlmRequest`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from beam_agents.errors import ConfigurationError
from beam_agents.model.messages import LlmRequest, LlmResponse

__all__ = ["ModelProvider", "ProviderFactory", "check_provider"]


@runtime_checkable
class ModelProvider(Protocol):
    """An async model client, and its lifecycle on a worker.

    The DoFn's `setup()` calls the factory once per instance; activations
    call `complete` from the DoFn's loop only; `teardown()` awaits `aclose`
    once, on that same loop, so connection pools close where they were
    opened. A provider that holds nothing may subclass `ModelProvider` and
    inherit the `aclose` that does nothing.
    """

    async def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer one request; any exception becomes the activation's `model_error`."""
        ...

    async def aclose(self) -> None:
        """Release what the provider holds (connection pools, clients)."""
        return None


ProviderFactory = Callable[[], ModelProvider]
"""Zero-argument, picklable callable returning a provider (called in `setup()`)."""


def check_provider(provider: object) -> ModelProvider:
    """What `AgentConfig.provider_factory` returned, refused unless it has the whole lifecycle.

    Called where the factory is called, so a provider written before
    `aclose` was declared fails at once, saying how to fix it, rather than
    in `teardown()`.
    """
    missing = [
        name for name in ("complete", "aclose") if not callable(getattr(provider, name, None))
    ]
    if missing:
        raise ConfigurationError(
            "AgentConfig.provider_factory",
            f"returned a {type(provider).__name__} without {' or '.join(missing)}(); a provider "
            "has async complete(request) and async aclose() (subclass "
            "beam_agents.model.ModelProvider to inherit an aclose that does nothing)",
        )
    return provider  # type: ignore[return-value]
