"""The shape the code keeps: short functions, few type escapes, imports that point down.

Each is a rule a review found broken once and mended; these tests keep it
mended, so the next break is a red test rather than the next review's list.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
MAX_FUNCTION_LINES = 60
MAX_TYPE_IGNORES = 40


def _sources(*folders: str) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """The modules `path` imports at run time (imports only a type checker reads are left out)."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(child) for child in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_no_function_in_the_package_or_the_app_runs_over_sixty_lines() -> None:
    long = []
    for path in _sources("beam_agents", "app"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert not long, "name the parts of: " + ", ".join(long)


def test_the_package_escapes_its_type_checker_at_most_forty_times() -> None:
    escapes = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _sources("beam_agents")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"#\s*type:\s*ignore", line)
    ]
    assert len(escapes) <= MAX_TYPE_IGNORES, "\n".join(escapes)


@pytest.mark.parametrize(
    ("lower", "never"),
    [
        ("beam_agents/model", "beam_agents.memory"),
        ("beam_agents/memory/stores", "beam_agents.memory.recall"),
        ("beam_agents/memory/stores", "beam_agents.memory.facade"),
        ("beam_agents/memory/stores", "beam_agents.memory.longterm"),
        ("beam_agents/memory", "beam_agents.runtime"),
        ("beam_agents/model", "beam_agents.runtime"),
    ],
)
def test_a_lower_package_never_imports_one_above_it(lower: str, never: str) -> None:
    upward = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _sources(lower)
        for name in sorted(_imports(path))
        if name == never or name.startswith(never + ".")
    ]
    assert not upward, "\n".join(upward)
