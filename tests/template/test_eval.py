"""A generated project's `make eval`: the labelled set scores, its gate passes; worse fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.template.baking import CHECKOUT, bake_into, package_of

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FORGETFUL_AGENT = """
from beam_agents import Complete

async def agent(ctx):
    '''Decides "ignore" on everything: the regression a gate must catch.'''
    entity = ctx.entity_key.decode()
    return Complete(output={"entity": entity, "event_id": ctx.event_id, "label": "ignore"})
"""


def _make_eval(project: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`make eval` with this environment's Python: no new virtualenv, the checkout on the path."""
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    venv = Path(sys.executable).parent.parent
    path = os.pathsep.join([str(CHECKOUT), str(project / "src"), str(tmp_path)])
    return subprocess.run(
        ["make", "--no-print-directory", "eval", f"VENV={venv}", "-o", f"{venv}/.installed-stamp",
         *args],
        cwd=project, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": path, "MAKEFLAGS": "", "MAKELEVEL": ""},
    )  # fmt: skip


@pytest.mark.parametrize("hitl", ["yes", "no"])
def test_make_eval_scores_the_labelled_set_and_passes_its_gate(tmp_path: Path, hitl: str) -> None:
    """Run twice: the first records the scripted model, the second replays it, identically."""
    project = bake_into(tmp_path / "baked", project_name=f"Eval Desk {hitl}", include_hitl=hitl)

    first = _make_eval(project, tmp_path)
    summary = (project / "out/eval/summary.json").read_text()
    second = _make_eval(project, tmp_path)

    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "gate label>=0.8: pass" in first.stderr
    assert "report: out/eval/report.html" in first.stdout
    assert (project / "out/eval/report.html").is_file()
    [candidate] = json.loads(summary)["candidates"]
    assert candidate["metrics"]["label"]["mean"] == pytest.approx(9 / 11)
    assert candidate["metrics"]["label"]["n"] == 11
    assert candidate["confusion"]["field"] == "label"
    assert (project / "data/eval_recording.jsonl").is_file()
    assert second.returncode == 0, second.stderr[-3000:]
    [replayed] = json.loads((project / "out/eval/summary.json").read_text())["candidates"]
    for field in ("metrics", "confusion", "dead_letters", "tokens", "model_calls"):
        assert replayed[field] == candidate[field], field
    assert replayed["recorded"] == replayed["model_calls"], "every call came from the recording"


@pytest.mark.parametrize("framework", ["adk", "langgraph"])
def test_make_eval_of_a_framework_bake_passes_its_gate(tmp_path: Path, framework: str) -> None:
    """The framework agents call take_action; in an evaluation it answers with the stub."""
    pytest.importorskip({"adk": "google.adk", "langgraph": "langgraph"}[framework])
    project = bake_into(
        tmp_path / "baked", project_name=f"Eval {framework}", framework=framework, include_hitl="no"
    )

    done = _make_eval(project, tmp_path)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "gate label>=0.8: pass" in done.stderr
    [candidate] = json.loads((project / "out/eval/summary.json").read_text())["candidates"]
    assert candidate["metrics"]["label"]["n"] == 11
    assert candidate["metrics"]["label"]["mean"] >= 0.8
    assert "tool_error" not in json.dumps(candidate["dead_letters"])


def test_make_eval_fails_a_worse_agent_with_exit_1(tmp_path: Path) -> None:
    project = bake_into(tmp_path / "baked", project_name="Forgetful Desk", include_hitl="no")
    (tmp_path / "forgetful.py").write_text(FORGETFUL_AGENT)
    package = package_of(project)
    makefile = project / "Makefile"
    makefile.write_text(
        makefile.read_text().replace(f"'agent={package}.agent:agent?", "'agent=forgetful:agent?")
    )

    done = _make_eval(project, tmp_path)

    assert done.returncode != 0
    assert "gate label>=0.8: FAIL" in done.stderr
    summary = json.loads((project / "out/eval/summary.json").read_text())
    assert summary["passed"] is False
