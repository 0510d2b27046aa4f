"""The LangGraph triage example runs offline with the command its README gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.adapters.conftest import require_langgraph

require_langgraph()

ROOT = Path(__file__).parents[2]


@pytest.mark.pipeline
def test_the_example_pages_checkout_after_its_approval_and_tickets_search() -> None:
    readme = (ROOT / "examples" / "langgraph_triage" / "README.md").read_text()
    assert ".venv/bin/python -m examples.langgraph_triage" in readme

    done = subprocess.run(
        [sys.executable, "-m", "examples.langgraph_triage"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    asked, checkout, search = done.stdout.splitlines()
    assert asked.startswith('asked checkout: {"calls":[{"args":{"reason":"down"')
    assert checkout == "checkout: done: paged the checkout on-call engineer: down"
    assert search == "search: ticket only: search: no page needed, a ticket is enough"
