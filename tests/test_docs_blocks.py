"""Every Python block of the README and docs/ runs as written, unless marked a fragment.

The convention (docs/development.md): `<!-- fragment -->` on the line before
a block's fence marks a block that is not a whole program. Every other block
is run here as a script in an empty directory, with what it needs provided
by the test (an endpoint variable, a command the text says to run first).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
FRAGMENT = "<!-- fragment -->"
_FENCE = re.compile(r"(?m)^```python\n(.*?)^```", re.S)
PREPARE = {
    # The README's long-term quickstart says to provision the store first.
    "sqlite+aiosqlite:///triage.db": [
        ["beam-agents", "provision", "sqlite+aiosqlite:///triage.db"]
    ],
}
"""A string a block contains -> the commands its text says to run before it."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    fragment: bool

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    blocks = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for found in _FENCE.finditer(text):
            before = text[: found.start()].rstrip().splitlines()
            blocks.append(
                Block(
                    page=str(page.relative_to(ROOT)),
                    line=text.count("\n", 0, found.start()) + 1,
                    code=found.group(1),
                    fragment=bool(before) and before[-1].strip() == FRAGMENT,
                )
            )
    return blocks


BLOCKS = _blocks()
RUNNABLE = [b for b in BLOCKS if not b.fragment]


def test_the_docs_have_runnable_blocks_and_marked_fragments() -> None:
    """The collection itself: a broken fence regex would make the test below vacuous."""
    assert len(RUNNABLE) >= 10
    assert any(b.fragment for b in BLOCKS)
    assert {"docs/telemetry.md", "docs/runtime.md", "README.md"} <= {b.page for b in RUNNABLE}


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.name for b in RUNNABLE])
def test_every_unmarked_python_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "OTLP_ENDPOINT": "http://127.0.0.1:9/v1/traces",
    }
    for marker, commands in PREPARE.items():
        if marker in block.code:
            for command in commands:
                subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True)
    (tmp_path / "block.py").write_text(block.code, encoding="utf-8")

    done = subprocess.run(
        [sys.executable, "block.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, (
        f"{block.name} does not run as written; fix it, or mark it `{FRAGMENT}` if it is "
        f"not a whole program:\n{done.stderr[-3000:]}"
    )
