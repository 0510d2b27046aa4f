"""Firestore's document layout pieces: versions, rows, chunks and the batch seq guard.

Split from `firestore` so that module reads as the store's operations; these
are the plain data and pure functions its commit is built from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.cloud.firestore_v1 import DELETE_FIELD, AsyncClient
from google.cloud.firestore_v1.async_document import AsyncDocumentReference
from google.cloud.firestore_v1.base_document import DocumentSnapshot

from beam_agents.memory.stores.base import Embedding

__all__ = [
    "CHUNKS",
    "MAX_VECTOR_DIMENSIONS",
    "NO_VECTOR",
    "Races",
    "Row",
    "Version",
    "chunk_refs",
    "guard",
    "stage_chunks",
    "vector_fields",
    "vector_size",
]

CHUNKS = "chunks"
MAX_VECTOR_DIMENSIONS = 2048
"""Firestore's widest vector field: a wider embedding is kept in the envelope only."""
NO_VECTOR: dict[str, Any] = dict.fromkeys(("embedding", "model", "dims"), DELETE_FIELD)
"""A rewrite without a (storable) vector removes the stored one."""


@dataclass(frozen=True, slots=True)
class Version:
    """A stored main document as last seen: its update time (the commit
    precondition), seq (the guard) and chunk documents (to delete on rewrite)."""

    update_time: Any
    seq: int
    chunks: tuple[str, ...]


@dataclass(slots=True)
class Races:
    """How many commits of one upsert lost a race, to name contention in the error."""

    lost: int = 0


@dataclass(frozen=True, slots=True)
class Row:
    """One record as Firestore documents: the main document and its chunks, if any."""

    doc_id: str
    fields: dict[str, Any]
    chunks: list[tuple[str, bytes]]
    size: int


def chunk_refs(
    main: AsyncDocumentReference, snapshot: DocumentSnapshot[Any]
) -> list[AsyncDocumentReference]:
    """The chunk documents a stored main document points at (none when inline)."""
    data = snapshot.to_dict() or {}
    digest, count = data.get("digest"), data.get("chunks")
    if not isinstance(digest, str) or not isinstance(count, int):
        return []
    return [main.collection(CHUNKS).document(f"{digest[:32]}-{i}") for i in range(count)]


def guard(
    rows: list[Row], versions: dict[str, Version | None]
) -> tuple[list[bool], dict[str, Row]]:
    """The seq guard over a batch: applied or not per row, and the writes that survive.

    Rows are judged in order against the stored seq and the batch's own
    earlier rows, so a later record for the same key wins.
    """
    applied: list[bool] = []
    writes: dict[str, Row] = {}
    stored = {doc_id: None if v is None else v.seq for doc_id, v in versions.items()}
    for row in rows:
        current = stored[row.doc_id]
        ok = current is None or row.fields["seq"] >= current
        if ok:
            stored[row.doc_id] = row.fields["seq"]
            writes[row.doc_id] = row
        applied.append(ok)
    return applied, writes


def stage_chunks(
    client: AsyncClient,
    batch: Any,
    ref: AsyncDocumentReference,
    row: Row,
    version: Version | None,
) -> tuple[str, ...]:
    """Write a row's chunk documents into `batch`, deleting stored ones it no longer has."""
    chunk_docs = ref.collection(CHUNKS)
    new_chunks = []
    for chunk_id, data in row.chunks:
        chunk = chunk_docs.document(chunk_id)
        new_chunks.append(chunk.path)
        batch.set(chunk, {"data": data})
    for old in version.chunks if version is not None else ():
        if old not in new_chunks:
            batch.delete(client.document(old))
    return tuple(new_chunks)


def vector_fields(embedding: Embedding | None) -> dict[str, Any]:
    """The fields `find_nearest` reads: the vector, and the embedder to pre-filter on."""
    if embedding is None or embedding.dimensions > MAX_VECTOR_DIMENSIONS:
        return {}
    from google.cloud.firestore_v1.vector import Vector

    values = list(embedding.values())
    return {"embedding": Vector(values), "model": embedding.model_id, "dims": embedding.dimensions}


def vector_size(embedding: Embedding | None) -> int:
    """The storage size of `_vector_fields`: 8 bytes a value, plus names and the model id."""
    if embedding is None or embedding.dimensions > MAX_VECTOR_DIMENSIONS:
        return 0
    model = len(embedding.model_id.encode("utf-8", "surrogatepass")) + 1
    return len("embedding") + 1 + 8 * embedding.dimensions + 32 + 6 + model + 5 + 8
