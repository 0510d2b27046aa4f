"""LocalEmbedder with the real all-MiniLM-L6-v2 weights, offline, on the CPU."""

from __future__ import annotations

import asyncio
import math
import pickle
import shutil
from pathlib import Path

import pytest

from beam_agents.errors import ConfigurationError
from beam_agents.model import embedder_from_spec
from beam_agents.model.embedders.local import (
    KNOWN_PACKAGE,
    KNOWN_PACKAGE_SHA256,
    LocalEmbedder,
    ModelIntegrityError,
    known_package_model_dir,
)
from beam_agents.model.embedders.protocol import check_embedded, check_embedder


def cosine(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def model_dir() -> Path:
    found = known_package_model_dir()
    assert found is not None
    return found


@pytest.mark.local_embeddings
def test_the_packaged_model_embeds_paraphrases_close_and_other_incidents_far(
    minilm: LocalEmbedder,
) -> None:
    texts = [
        "disk full on the primary database",
        "the database primary ran out of disk space",
        "certificate expired on the edge proxy",
    ]

    embedded = check_embedded(minilm, texts, asyncio.run(minilm.embed(texts)))

    assert check_embedder(minilm) is minilm
    assert (minilm.model_id, minilm.dimensions) == ("local:all-MiniLM-L6-v2@53aa5117", 384)
    disk, paraphrase, other = ([float(x) for x in v] for v in embedded.vectors)
    for vector in (disk, paraphrase, other):
        assert math.isclose(cosine(vector, vector), 1.0, abs_tol=1e-5)
    assert cosine(disk, paraphrase) > 0.7
    assert cosine(disk, other) < 0.2
    # Word pieces plus the [CLS] and [SEP] each text is framed with.
    assert embedded.input_tokens >= 3 * 2 + sum(len(t.split()) for t in texts)


@pytest.mark.local_embeddings
def test_encoding_runs_off_the_event_loop(minilm: LocalEmbedder) -> None:
    """Other tasks keep running while a batch encodes: the loop is not blocked."""
    texts = [f"incident {i}: queue backlog on the billing consumer" for i in range(256)]

    async def scenario() -> int:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before = ticks
        await minilm.embed(texts)
        during = ticks - before
        stop.set()
        await task
        return during

    assert asyncio.run(scenario()) > 10


@pytest.mark.local_embeddings
def test_an_empty_batch_embeds_to_nothing(minilm: LocalEmbedder) -> None:
    embedded = asyncio.run(minilm.embed([]))

    assert (list(embedded.vectors), embedded.input_tokens) == ([], 0)


@pytest.mark.local_embeddings
def test_the_spec_factory_builds_the_same_model_on_the_worker(minilm: LocalEmbedder) -> None:
    factory = pickle.loads(pickle.dumps(embedder_from_spec(f"local:{KNOWN_PACKAGE}")))
    built = check_embedder(factory())
    text = ["payments api returns 502 after the deploy"]

    assert built.model_id == minilm.model_id
    assert asyncio.run(built.embed(text)).vectors == asyncio.run(minilm.embed(text)).vectors


@pytest.mark.local_embeddings
def test_the_packages_directory_by_path_needs_no_pin(minilm: LocalEmbedder) -> None:
    by_path = LocalEmbedder(str(model_dir()))

    assert by_path.model_id == minilm.model_id


@pytest.mark.local_embeddings
def test_a_corrupted_weights_file_is_refused_before_loading(
    minilm: LocalEmbedder, tmp_path: Path
) -> None:
    copy = Path(shutil.copytree(model_dir(), tmp_path / "minilm"))
    weights = copy / "model.safetensors"
    with weights.open("r+b") as file:
        file.seek(1_000_000)
        byte = file.read(1)
        file.seek(1_000_000)
        file.write(bytes([byte[0] ^ 0xFF]))

    with pytest.raises(ModelIntegrityError) as raised:
        LocalEmbedder(str(copy), sha256=KNOWN_PACKAGE_SHA256)

    assert raised.value.field == "sha256"
    assert raised.value.expected == KNOWN_PACKAGE_SHA256
    assert raised.value.actual != KNOWN_PACKAGE_SHA256
    assert f"not the pinned {KNOWN_PACKAGE_SHA256}" in str(raised.value)


@pytest.mark.local_embeddings
def test_a_wrong_pin_on_the_package_is_refused(minilm: LocalEmbedder) -> None:
    with pytest.raises(ModelIntegrityError, match=f"has sha256 {KNOWN_PACKAGE_SHA256}"):
        LocalEmbedder(KNOWN_PACKAGE, sha256="1" * 64)


@pytest.mark.local_embeddings
def test_the_embedder_refuses_to_pickle(minilm: LocalEmbedder) -> None:
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(minilm)
    assert "53aa5117" in repr(minilm)


def test_a_directory_without_safetensors_weights_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pytorch_model.bin").write_bytes(b"pickled weights")

    with pytest.raises(ConfigurationError, match=r"has no model\.safetensors"):
        LocalEmbedder(str(tmp_path), sha256="0" * 64)


def test_a_missing_directory_is_refused_by_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        LocalEmbedder(str(tmp_path / "nowhere"), sha256="0" * 64)


def test_a_package_that_is_not_installed_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match="'no_such_model_package' is not installed"):
        LocalEmbedder("no_such_model_package", sha256="0" * 64)
