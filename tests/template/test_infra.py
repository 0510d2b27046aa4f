"""The generated infra/: offline schema and wiring checks, `terraform fmt`, the module sources."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.infra import tfcheck, tfschema
from tests.template.baking import BACKENDS, CHECKOUT, Bake, combination_answers

CASES = [(backend, "fake", "yes") for backend in BACKENDS] + [
    ("postgres", "openai", "no"),
    ("none", "gemini", "no"),
]


def _sources(infra: Path) -> dict[str, str]:
    """`module name -> source` of every module block of the root module."""
    module = tfcheck.parse_module(infra)
    return {label: str(body["source"]) for _, label, body in module.blocks("module")}


@pytest.mark.parametrize(("backend", "provider", "hitl"), CASES, ids=["-".join(c) for c in CASES])
def test_generated_infra_passes_the_offline_checks_and_terraform_fmt(
    bake: Bake,
    provider_schema: tfschema.ProviderSchema,
    terraform: str,
    backend: str,
    provider: str,
    hitl: str,
) -> None:
    project = bake(**combination_answers(backend, provider, hitl))
    infra = project / "infra"

    module = tfcheck.parse_module(infra)
    findings = tfcheck.check_schema(module, lambda _provider: provider_schema)
    findings += tfcheck.check_variables(module)
    findings += tfcheck.check_outputs(module)
    findings += tfcheck.check_module_calls(module)
    assert [str(finding) for finding in findings] == []
    fmt = subprocess.run(
        [terraform, "fmt", "-check", "-recursive", "-diff", str(infra)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    expected = {"runtime", "entity_hash_key"} | (
        {"memory"} if backend not in ("none", "sqlite") else set()
    )
    expected |= {"answer_signing_key"} if hitl == "yes" else set()
    assert set(_sources(infra)) == expected
    outputs = set(module.outputs())
    assert ("longterm_memory" in outputs) == (backend not in ("none", "sqlite"))
    # A URI with a password reaches the job only as secretmanager:// and a version's name.
    assert ("server_ca_cert" in outputs) == (backend in ("postgres", "redis"))
    assert not [name for name in outputs if module.outputs()[name].get("sensitive")]
    assert ("answers_subscription" in outputs) == (hitl == "yes")
    assert "entity_hash_key_version" in outputs
    assert ("answer_signing_key_version" in outputs) == (hitl == "yes")
    assert ("model_api_key_secret_id" in outputs) == (provider != "fake")
    (runtime,) = [body for _, label, body in module.blocks("module") if label == "runtime"]
    assert runtime["input_topics"] == (["events", "answers"] if hitl == "yes" else ["events"])
    assert runtime["output_topics"] == ["outputs", "intents", "errors"]


def test_tests_point_module_sources_at_this_checkout(bake: Bake) -> None:
    """A local requirement becomes relative paths Terraform reads as local modules."""
    project = bake(**combination_answers("bigtable", "fake", "yes"))
    infra = project / "infra"

    for name, source in _sources(infra).items():
        assert source.startswith("../"), source
        target = (infra / source).resolve()
        assert target.parent == CHECKOUT / "infra" / "modules", (name, target)
        assert (target / "main.tf").is_file()


def test_a_released_requirement_pins_module_sources_to_its_version_tag(bake: Bake) -> None:
    """The convention: `beam-agents==X.Y.Z` pins `git::<repo>.git//infra/modules/M?ref=vX.Y.Z`."""
    answers = combination_answers("redis", "fake", "no")
    project = bake(**answers, beam_agents_requirement="beam-agents==0.4.2")

    sources = _sources(project / "infra")
    assert sources == {
        "runtime": "git::https://github.com/beam-agents/beam-agents.git"
        "//infra/modules/dataflow_runtime?ref=v0.4.2",
        "memory": "git::https://github.com/beam-agents/beam-agents.git"
        "//infra/modules/redis_store?ref=v0.4.2",
        "entity_hash_key": "git::https://github.com/beam-agents/beam-agents.git"
        "//infra/modules/generated_key?ref=v0.4.2",
    }
    text = "".join(p.read_text() for p in (project / "infra").glob("*.tf"))
    assert not re.search(r"source\s*=\s*\"[^\"]*\$\{", text), "a module source uses a variable"
    assert (
        '"beam-agents[memory-stores,telemetry]==0.4.2"' in (project / "pyproject.toml").read_text()
    )


@pytest.mark.parametrize("backend", ["firestore", "bigtable"])
def test_a_firestore_project_declares_the_vector_index_of_its_embedder(
    bake: Bake, backend: str
) -> None:
    """Recall across entities needs the store module's vector index; its width is a variable."""
    infra = bake(**combination_answers(backend, "fake", "no")) / "infra"
    module = tfcheck.parse_module(infra)

    calls = {label: body for _, label, body in module.blocks("module")}
    variables = module.variables()
    if backend == "firestore":
        assert calls["memory"]["embedding_dimensions"] == "${var.embedding_dimensions}"
        assert variables["embedding_dimensions"]["default"] == 384
        assert variables["embedding_dimensions"]["type"] == "number"
    else:
        assert "embedding_dimensions" not in calls["memory"]
        assert "embedding_dimensions" not in variables
