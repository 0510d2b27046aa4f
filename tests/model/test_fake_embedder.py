"""FakeEmbedder: rankings follow shared words, vectors are stable across processes."""

from __future__ import annotations

import asyncio
import math
import pickle
import subprocess
import sys
import uuid

import pytest

from beam_agents import AgentConfig
from beam_agents.errors import ConfigurationError
from beam_agents.memory.recall import score_records
from beam_agents.memory.stores.base import Embedding, MemoryRecord
from beam_agents.model import Embedded, Embedder, FakeEmbedder
from beam_agents.model.embedders.fake import FakeEmbedderError
from beam_agents.model.embedders.protocol import check_embedded, check_embedder
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents


def embed(embedder: FakeEmbedder, *texts: str) -> Embedded:
    return asyncio.run(embedder.embed(texts))


def ranked(embedder: FakeEmbedder, query: str, documents: dict[str, str]) -> list[str]:
    """Keys of `documents` by cosine similarity to `query`, best first (exact recall scoring)."""
    vectors = embed(embedder, query, *documents.values()).vectors
    records = [
        MemoryRecord(key, b"", 1, 0, embedding=Embedding.of(embedder.model_id, vector))
        for key, vector in zip(documents, vectors[1:], strict=True)
    ]
    query_embedding = Embedding.of(embedder.model_id, vectors[0])
    return [hit.key for hit in score_records(query_embedding, records, k=len(records)).recalled]


def test_it_is_an_embedder_with_a_model_id_naming_its_width() -> None:
    embedder = FakeEmbedder(dimensions=64)

    assert isinstance(embedder, Embedder)
    assert check_embedder(embedder()) is embedder
    assert (embedder.model_id, embedder.dimensions) == ("fake-embed-64", 64)
    assert FakeEmbedder().model_id == "fake-embed-256"


def test_vectors_are_unit_length_one_per_text_and_tokens_count_words() -> None:
    embedder = FakeEmbedder(name="fake-unit", keep_calls=False)
    texts = ["Disk full on db-1", "the primary database is down", "x"]

    embedded = check_embedded(embedder, texts, embed(embedder, *texts))

    assert embedded.input_tokens == 5 + 5 + 1  # "db-1" is two words
    for vector in embedded.vectors:
        assert math.isclose(math.fsum(v * v for v in vector), 1.0, rel_tol=1e-12)


def test_a_text_without_words_is_the_zero_vector() -> None:
    (vector,) = embed(FakeEmbedder(keep_calls=False), "?! ...").vectors

    assert set(vector) == {0.0}


def test_case_and_punctuation_do_not_change_the_vector() -> None:
    embedder = FakeEmbedder(keep_calls=False)

    first, second = embed(embedder, "Disk FULL, on db!", "disk full on db").vectors

    assert first == second


def test_rankings_follow_shared_words() -> None:
    embedder = FakeEmbedder(keep_calls=False)
    documents = {
        "all-three": "disk full on the primary database",
        "two": "primary database restarted overnight",
        "one": "database backups verified",
        "none": "certificate expired on edge proxy",
    }

    order = ranked(embedder, "primary database disk", documents)

    assert order == ["all-three", "two", "one", "none"]


def test_vectors_are_byte_identical_in_another_process() -> None:
    """SHA-256, not hash(): a fresh interpreter (another hash seed) makes the same bytes."""
    text = "payments api latency spike after deploy"
    here = Embedding.of("m", embed(FakeEmbedder(keep_calls=False), text).vectors[0]).vector
    script = (
        "import asyncio, sys\n"
        "from beam_agents.memory.stores.base import Embedding\n"
        "from beam_agents.model import FakeEmbedder\n"
        f"e = asyncio.run(FakeEmbedder(keep_calls=False).embed([{text!r}]))\n"
        "sys.stdout.write(Embedding.of('m', e.vectors[0]).vector.hex())\n"
    )
    there = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    ).stdout

    assert bytes.fromhex(there) == here


