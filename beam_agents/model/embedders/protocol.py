"""The embedder protocol: anything that turns texts into vectors for `recall`.

An embedder is a model like a provider is, and the runtime treats its calls
as model calls (replay-cached, batched per activation, parked when slow,
counted and budgeted): so it has the provider's shape. `AgentConfig.embedder`
takes a zero-argument, picklable factory, called where the provider factory
is called (the DoFn's `setup()`, the call loop); `embedder_from_spec` builds
one from the same kind of spec string as `provider_from_spec`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from beam_agents.errors import ConfigurationError

__all__ = [
    "Embedded",
    "Embedder",
    "EmbedderFactory",
    "check_embedded",
    "check_embedder",
    "close_embedder",
]


@dataclass(frozen=True, slots=True)
class Embedded:
    """What one `embed` call gave: one vector per text, in order, and what it cost."""

    vectors: Sequence[Sequence[float]]
    input_tokens: int = 0


@runtime_checkable
class Embedder(Protocol):
    """An async embedding client and its lifecycle on a worker.

    `model_id` names the model and every setting that changes its vectors:
    records are compared only with records of the same `model_id`, so two
    embedders whose vectors differ must not share one. `dimensions` is the
    width of every vector `embed` returns. `aclose` is optional, as for a
    provider.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """One vector per text, in order; any exception fails the activation as `model_error`."""
        ...


EmbedderFactory = Callable[[], Embedder]
"""Zero-argument, picklable callable returning an embedder (called in `setup()`)."""


def check_embedder(embedder: object) -> Embedder:
    """What `AgentConfig.embedder` returned, refused unless it is an embedder."""
    if not callable(getattr(embedder, "embed", None)):
        raise ConfigurationError(
            "AgentConfig.embedder",
            f"returned a {type(embedder).__name__} without embed(); an embedder has "
            "model_id, dimensions and async embed(texts)",
        )
    model_id = getattr(embedder, "model_id", None)
    if type(model_id) is not str or not model_id:
        raise ConfigurationError(
            "AgentConfig.embedder",
            f"returned a {type(embedder).__name__} whose model_id is {model_id!r}; "
            "it must be a non-empty str",
        )
    dimensions = getattr(embedder, "dimensions", None)
    if type(dimensions) is not int or dimensions < 1:
        raise ConfigurationError(
            "AgentConfig.embedder",
            f"returned a {type(embedder).__name__} whose dimensions is {dimensions!r}; "
            "it must be a positive int",
        )
    # What the checks above saw is all of the protocol that run time can see.
    return cast("Embedder", embedder)


def check_embedded(embedder: Embedder, texts: Sequence[str], embedded: object) -> Embedded:
    """`embedded` refused unless it holds one vector of the promised width per text."""
    if not isinstance(embedded, Embedded):
        raise TypeError(f"{embedder.model_id}: embed() returned {type(embedded).__name__}")
    if len(embedded.vectors) != len(texts):
        raise ValueError(
            f"{embedder.model_id}: embed() returned {len(embedded.vectors)} vectors "
            f"for {len(texts)} texts"
        )
    for vector in embedded.vectors:
        if len(vector) != embedder.dimensions:
            raise ValueError(
                f"{embedder.model_id}: embed() returned a vector of {len(vector)} values; "
                f"the embedder promised {embedder.dimensions}"
            )
    return embedded


async def close_embedder(embedder: object) -> None:
    """Await the embedder's `aclose()` when it has one: the hook is optional."""
    aclose = getattr(embedder, "aclose", None)
    if aclose is not None:
        await aclose()
