"""The provider protocol: anything that can complete an `LlmRequest`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from beam_agents.model.messages import LlmRequest, LlmResponse

__all__ = ["ModelProvider", "ProviderFactory"]


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
