"""Recall by meaning finds an incident told in other words, on three committed query sets.

What is decided, from what all-MiniLM-L6-v2 measures (docs/memory.md,
"Quality"): on every set the original is among the 10 nearest at least nine
times in ten, and the share among the 5 nearest stays at least what MiniLM
measures today, so a change that ranks worse fails here. No weights that
install offline reach 0.9 among the 5 nearest; a deployment that needs it
brings its own embedder.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from beam_agents.memory.recall import score_records
from beam_agents.memory.stores.base import Embedding, MemoryRecord
from beam_agents.model import FakeEmbedder
from beam_agents.model.embedders.local import LocalEmbedder
from beam_agents.model.embedders.protocol import Embedder
from tests.data import make_incident_history, make_incident_paraphrases

RECALL_AT_10_FLOOR = 0.9


@dataclass(frozen=True)
class QuerySet:
    """One committed set's queries, and the recall@5 MiniLM measured on it when committed."""

    name: str
    path: Path
    field: str
    recall_at_5_floor: float


QUERY_SETS = (
    # 178 of 220 (0.809): the service described in other words.
    QuerySet("paraphrase", make_incident_paraphrases.OUTPUT, "paraphrase", 0.80),
    # 193 of 220 (0.877): the service named as its original names it.
    QuerySet("paraphrase_named", make_incident_paraphrases.OUTPUT, "paraphrase_named", 0.87),
    # 189 of 240 (0.788): a later incident of the same failure from the same cause.
    QuerySet("recurrence", make_incident_history.OUTPUT, "recurrence", 0.78),
)


def load(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def ranks(
    embedder: Embedder,
    incidents: list[dict[str, str]],
    field: str,
    k: int = 10,
    within: str | None = None,
) -> list[int | None]:
    """Where each query's own original ranks among the `k` nearest originals (exact cosine).

    0 is first; None is beyond `k`. `within` names a column that splits the
    originals into entities: a query then competes only with its own
    entity's records, as recall does by default. Without it, every original
    is a candidate.
    """
    originals = asyncio.run(embedder.embed([row["original"] for row in incidents])).vectors
    queries = asyncio.run(embedder.embed([row[field] for row in incidents])).vectors
    records = [
        (row, MemoryRecord(row["id"], b"", 1, 0, embedding=Embedding.of(embedder.model_id, vector)))
        for row, vector in zip(incidents, originals, strict=True)
    ]
    found: list[int | None] = []
    for row, query in zip(incidents, queries, strict=True):
        candidates = [
            record for owner, record in records if within is None or owner[within] == row[within]
        ]
        top = score_records(Embedding.of(embedder.model_id, query), candidates, k=k).recalled
        keys = [hit.key for hit in top]
        found.append(keys.index(row["id"]) if row["id"] in keys else None)
    return found


def recall_at(k: int, found: list[int | None]) -> float:
    """Share of queries whose original is among the `k` nearest, from `ranks` of at least k."""
    return sum(rank is not None and rank < k for rank in found) / len(found)


@cache
def _minilm_ranks(minilm: LocalEmbedder, query_set: QuerySet) -> tuple[int | None, ...]:
    """Embedding a set takes seconds on a CPU: both recall figures read one ranking."""
    return tuple(ranks(minilm, load(query_set.path), query_set.field))


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
@pytest.mark.parametrize("query_set", QUERY_SETS, ids=[q.name for q in QUERY_SETS])
def test_minilm_finds_the_original_among_its_10_nearest_nine_times_in_ten(
    minilm: LocalEmbedder, query_set: QuerySet
) -> None:
    found = _minilm_ranks(minilm, query_set)

    assert recall_at(10, list(found)) >= RECALL_AT_10_FLOOR


@pytest.mark.local_embeddings
@pytest.mark.parametrize("query_set", QUERY_SETS, ids=[q.name for q in QUERY_SETS])
def test_minilm_finds_the_original_among_its_5_nearest_as_often_as_when_measured(
    minilm: LocalEmbedder, query_set: QuerySet
) -> None:
    """A floor at today's figure, not a target: below it, recall got worse."""
    found = _minilm_ranks(minilm, query_set)

    assert recall_at(5, list(found)) >= query_set.recall_at_5_floor


@pytest.mark.parametrize("query_set", QUERY_SETS, ids=[q.name for q in QUERY_SETS])
def test_an_embedder_that_matches_words_only_falls_below_both_floors(query_set: QuerySet) -> None:
    """The floors tell a worse ranking apart: hashed words miss what MiniLM finds."""
    found = ranks(FakeEmbedder(), load(query_set.path), query_set.field)

    assert recall_at(5, found) < query_set.recall_at_5_floor
    assert recall_at(10, found) < RECALL_AT_10_FLOOR
