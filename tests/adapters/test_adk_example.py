"""The ADK triage example runs offline with the one command its README gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.pipeline

ROOT = Path(__file__).resolve().parents[2]


def test_the_adk_triage_example_runs_and_pages_only_after_approval() -> None:
    done = subprocess.run(
        [sys.executable, "examples/adk_triage/run.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "output  checkout: checkout: paged the on-call (alert 1 of this session)" in lines
    assert any(line.endswith("(alert 2 of this session)") for line in lines)
    assert "approval checkout: page_oncall" in lines
    assert [line for line in lines if line.startswith("paged")] == ["paged   checkout"]
    assert not [line for line in lines if line.startswith("error")]
    assert "examples/adk_triage/run.py" in (ROOT / "examples/adk_triage/README.md").read_text()
