"""Composite transforms whose `expand` returns a result of several PCollections.

`RunAgent` and `ExecuteIntents` return a typed result object (outputs, errors,
intents, ...) so that a user's type checker knows each output. Beam reads an
`expand` return annotation as the element type of the transform's single
output, and from 2.78 logs a warning for anything that is not a PCollection,
which every run, CLI command and test would then print. The annotation is for
the type checker, so Beam is told to leave it alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from apache_beam.typehints.decorators import no_annotations

__all__ = ["several_outputs"]

_Expand = TypeVar("_Expand", bound=Callable[..., Any])


def several_outputs(expand: _Expand) -> _Expand:
    """Mark an `expand` whose annotation names a result object, not a PCollection."""
    marked: _Expand = no_annotations(expand)
    return marked
