"""The `framework` choice: an ADK or LangGraph agent baked beside the plain project's edges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.template.baking import CHECKOUT, bake_into, package_of, text_files

#: Every store a framework agent can keep its tool ledger in, with and without approval.
FRAMEWORK_BAKES = [
    (framework, backend, provider, hitl)
    for framework in ("adk", "langgraph")
    for backend, provider in (
        ("sqlite", "fake"),
        ("postgres", "gemini"),
        ("redis", "openai"),
        ("bigtable", "fake"),
        ("firestore", "fake"),
    )
    for hitl in ("yes", "no")
]
ADAPTER = {"adk": "beam_agents.adapters.adk", "langgraph": "beam_agents.adapters.langgraph"}
#: What each framework's extra installs (the tests that run a bake skip without it).
FRAMEWORK_MODULE = {"adk": "google.adk", "langgraph": "langgraph"}


def _answers(framework: str, backend: str, provider: str, hitl: str) -> dict[str, str]:
    return {
        "project_name": f"{framework[:2]} {backend} {provider} {hitl}",
        "framework": framework,
        "longterm_backend": backend,
        "model_provider": provider,
        "include_hitl": hitl,
    }


@pytest.fixture(scope="module")
def framework_bakes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], Path]:
    root = tmp_path_factory.mktemp("frameworks")
    return {combo: bake_into(root, **_answers(*combo)) for combo in FRAMEWORK_BAKES}


@pytest.mark.parametrize("combo", FRAMEWORK_BAKES, ids=["-".join(c) for c in FRAMEWORK_BAKES])
def test_a_framework_bake_runs_its_agent_through_the_adapter(
    framework_bakes: dict[tuple[str, ...], Path], combo: tuple[str, str, str, str]
) -> None:
    framework, _backend, _provider, hitl = combo
    project = framework_bakes[combo]
    agent = (project / "src" / package_of(project) / "agent.py").read_text(encoding="utf-8")
    graph = (project / "src" / package_of(project) / "graph.py").read_text(encoding="utf-8")

    assert f"from {ADAPTER[framework]} import" in agent
    assert "tools=TOOLS," in graph
    assert "output_type=Decision" in graph
    assert not (project / "_frameworks").exists()
    assert (project / "tests" / "test_hitl.py").exists() == (hitl == "yes")
    if framework == "adk":
        assert "model=BeamAgentsLlm(model=MODEL_ID)" in agent
        assert "output_schema=Classification" in agent  # the adapter passes it through
        assert ("require_confirmation=True" in agent) == (hitl == "yes")
    else:
        assert "BeamAgentsChatModel(model_id=MODEL_ID)" in agent
        assert ".with_structured_output(Classification)" in agent
        assert ("interrupt(" in agent) == (hitl == "yes")
    for path in text_files(project):
        text = path.read_text(encoding="utf-8")
        assert "{{" not in text, path
        assert "{%" not in text, path
        if path.suffix == ".py":
            compile(text, str(path), "exec", dont_inherit=True)


@pytest.mark.parametrize("combo", FRAMEWORK_BAKES, ids=["-".join(c) for c in FRAMEWORK_BAKES])
def test_a_framework_bake_depends_on_its_extra(
    framework_bakes: dict[tuple[str, ...], Path], combo: tuple[str, str, str, str]
) -> None:
    project = framework_bakes[combo]
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    requirement = pyproject["project"]["dependencies"][0]
    extras = requirement.split("[", 1)[1].split("]")[0].split(",")

    assert combo[0] in extras
    assert {"memory-stores", "telemetry"} <= set(extras)


def test_every_framework_bake_passes_ruff_check(
    framework_bakes: dict[tuple[str, ...], Path],
) -> None:
    failures = []
    for project in sorted(framework_bakes.values()):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--no-cache", "--quiet", "."],
            cwd=project, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            failures.append(f"{project.name}:\n{result.stdout}{result.stderr}")
    assert failures == []


def test_the_plain_choice_bakes_the_same_files_as_no_answer(tmp_path: Path) -> None:
    """`framework=plain` is the default: answering it changes nothing but the recorded answer."""
    default = bake_into(tmp_path / "default", project_name="Fraud Desk")
    plain = bake_into(tmp_path / "plain", project_name="Fraud Desk", framework="plain")

    files = [p.relative_to(default) for p in text_files(default) if p.name != ".cruft.json"]
    assert files == [p.relative_to(plain) for p in text_files(plain) if p.name != ".cruft.json"]
    for name in files:
        assert (default / name).read_bytes() == (plain / name).read_bytes(), name
    assert "beam_agents.adapters" not in (default / "src/fraud_desk/agent.py").read_text()


@pytest.mark.parametrize("framework", ["adk", "langgraph"])
def test_make_run_of_a_framework_bake_runs_offline(tmp_path: Path, framework: str) -> None:
    """`make run`'s command, in this environment: sample events, approval, the tool once."""
    pytest.importorskip(FRAMEWORK_MODULE[framework])
    project = bake_into(tmp_path, **_answers(framework, "sqlite", "fake", "yes"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CHECKOUT), str(project / "src")])}
    command = [
        sys.executable,
        "-m",
        f"{package_of(project)}.pipeline",
        "--input",
        "data/events.jsonl",
    ]
    command += ["--answers", "data/answers.jsonl"]

    run = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False
    )

    assert run.returncode == 0, run.stderr[-3000:]
    kinds = [line.split(" ", 1)[0] for line in run.stdout.splitlines()]
    assert (kinds.count("outputs"), kinds.count("intents"), kinds.count("errors")) == (5, 1, 0)
    outputs = [json.loads(line.split(" ", 1)[1]) for line in run.stdout.splitlines()]
    outputs = [o for o, kind in zip(outputs, kinds, strict=True) if kind == "outputs"]
    # The typed decisions, written as the JSON records they always were.
    assert {tuple(sorted(o)) for o in outputs} == {("answer", "entity", "event_id", "label")}
    decided = {o["entity"]: (o["label"], o["answer"]) for o in outputs}
    assert decided["acct-3"] == ("act", "action taken")  # take_action ran, through the ledger
    assert run.stderr.splitlines()[-1] == "dead letters: none"
    assert (project / "out" / "longterm.sqlite").is_file()
