"""The provider protocol: anything that can complete an `LlmRequest`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from beam_agents.model.messages import LlmRequest, LlmResponse

__all__ = ["ModelProvider", "ProviderFactory"]


@runtime_checkable
class ModelProvider(Protocol):
    """An async model client. Built once per DoFn instance, used only from its loop."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer one request; any exception becomes the activation's `model_error`."""
        ...


ProviderFactory = Callable[[], ModelProvider]
"""Zero-argument, picklable callable returning a provider (called in `setup()`)."""
