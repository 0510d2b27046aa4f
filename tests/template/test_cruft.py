"""A fresh bake records its template, so `cruft check` passes and `cruft update` can work."""

from __future__ import annotations

import json
import subprocess
import sys

from baking import CHECKOUT
from conftest import Bake


def test_cruft_check_passes_on_a_fresh_bake(bake: Bake) -> None:
    project = bake()
    state = json.loads((project / ".cruft.json").read_text())
    head = subprocess.run(
        ["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert (state["template"], state["directory"], state["commit"]) == (
        str(CHECKOUT),
        "template",
        head,
    )
    assert state["context"]["cookiecutter"]["longterm_backend"] == "sqlite"

    result = subprocess.run(
        [sys.executable, "-m", "cruft", "check"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "up to date" in result.stdout
