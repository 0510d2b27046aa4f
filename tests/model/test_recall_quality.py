"""Recall by meaning finds an incident told in other words: recall@5 on two generated sets."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from beam_agents.memory.recall import score_records
from beam_agents.memory.stores.base import Embedding, MemoryRecord
from beam_agents.model.embedders.local import LocalEmbedder
from beam_agents.model.embedders.protocol import Embedder
from tests.data import make_incident_history, make_incident_paraphrases

RECALL_AT_5_FLOOR = 0.9


def load(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def recall_at_5(
    embedder: Embedder,
    incidents: list[dict[str, str]],
    field: str,
    within: str | None = None,
) -> float:
    """Share of queries whose own original is among the 5 nearest originals (exact cosine).

    `within` names a column that splits the originals into entities: a query
    then competes only with its own entity's records, as recall does by
    default. Without it, every original is a candidate.
    """
    originals = asyncio.run(embedder.embed([row["original"] for row in incidents])).vectors
    queries = asyncio.run(embedder.embed([row[field] for row in incidents])).vectors
    records = [
        (row, MemoryRecord(row["id"], b"", 1, 0, embedding=Embedding.of(embedder.model_id, vector)))
        for row, vector in zip(incidents, originals, strict=True)
    ]
    found = 0
    for row, query in zip(incidents, queries, strict=True):
        candidates = [
            record for owner, record in records if within is None or owner[within] == row[within]
        ]
        top = score_records(Embedding.of(embedder.model_id, query), candidates, k=5).recalled
        found += row["id"] in {hit.key for hit in top}
    return found / len(incidents)


def test_the_data_files_are_what_their_generators_make() -> None:
    """Anyone can regenerate them byte for byte (each generator's docstring says how)."""
    for generator in (make_incident_paraphrases, make_incident_history):
        assert generator.OUTPUT.read_bytes() == generator.render(), generator.OUTPUT.name


def test_the_paraphrase_set_holds_200_distinct_incidents_each_reworded() -> None:
    incidents = load(make_incident_paraphrases.OUTPUT)

    assert len(incidents) >= 200
    assert len({(row["service"], row["failure"]) for row in incidents}) == len(incidents)
    assert all(row["original"] != row["paraphrase"] for row in incidents)


def test_the_history_set_holds_each_failure_twice_per_service_from_two_causes() -> None:
    incidents = load(make_incident_history.OUTPUT)
    triples = {(row["service"], row["failure"], row["cause"]) for row in incidents}
    pairs = [(row["service"], row["failure"]) for row in incidents]

    assert len(incidents) >= 200
    assert len(triples) == len(incidents)
    assert all(pairs.count(pair) == 2 for pair in pairs)
    assert all(row["original"] != row["recurrence"] for row in incidents)


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
    incidents = load(make_incident_paraphrases.OUTPUT)

    assert recall_at_5(minilm, incidents, field) >= RECALL_AT_5_FLOOR


@pytest.mark.local_embeddings
@pytest.mark.xfail(
    strict=True,
    reason="all-MiniLM-L6-v2 measures recall@5 = 0.788 (189/240) over all records and the "
    "same within each service, below the 0.9 target; the set was committed before it was "
    "first scored and not changed after (docs/memory.md)",
)
def test_minilm_finds_the_past_incident_a_recurrence_repeats_in_its_top_5(
    minilm: LocalEmbedder,
) -> None:
    incidents = load(make_incident_history.OUTPUT)

    assert recall_at_5(minilm, incidents, "recurrence") >= RECALL_AT_5_FLOOR
