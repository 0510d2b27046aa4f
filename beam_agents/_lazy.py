"""PEP 562 lazy public names, declared once in the package's `__init__.pyi`.

`beam_agents`, `beam_agents.memory` and `beam_agents.memory.stores` import
their public names on first access, so the `beam-agents` command never
imports Apache Beam. A lazy package needs its names written down where a
type checker can read them, and a type checker reads a stub: so the stub is
the one list. Its `from MODULE import NAME as NAME` lines say where each
public name lives, its annotated names are what the `__init__.py` defines
itself, and `lazy_exports` reads the same stub to build the package's
`__getattr__`, `__dir__` and `__all__`. Adding a public name is one line in
the stub.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_attribute", "lazy_exports"]


def lazy_attribute(
    package: str, table: dict[str, str], namespace: dict[str, object], name: str
) -> object:
    """Import `name` from the module `table` maps it to, and cache it in `namespace`."""
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value


def _stub_names(stub: Path) -> tuple[dict[str, str], list[str]]:
    """`(name -> defining module, names the package defines itself)` from a stub."""
    table: dict[str, str] = {}
    own: list[str] = []
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.asname == alias.name:  # the explicit re-export form
                    table[alias.name] = node.module
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            own.append(node.target.id)
    return table, own


def lazy_exports(
    package: str, init_file: str, namespace: dict[str, Any]
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """The `__getattr__`, `__dir__` and `__all__` of a package, from its `__init__.pyi`."""
    table, own = _stub_names(Path(init_file).with_suffix(".pyi"))
    exported = sorted([*table, *own])

    def get_attribute(name: str) -> object:
        return lazy_attribute(package, table, namespace, name)

    def list_names() -> list[str]:
        return sorted({*namespace, *exported})

    return get_attribute, list_names, exported
