"""A local run whose long-term store it cannot use ends in one line, before any bundle runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores.preflight import StoreNotReadyError, check_local_store

REPO = Path(__file__).resolve().parents[1]


def _readme_block(title: str) -> str:
    """The first Python block after the README heading `title`."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index(title) :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, title
    return found.group(1)


def test_the_readme_long_term_quickstart_before_provision_is_one_line_and_exit_1(
    tmp_path: Path,
) -> None:
    script = tmp_path / "quickstart.py"
    script.write_text(_readme_block("### With long-term memory"), encoding="utf-8")

    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: long-term store sqlite+aiosqlite:///triage.db is not provisioned (nothing is "
        "created at runtime); create it once with: beam-agents provision "
        "'sqlite+aiosqlite:///triage.db'"
    ]
    assert not (tmp_path / "triage.db").exists()


def test_a_store_not_ready_is_a_configuration_error_callers_can_catch(tmp_path: Path) -> None:
    uri = f"sqlite+aiosqlite:///{tmp_path / 'missing.sqlite'}"

    with pytest.raises(ConfigurationError, match="beam-agents provision") as caught:
        check_local_store(uri)

    assert isinstance(caught.value, StoreNotReadyError)
    assert caught.value.field == "AgentConfig.longterm_memory"
