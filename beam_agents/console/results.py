"""An agent's results as a person reads them: one row per field, its name and its value.

A typed agent's result is a record with named fields (its pipeline writes
each as one JSON object on the outputs); the entity page shows it as those
fields rather than as the line it arrived in. A field holding an object
shows as the object's own fields, named by their path (`decision.priority`),
so a nested decision reads the same way; a list, or an object nested
deeper than `MAX_DEPTH`, shows as compact JSON. Every value is text for the
template, which escapes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["MAX_DEPTH", "MAX_FIELDS", "ResultField", "result_fields"]

MAX_DEPTH: Final = 3
"""Objects nested this deep show as JSON: past it, the path names say less than the JSON."""
MAX_FIELDS: Final = 100
"""Rows shown per result; the rest are counted in one last row."""


@dataclass(frozen=True, slots=True)
class ResultField:
    """One row of a result: the field's name (its path), its value as text, and how to show it."""

    name: str
    text: str
    json: bool
    """The value is JSON (a list, a deep object): shown as code, not as a word."""


def result_fields(record: Mapping[str, Any]) -> list[ResultField]:
    """The rows of one result record, in the order its fields were written."""
    rows = list(_fields(record, "", 0))
    if len(rows) > MAX_FIELDS:
        hidden = len(rows) - MAX_FIELDS
        rows = [*rows[:MAX_FIELDS], ResultField("…", f"{hidden} more fields", json=False)]
    return rows


def _fields(record: Mapping[str, Any], prefix: str, depth: int) -> Iterator[ResultField]:
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and depth + 1 < MAX_DEPTH:
            yield from _fields(value, f"{name}.", depth + 1)
        else:
            yield _field(name, value)


def _field(name: str, value: Any) -> ResultField:
    if isinstance(value, str):
        return ResultField(name, value, json=False)
    text = json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    return ResultField(name, text, json=isinstance(value, list | Mapping))
