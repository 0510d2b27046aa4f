"""The generated projects' own tests pass: each store against its real server, each provider.

All selected projects' tests run in ONE pytest session of this environment's
Python (no virtualenv per bake): the session-scoped server fixtures of
`beam_agents.testing.pytest_plugin` start each server once and every project
that needs it reuses it. Each bake has its own package name, so their modules
never collide. The per-project tests below read that session's JUnit report.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.template.baking import CHECKOUT, bake_into, combination_answers

#: Every backend, every provider and both HITL values, in ten projects.
SELECTED = [
    ("none", "fake", "yes"),
    ("none", "fake", "no"),
    ("sqlite", "fake", "yes"),
    ("postgres", "fake", "yes"),
    ("redis", "fake", "no"),
    ("bigtable", "fake", "yes"),
    ("firestore", "fake", "no"),
    ("none", "openai", "no"),
    ("postgres", "gemini", "yes"),
]
#: Framework agents (adk, langgraph) with approval and without, over three stores and a provider;
#: each is baked only where its framework's extra is installed.
FRAMEWORK_SELECTED = [
    ("sqlite", "fake", "yes", "adk"),
    ("redis", "gemini", "no", "adk"),
    ("postgres", "fake", "yes", "langgraph"),
    ("firestore", "openai", "no", "langgraph"),
]
FRAMEWORK_MODULE = {"adk": "google.adk", "langgraph": "langgraph"}
#: A project name with quotes, an apostrophe and accents (default options otherwise).
AWKWARD = {
    "project_name": 'Zoë\'s "Fraud" Désk',
    "description": 'Says "hi", it\'s naïve \\ fine & <ok>',
}
AWKWARD_ID = "awkward-name"
SESSION_TIMEOUT_S = 1200

Outcomes = dict[str, dict[str, str]]


def _outcomes(report: Path) -> Outcomes:
    """`project dir -> {test name: passed|failed|error|skipped}` from a JUnit report."""
    outcomes: Outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        project = case.get("classname", "").split(".", 1)[0]
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag if child.tag != "skipped" else "skipped"
        name = case.get("name", "")
        outcomes.setdefault(project, {})[name] = outcome
    return outcomes


@pytest.fixture(scope="session")
def generated_session(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Path], Outcomes, str]:
    """Bake the selected projects and run all their tests in one pytest session."""
    root = tmp_path_factory.mktemp("generated")
    projects = {"-".join(c): bake_into(root, **combination_answers(*c)) for c in SELECTED}
    projects[AWKWARD_ID] = bake_into(root, **AWKWARD)
    for combo in FRAMEWORK_SELECTED:
        backend, provider, hitl, framework = combo
        if importlib.util.find_spec(FRAMEWORK_MODULE[framework]) is not None:
            answers = combination_answers(backend, provider, hitl)
            answers["project_name"] = f"{framework[:2]} {backend} {provider} {hitl}"
            projects["-".join(combo)] = bake_into(root, framework=framework, **answers)
    ini = root / "pytest.ini"
    ini.write_text(
        "[pytest]\naddopts = -ra --strict-markers\n"
        "filterwarnings =\n    ignore::DeprecationWarning:apache_beam.*\n"
    )
    report = root / "report.xml"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(CHECKOUT), *(str(p / "src") for p in projects.values())]
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            # The projects' conftests only enable this plugin; one session needs it once.
            "--noconftest",
            "-p",
            "beam_agents.testing.pytest_plugin",
            "--import-mode=importlib",
            "-c",
            str(ini),
            "--rootdir",
            str(root),
            f"--junitxml={report}",
            *(str(p / "tests") for p in projects.values()),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=SESSION_TIMEOUT_S,
        check=False,
    )
    log = result.stdout[-6000:] + result.stderr[-3000:]
    if not report.exists():
        pytest.fail(f"the generated tests did not run:\n{log}")
    return projects, _outcomes(report), log


def _expected_tests(backend: str, provider: str, hitl: str, framework: str = "plain") -> set[str]:
    expected = {
        "test_each_event_gets_one_typed_decision_from_the_model",
        "test_working_memory_carries_the_entity_history_into_the_next_call",
        "test_make_run_processes_the_bundled_sample_events",
        "test_the_dataflow_job_graph_builds_offline",
        "test_the_job_hands_otlp_endpoint_to_its_workers",
        "test_an_otlp_endpoint_that_is_no_url_is_refused_before_the_job_starts",
        "test_pubsub_messages_parse_to_events_and_anything_else_to_a_dead_letter",
        "test_the_job_hands_the_entity_hash_secret_to_its_workers",
    }
    if backend != "none":
        expected.add("test_each_decision_is_saved_to_the_longterm_store")
    if hitl == "yes" and framework != "plain":
        expected.add("test_an_approved_action_runs_its_tool_after_the_answer")
        expected.add("test_a_rejected_action_never_runs_its_tool")
    elif hitl == "yes":
        expected.add("test_an_approved_action_emits_its_intent_after_the_answer")
        expected.add("test_an_unanswered_approval_times_out_to_the_errors_output")
        expected.add("test_an_unsigned_answer_is_dead_lettered_under_a_signing_key")
        expected.add("test_a_signed_answer_resumes_the_approval")
        expected.add("test_the_job_verifies_answers_under_the_answer_signing_secret")
        expected.add("test_a_signed_answer_message_reaches_the_agent_whole")
    if provider != "fake":
        expected.add("test_the_agent_calls_the_model_over_its_wire_format")
    return expected


@pytest.mark.parametrize(
    ("backend", "provider", "hitl"),
    SELECTED,
    ids=["-".join(combo) for combo in SELECTED],
)
def test_generated_project_tests_pass(
    generated_session: tuple[dict[str, Path], Outcomes, str],
    backend: str,
    provider: str,
    hitl: str,
) -> None:
    projects, outcomes, log = generated_session
    project = projects["-".join((backend, provider, hitl))]
    results = outcomes.get(project.name, {})

    not_passed = {name: outcome for name, outcome in results.items() if outcome != "passed"}
    assert not_passed == {}, log
    missing = _expected_tests(backend, provider, hitl) - set(results)
    assert not missing, f"{project.name} did not run {sorted(missing)}\n{log}"


def test_a_name_with_quotes_apostrophes_and_accents_bakes_and_its_tests_pass(
    generated_session: tuple[dict[str, Path], Outcomes, str],
) -> None:
    projects, outcomes, log = generated_session
    project = projects[AWKWARD_ID]
    assert project.name == "zoe-s-fraud-desk"
    assert (project / "src" / "zoe_s_fraud_desk" / "agent.py").is_file()
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["description"] == AWKWARD["description"]
    metadata = json.loads((project / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["name"] == AWKWARD["project_name"]
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert '# Zoë\'s "Fraud" Désk' in (project / "README.md").read_text(encoding="utf-8")
    results = outcomes.get(project.name, {})
    assert len(results) >= len(_expected_tests("sqlite", "fake", "yes")), log
    assert {name for name, outcome in results.items() if outcome != "passed"} == set(), log


@pytest.mark.parametrize(
    ("backend", "provider", "hitl", "framework"),
    FRAMEWORK_SELECTED,
    ids=["-".join(combo) for combo in FRAMEWORK_SELECTED],
)
def test_generated_framework_project_tests_pass(
    generated_session: tuple[dict[str, Path], Outcomes, str],
    backend: str,
    provider: str,
    hitl: str,
    framework: str,
) -> None:
    """An ADK or LangGraph project's own tests, beside the plain ones, in the same session."""
    pytest.importorskip(FRAMEWORK_MODULE[framework])
    projects, outcomes, log = generated_session
    project = projects["-".join((backend, provider, hitl, framework))]
    results = outcomes.get(project.name, {})

    not_passed = {name: outcome for name, outcome in results.items() if outcome != "passed"}
    assert not_passed == {}, log
    missing = _expected_tests(backend, provider, hitl, framework) - set(results)
    assert not missing, f"{project.name} did not run {sorted(missing)}\n{log}"