def test_calls_are_logged_per_name_across_instances_and_pickles() -> None:
    """A test counts the calls a pipeline's unpickled copies made, by name."""
    embedder = FakeEmbedder(name="fake-log")
    embedder.reset()
    copy = pickle.loads(pickle.dumps(embedder))

    embed(copy, "a", "b")
    embed(embedder, "c")

    assert embedder.call_count() == 2
    assert embedder.calls() == [("a", "b"), ("c",)]
    assert FakeEmbedder(name="fake-other").call_count() == 0
    embedder.reset()
    assert embedder.call_count() == 0


def test_fail_on_raises_for_a_matching_text_and_logs_the_call() -> None:
    embedder = FakeEmbedder(name="fake-fail-on", fail_on=r"\bboom\b")
    embedder.reset()

    with pytest.raises(FakeEmbedderError, match="boom"):
        embed(embedder, "fine", "this goes boom")
    assert len(embed(embedder, "fine", "boomerang").vectors) == 2
    assert embedder.call_count() == 2


def test_fail_first_fails_the_first_calls_then_answers() -> None:
    embedder = FakeEmbedder(name="fake-fail-first", fail_first=2)
    embedder.reset()

    for attempt in (1, 2):
        with pytest.raises(FakeEmbedderError, match=f"scripted failure {attempt} of 2"):
            embed(embedder, "x")
    assert len(embed(embedder, "x").vectors) == 1


def test_delay_s_sleeps_without_blocking_the_loop() -> None:
    """Another task runs while the embedder waits: the delay is an await, not a sleep."""
    embedder = FakeEmbedder(delay_s=0.05, keep_calls=False)
    ticks: list[str] = []

    async def scenario() -> None:
        async def tick() -> None:
            ticks.append("other task ran")

        call = asyncio.ensure_future(embedder.embed(["x"]))
        await asyncio.sleep(0)
        await tick()
        assert not call.done()
        await call

    asyncio.run(scenario())
    assert ticks == ["other task ran"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"dimensions": 0}, "dimensions"),
        ({"dimensions": 8193}, "dimensions"),
        ({"dimensions": True}, "dimensions"),
        ({"delay_s": -1.0}, "delay_s"),
        ({"delay_s": math.inf}, "delay_s"),
        ({"fail_first": -1}, "fail_first"),
        ({"fail_on": "("}, "fail_on"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        FakeEmbedder(**kwargs)  # type: ignore[arg-type]

    assert raised.value.field == field


def _recall_run(name: str, *, fault: bool) -> tuple[StreamRun, FakeEmbedder]:
    """save_and_recall over three events with a FakeEmbedder; optionally a failed commit."""
    embedder = FakeEmbedder(name=name)
    config = AgentConfig(
        longterm_memory=f"memory://{name}", embedder=embedder, max_inflight_calls=1
    )
    script = Script().events(
        ("k", b"disk full on primary database", 1_000),
        ("k", b"certificate expired on edge proxy", 1_001),
        ("k", b"primary database disk full again", 1_002),
    )
    if not fault:
        return run_script(agents.save_and_recall, config, script), embedder
    with fail_commit_once(b"k", 2) as point:
        run = run_script(agents.save_and_recall, config, script)
    assert point.fired == [(b"k", 2)]
    return run, embedder


@pytest.mark.pipeline
def test_a_pipeline_recalls_by_shared_words_and_a_retried_bundle_embeds_nothing_again() -> None:
    """The workers' unpickled copies log under the name: a retried commit costs no extra call.

    Only the calls are compared across the two runs: the retried bundle re-runs
    seq 1, whose recall can see the row seq 2's failed attempt flushed (reads
    are point-in-time; docs/memory.md, the blind-upsert discipline).
    """
    clean, clean_embedder = _recall_run(f"fake-clean-{uuid.uuid4().hex}", fault=False)
    faulty, faulty_embedder = _recall_run(f"fake-faulty-{uuid.uuid4().hex}", fault=True)

    assert (clean.errors, faulty.errors) == ([], [])
    # The third incident shares its words with the first, not the second.
    assert clean.outputs[2] == (b"k", b"note/0003,note/0001")
    assert clean_embedder.call_count() == 3
    assert faulty_embedder.calls() == clean_embedder.calls()
