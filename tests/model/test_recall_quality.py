"""Recall by meaning finds an incident told in other words: recall@5 on a generated set."""

from __future__ import annotations

import asyncio
import json

import pytest

from beam_agents.memory.recall import score_records
from beam_agents.memory.stores.base import Embedding, MemoryRecord
from beam_agents.model.local_embedder import LocalEmbedder
from tests.data.make_incident_paraphrases import OUTPUT, render

RECALL_AT_5_FLOOR = 0.9


def load() -> list[dict[str, str]]:
    return [json.loads(line) for line in OUTPUT.read_text(encoding="utf-8").splitlines()]


def recall_at_5(
    embedder: LocalEmbedder, incidents: list[dict[str, str]], field: str = "paraphrase"
) -> float:
    """Share of paraphrases whose own original is among the 5 nearest originals (exact cosine)."""
    originals = asyncio.run(embedder.embed([row["original"] for row in incidents])).vectors
    queries = asyncio.run(embedder.embed([row[field] for row in incidents])).vectors
    records = [
        MemoryRecord(row["id"], b"", 1, 0, embedding=Embedding.of(embedder.model_id, vector))
        for row, vector in zip(incidents, originals, strict=True)
    ]
    found = 0
    for row, query in zip(incidents, queries, strict=True):
        top = score_records(Embedding.of(embedder.model_id, query), records, k=5).recalled
        found += row["id"] in {hit.key for hit in top}
    return found / len(incidents)


def test_the_data_file_is_what_its_generator_makes() -> None:
    """Anyone can regenerate it byte for byte: python tests/data/make_incident_paraphrases.py."""
    assert OUTPUT.read_bytes() == render()


def test_the_set_holds_200_distinct_incidents_each_reworded() -> None:
    incidents = load()

    assert len(incidents) >= 200
    assert len({(row["service"], row["failure"]) for row in incidents}) == len(incidents)
    assert all(row["original"] != row["paraphrase"] for row in incidents)


@pytest.mark.local_embeddings
@pytest.mark.xfail(
    strict=True,
    reason="all-MiniLM-L6-v2 measures recall@5 = 0.809 (178/220) with the service described "
    "in other words and 0.877 (193/220) with it named as the original names it, both below "
    "the 0.9 target; the set was generated once and not changed after scoring (docs/memory.md)",
)
@pytest.mark.parametrize("field", ["paraphrase", "paraphrase_named"])
def test_minilm_finds_the_original_of_a_paraphrase_in_its_top_5(
    minilm: LocalEmbedder, field: str
) -> None:
    assert recall_at_5(minilm, load(), field) >= RECALL_AT_5_FLOOR
