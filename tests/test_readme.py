"""The README's quickstart, and its long-term variant, run as written."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

from beam_agents.memory.stores import open_store

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def test_readme_quickstart_runs(tmp_path: Path) -> None:
    (code,) = re.findall(r"## Quickstart\n\n```python\n(.*?)```", README, re.S)
    script = tmp_path / "quickstart.py"
    script.write_text(code)

    done = _run([sys.executable, str(script)], tmp_path)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "(b'db-3', b'page')" in done.stdout
    assert "(b'web-1', b'ignore')" in done.stdout
    assert "page_oncall" in done.stdout


def test_readme_longterm_quickstart_runs_and_saves(tmp_path: Path) -> None:
    """The long-term variant, from `beam.Create` (Beam's minimum timestamp), saves its rows."""
    section = README.partition("### With long-term memory\n")[2].partition("\n### ")[0]
    (command,) = re.findall(r"```sh\n\.venv/bin/(beam-agents .*?)\n```", section)
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    cli = [sys.executable, "-m", "beam_agents.cli", *command.split()[1:]]
    provisioned = _run(cli, tmp_path)
    assert provisioned.returncode == 0, provisioned.stderr
    (tmp_path / "longterm.py").write_text(code)

    done = _run([sys.executable, "longterm.py"], tmp_path)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "(b'db-3', b'page')" in done.stdout
    assert "ActivationError" not in done.stdout
    store = open_store(f"sqlite+aiosqlite:///{tmp_path / 'triage.db'}")

    async def rows() -> list[tuple[str, bytes, int]]:
        try:
            found = await store.search(b"db-3", "verdict/", 10)
        finally:
            await store.close()
        return [(r.key, r.value, r.updated_at_ms) for r in found]

    assert asyncio.run(rows()) == [("verdict/0001", b"page", 0)]


def test_readme_typed_decisions_example_groups_decisions_by_field(tmp_path: Path) -> None:
    section = README.partition("### Typed decisions\n")[2].partition("\n## ")[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    (tmp_path / "typed.py").write_text(code)

    done = _run([sys.executable, "typed.py"], tmp_path)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "Result(priority='p1', alerts=2)" in done.stdout
