"""The provider protocol: anything that can complete an `LlmRequest`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast, runtime_checkable

from beam_agents.errors import ConfigurationError
from beam_agents.model.messages import LlmRequest, LlmResponse

__all__ = ["ModelProvider", "ProviderFactory", "check_provider", "close_provider"]


@runtime_checkable
class ModelProvider(Protocol):
    """An async model client, and its lifecycle on a worker.

    Any object with `async complete(request)` is a provider. The DoFn's
    `setup()` calls the factory once per instance; activations call
    `complete` from the DoFn's loop only. `aclose` is optional: when the
    provider has one, `teardown()` awaits it once, on that same loop, so
    connection pools close where they were opened; a provider that holds
    nothing leaves it out (or, subclassing `ModelProvider`, inherits the one
    that does nothing).
    """

    async def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer one request; any exception becomes the activation's `model_error`."""
        ...

    async def aclose(self) -> None:
        """Optional: release what the provider holds (connection pools, clients)."""
        return None


class _Completes(Protocol):
    """What a provider must have: `ModelProvider` less its optional `aclose`.

    The factory's type asks only for this, so a provider with `complete`
    alone type-checks where it is configured, as it runs.
    """

    async def complete(self, request: LlmRequest) -> LlmResponse: ...


ProviderFactory = Callable[[], _Completes]
"""Zero-argument, picklable callable returning a provider (called in `setup()`);
the provider needs `complete`, and may have `aclose`."""


def check_provider(provider: object) -> ModelProvider:
    """What `AgentConfig.provider_factory` returned, refused unless it can `complete`.

    Called where the factory is called, so a factory returning something
    else fails at once, saying what a provider is. `aclose` is optional
    (`close_provider`); one that is there must be callable.
    """
    if not callable(getattr(provider, "complete", None)):
        raise ConfigurationError(
            "AgentConfig.provider_factory",
            f"returned a {type(provider).__name__} without complete(); a provider "
            "has async complete(request), and optionally async aclose()",
        )
    aclose = getattr(provider, "aclose", None)
    if aclose is not None and not callable(aclose):
        raise ConfigurationError(
            "AgentConfig.provider_factory",
            f"returned a {type(provider).__name__} whose aclose is a "
            f"{type(aclose).__name__}; when present, aclose is an async method",
        )
    # What the checks above saw is all of the protocol that run time can see.
    return cast("ModelProvider", provider)


async def close_provider(provider: object) -> None:
    """Await the provider's `aclose()` when it has one: the hook is optional."""
    aclose = getattr(provider, "aclose", None)
    if aclose is not None:
        await aclose()
