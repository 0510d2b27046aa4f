"""Every Python block of the README and docs/ runs: whole programs as written, fragments
inside the wrapper their page names.

The convention (docs/development.md): a block is a whole program and runs as a
script in an empty directory, with what it needs provided by the test (an
endpoint variable, a command the text says to run first, a file another block
of the page shows). `<!-- fragment: WRAPPER ARGS -->` on the line before a
block's fence marks a fragment: it runs put in place of the `# <fragment>`
line of `tests/docs_wrappers/WRAPPER.py`, the smallest real program around it,
with ARGS as the program's arguments.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from beam_agents.testing.pytest_plugin import service_unavailable

ROOT = Path(__file__).parents[1]
WRAPPERS = Path(__file__).with_name("docs_wrappers")
PLACE = "# <fragment>"
_FENCE = re.compile(r"(?m)^```python\n(.*?)^```", re.S)
_FRAGMENT = re.compile(r"<!-- fragment(?::\s*(?P<wrapper>[\w.-]+)(?P<args>(?:\s+[^\s>]+)*))?\s*-->")
_SHOWN_FILE = re.compile(r"\A# (?P<name>[\w.-]+\.py)\n")
PREPARE = {
    # The README's long-term quickstart says to provision the store first.
    "sqlite+aiosqlite:///triage.db": [
        ["beam-agents", "provision", "sqlite+aiosqlite:///triage.db"]
    ],
}
"""A string a block contains -> the commands its text says to run before it."""
EXTRAS = {"google.adk": "adk", "langgraph": "langgraph"}
"""A module a block imports -> the extra that installs it (`make adk`, `make langgraph`)."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    fragment: bool
    wrapper: str | None = None
    args: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def _block(page: Path, text: str, found: re.Match[str]) -> Block:
    before = text[: found.start()].rstrip().splitlines()
    marker = _FRAGMENT.fullmatch(before[-1].strip()) if before else None
    return Block(
        page=str(page.relative_to(ROOT)),
        line=text.count("\n", 0, found.start()) + 1,
        code=found.group(1),
        fragment=marker is not None,
        wrapper=marker["wrapper"] if marker else None,
        args=tuple(marker["args"].split()) if marker and marker["args"] else (),
    )


def _blocks() -> list[Block]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    blocks = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        blocks += [_block(page, text, found) for found in _FENCE.finditer(text)]
    return blocks


BLOCKS = _blocks()
RUNNABLE = [b for b in BLOCKS if not b.fragment]
FRAGMENTS = [b for b in BLOCKS if b.fragment]


def wrapped(block: Block) -> str:
    """The fragment in place of its wrapper's `# <fragment>` line, indented as that line."""
    wrapper = (WRAPPERS / f"{block.wrapper}.py").read_text(encoding="utf-8")
    lines = wrapper.splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if line.strip() == PLACE]
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    fragment = [indent + line if line.strip() else line for line in block.code.splitlines(True)]
    return "".join([*lines[:at], *fragment, *lines[at + 1 :]])


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def _run(block: Block, program: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `program` in `cwd` beside the files the block's page shows, as a user would."""
    extra = _extra_of(block)
    module = next((m for m, e in EXTRAS.items() if e == extra), None)
    if module is not None and not _installed(module):
        service_unavailable(f"{block.name} needs the {extra} extra: make {extra}")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "OTLP_ENDPOINT": "http://127.0.0.1:9/v1/traces",
    }
    for other in BLOCKS:
        shown = _SHOWN_FILE.match(other.code)
        if other.page == block.page and shown and other is not block:
            (cwd / shown["name"]).write_text(other.code, encoding="utf-8")
    for marker, commands in PREPARE.items():
        if marker in block.code:
            for command in commands:
                subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    (cwd / "block.py").write_text(program, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "block.py", *block.args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _extra_of(block: Block) -> str | None:
    """The extra a block's imports need (`make adk`, `make langgraph`), if any."""
    for module, extra in EXTRAS.items():
        if re.search(rf"(?m)^\s*(from|import) {re.escape(module)}\b", block.code):
            return extra
    return None


def _params(blocks: list[Block]) -> list[object]:
    """One case per block; one that needs a framework extra carries the `framework_extras`
    mark, so a check that installs no extras (.ci/newest.py) leaves it out by name."""
    return [
        pytest.param(
            block,
            id=block.name,
            marks=[pytest.mark.framework_extras] if _extra_of(block) else [],
        )
        for block in blocks
    ]


def test_the_docs_have_runnable_blocks_and_marked_fragments() -> None:
    """The collection itself: a broken fence regex would make the tests below vacuous."""
    assert len(RUNNABLE) >= 10
    assert len(FRAGMENTS) >= 10
    assert {"docs/telemetry.md", "docs/runtime.md", "README.md"} <= {b.page for b in RUNNABLE}
    assert "docs/lifecycle.md" in {b.page for b in FRAGMENTS}


def test_every_fragment_names_a_wrapper_that_marks_one_place_for_it() -> None:
    """A bare `<!-- fragment -->` would be read, never run: each names where it runs."""
    unnamed = [b.name for b in FRAGMENTS if b.wrapper is None]
    missing = [
        b.name for b in FRAGMENTS if b.wrapper and not (WRAPPERS / f"{b.wrapper}.py").is_file()
    ]
    wrappers = sorted(WRAPPERS.glob("*.py"))
    places = {
        w.stem: [line.strip() for line in w.read_text(encoding="utf-8").splitlines()].count(PLACE)
        for w in wrappers
    }

    assert unnamed == []
    assert missing == []
    assert {name: count for name, count in places.items() if count != 1} == {}
    assert {b.wrapper for b in FRAGMENTS} == set(places), "a wrapper no page names"


def test_a_fragment_takes_the_indentation_of_its_place() -> None:
    block = Block("docs/x.md", 1, "x = await f()\n\nsave(x)\n", True, "agent_body")

    program = wrapped(block)

    assert "    x = await f()\n\n    save(x)\n    return Complete" in program


@pytest.mark.parametrize("block", _params(RUNNABLE))
def test_every_unmarked_python_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    done = _run(block, block.code, tmp_path)

    assert done.returncode == 0, (
        f"{block.name} does not run as written; fix it, or mark it "
        f"`<!-- fragment: WRAPPER -->` if it is not a whole program:\n{done.stderr[-3000:]}"
    )


@pytest.mark.parametrize("block", _params(FRAGMENTS))
def test_every_fragment_runs_in_the_wrapper_its_page_names(block: Block, tmp_path: Path) -> None:
    if block.wrapper is None:
        pytest.fail(f"{block.name} names no wrapper: mark it `<!-- fragment: WRAPPER -->`")
    done = _run(block, wrapped(block), tmp_path)

    assert done.returncode == 0, (
        f"{block.name} does not run in tests/docs_wrappers/{block.wrapper}.py:\n"
        f"{done.stderr[-3000:]}"
    )
