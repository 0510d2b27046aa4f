"""PEP 562 lazy public names, shared by every package with a lazy `__init__`.

`beam_agents`, `beam_agents.memory`, `beam_agents.memory.stores` and
`beam_agents.runtime` import their public names on first access, so the
`beam-agents` command never imports Apache Beam. The helper lives here, below
all of them, so that no subpackage imports its parent package to get it.
"""

from __future__ import annotations

import importlib

__all__ = ["lazy_attribute"]


def lazy_attribute(
    package: str, table: dict[str, str], namespace: dict[str, object], name: str
) -> object:
    """Import `name` from the module `table` maps it to, and cache it in `namespace`.

    Shared by every package with a lazy `__init__` (`beam_agents.memory`,
    `beam_agents.runtime`), so they all behave the same way.
    """
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
