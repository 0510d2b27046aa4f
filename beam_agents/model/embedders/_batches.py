"""Embedding a batch longer than an API takes in one request, in order.

The hosted embedders differ in their cap and their wire format, not in how
a long batch is cut up and put back together: that is here once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from beam_agents.model.embedders.protocol import Embedded

__all__ = ["embed_in_batches"]

Request = Callable[[list[str]], Awaitable[tuple[list[list[float]], int]]]
"""One request: the vectors of its texts, in order, and the input tokens it reports."""


async def embed_in_batches(texts: Sequence[str], cap: int, request: Request) -> Embedded:
    """`texts` in consecutive requests of at most `cap`, one after the other, vectors in order."""
    vectors: list[list[float]] = []
    tokens = 0
    for start in range(0, len(texts), cap):
        chunk_vectors, chunk_tokens = await request(list(texts[start : start + cap]))
        vectors.extend(chunk_vectors)
        tokens += chunk_tokens
    return Embedded(vectors=vectors, input_tokens=tokens)
