"""Old import paths of modules that moved: each still imports, and offers the same objects.

A module's path is part of what users may have typed (`from
beam_agents.model.local_embedder import LocalEmbedder`), so a module that
moves into a sub-package keeps its old path. Rather than leave a file at
each old place (which would undo the folder the move made), one finder on
`sys.meta_path` answers the old names: it builds a module under the old
name holding the new module's names, so a class imported either way is the
same class.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Final, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

__all__ = ["MOVED", "install"]

MOVED: Final = {
    "beam_agents.model.embedder": "beam_agents.model.embedders.protocol",
    "beam_agents.model.embedder_spec": "beam_agents.model.embedders.spec",
    "beam_agents.model.fake_embedder": "beam_agents.model.embedders.fake",
    "beam_agents.model.gemini_embedder": "beam_agents.model.embedders.gemini",
    "beam_agents.model.local_embedder": "beam_agents.model.embedders.local",
    "beam_agents.model.openai_embedder": "beam_agents.model.embedders.openai_compat",
    "beam_agents.recall_command": "beam_agents.cli._recall",
    "beam_agents.row_display": "beam_agents.cli._row_display",
}
"""Old module path: the module it became."""


class _MovedModules:
    """Finds the old paths of `MOVED`; every other name is left to the usual finders.

    A finder and a loader by the methods the import system calls, not by
    `importlib.abc`'s base classes, whose import would cost the command a
    tenth of its start.
    """

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        """None: the import system makes the module under the old name."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", self))

    def exec_module(self, module: ModuleType) -> None:
        moved = importlib.import_module(MOVED[module.__name__])
        names = {name: value for name, value in vars(moved).items() if not name.startswith("__")}
        vars(module).update(names)
        module.__doc__ = f"Moved to `{moved.__name__}`: this path is kept so old imports work."
        vars(module)["__all__"] = list(getattr(moved, "__all__", ()))


_finder: Final = _MovedModules()


def install() -> None:
    """Answer the old paths from now on (idempotent: the package face calls it on import)."""
    if _finder not in sys.meta_path:
        sys.meta_path.append(_finder)
