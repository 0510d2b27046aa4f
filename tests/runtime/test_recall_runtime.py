"""Embedding calls are model calls: counted, budgeted, failing closed, refused when unset."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from beam_agents import AgentConfig, FlushToLongterm, TokenBudget
from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores import InMemoryMemoryStore, open_store
from beam_agents.model import FakeEmbedder
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

MODEL = "beam_agents.model/fake-embed-256"


def _config(name: str, **overrides: object) -> AgentConfig:
    settings: dict[str, object] = {
        "longterm_memory": f"memory://{name}",
        "embedder": FakeEmbedder(name=name),
        "max_inflight_calls": 1,
    }
    settings.update(overrides)
    return AgentConfig(**settings)  # type: ignore[arg-type]


def _rows(name: str) -> list[str]:
    store = open_store(f"memory://{name}")
    assert isinstance(store, InMemoryMemoryStore)
    return sorted(key for op, _, key in store.operations if op == "upsert")


def _events(*texts: bytes) -> Script:
    return Script().events(*[("k", text, 1_000 + i) for i, text in enumerate(texts)])


@pytest.mark.pipeline
def test_staged_texts_are_embedded_in_one_call_before_the_flush() -> None:
    name = f"once-{uuid.uuid4().hex}"

    run = run_script(agents.save_with_text, _config(name), _events(b"disk full"))

    assert run.outputs == [(b"k", b"disk full")]
    assert FakeEmbedder(name=name).calls() == [("disk full",)]
    store = open_store(f"memory://{name}")
    noted = asyncio.run(store.load(b"k", "note/0001"))
    plain = asyncio.run(store.load(b"k", "plain/0001"))
    assert noted is not None
    assert noted.embedding is not None
    assert noted.embedding.model_id == "fake-embed-256"
    assert plain is not None
    assert plain.embedding is None


@pytest.mark.pipeline
def test_embedding_calls_are_counted_as_model_calls_of_the_embedder() -> None:
    name = f"counted-{uuid.uuid4().hex}"

    run = run_script(agents.save_and_recall, _config(name), _events(b"disk full", b"disk ok"))

    assert run.counter(MODEL, "model_calls") == 2
    # Each call embeds the staged text, which is the query too, once: two words.
    assert run.counter(MODEL, "input_tokens") == 4
    assert run.counter("beam_agents.memory", "recalls") == 2
    assert run.outputs[1] == (b"k", b"note/0002,note/0001")


@pytest.mark.pipeline
def test_a_failed_embedding_fails_the_activation_as_model_error_and_commits_nothing() -> None:
    name = f"failing-{uuid.uuid4().hex}"
    config = _config(name, embedder=FakeEmbedder(name=name, fail_on="boom"))

    run = run_script(agents.save_and_recall, config, _events(b"fine", b"boom here", b"fine too"))

    assert run.reasons() == ["model_error"]
    assert "scripted failure: a text matches 'boom'" in run.errors[0].detail
    # The failed activation took no seq: the next event saves under the same one.
    assert [value for _, value in run.outputs] == [b"note/0001", b"note/0002,note/0001"]
    assert _rows(name) == ["note/0001", "note/0002"]
    store = open_store(f"memory://{name}")
    saved = asyncio.run(store.load(b"k", "note/0002"))
    assert saved is not None
    assert saved.value == b"fine too"


@pytest.mark.pipeline
def test_embedding_tokens_count_against_the_token_budget() -> None:
    name = f"budget-{uuid.uuid4().hex}"
    config = _config(name, token_budget=TokenBudget(per_key=2, window_ms=60_000))

    run = run_script(agents.save_and_recall, config, _events(b"disk full", b"disk full again"))

    # The first event spent the key's 2 tokens (its text, also its query): the second
    # event's call is refused.
    assert run.reasons() == ["budget_exceeded"]
    assert _rows(name) == ["note/0001"]


@pytest.mark.pipeline
def test_save_with_text_without_an_embedder_fails_naming_the_setting() -> None:
    name = f"unset-{uuid.uuid4().hex}"
    config = AgentConfig(longterm_memory=f"memory://{name}", max_inflight_calls=1)

    run: StreamRun = run_script(agents.save_with_text, config, _events(b"disk full"))

    assert run.reasons() == ["activation_error"]
    assert "AgentConfig.embedder" in run.errors[0].detail
    assert _rows(name) == []


def test_an_embedder_without_a_longterm_store_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.embedder: needs"):
        AgentConfig(embedder=FakeEmbedder())


def test_an_embedder_that_is_not_callable_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.embedder: must be"):
        AgentConfig(longterm_memory="memory://x", embedder="openai:text-embedding-3-small")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "uri",
    [
        "redis://localhost:6379/0",
        "bigtable://p/i/t",
    ],
)
def test_cross_entity_recall_is_refused_on_a_store_without_a_vector_index(uri: str) -> None:
    with pytest.raises(
        ConfigurationError, match=r"no native vector index.*the backends that can: memory://"
    ):
        AgentConfig(longterm_memory=uri, embedder=FakeEmbedder(), cross_entity_recall=True)


def test_cross_entity_recall_needs_an_embedder() -> None:
    with pytest.raises(ConfigurationError, match=r"needs AgentConfig\.embedder"):
        AgentConfig(longterm_memory="memory://x", cross_entity_recall=True)


def test_flushing_expiring_text_needs_an_embedder() -> None:
    with pytest.raises(ConfigurationError, match=r"FlushToLongterm\(text=...\) needs"):
        AgentConfig(longterm_memory="memory://x", on_expire=FlushToLongterm(text="notes"))


@pytest.mark.pipeline
def test_recall_across_entities_sees_other_entities_committed_rows() -> None:
    name = f"across-{uuid.uuid4().hex}"
    config = _config(name, cross_entity_recall=True)
    script = (
        Script()
        .events(("db", b"disk full on primary", 1_000), ("web", b"certificate expired", 1_001))
        .watermark(1_500)
        .events(("cache", b"disk full on cache node", 2_000))
    )

    run = run_script(agents.recall_across, config, script)

    outputs = dict(run.outputs)
    # The staged save is not seen (committed rows only); db's disk incident is nearest.
    assert outputs[b"cache"].split(b",")[0] == b"db/incident"


@pytest.mark.pipeline
def test_the_cross_entity_handle_is_closed_unless_configured() -> None:
    name = f"closed-{uuid.uuid4().hex}"

    run = run_script(agents.recall_across_unconfigured, _config(name), _events(b"x"))

    assert run.outputs[0][1].startswith(b"CrossEntityRecallNotConfigured: recall across")
