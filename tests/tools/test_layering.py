"""The tools package sits below the runtime: the runtime calls tools, never the reverse."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import beam_agents.tools

TOOLS = Path(beam_agents.tools.__file__).parent


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, relative imports resolved, TYPE_CHECKING blocks included."""
    package = ".".join(path.relative_to(TOOLS.parent.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_no_tools_module_imports_the_runtime() -> None:
    offending = {
        str(path.relative_to(TOOLS)): sorted(
            name for name in _imported_modules(path) if name.startswith("beam_agents.runtime")
        )
        for path in sorted(TOOLS.rglob("*.py*"))
    }
    assert {path: names for path, names in offending.items() if names} == {}
    assert len(offending) > 10, "the scan found no tools modules"


def test_importing_every_tools_module_loads_no_runtime_module() -> None:
    modules = sorted(
        ".".join(path.relative_to(TOOLS.parent.parent).with_suffix("").parts)
        for path in TOOLS.rglob("*.py")
        if path.name != "__init__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('beam_agents.runtime')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
