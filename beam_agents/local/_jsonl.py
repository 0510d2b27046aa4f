"""`read_jsonl`: recorded inputs, each record carrying the file and line it came from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from beam_agents.errors import BeamAgentsError

__all__ = ["InvalidLocalInputError", "read_jsonl"]


class InvalidLocalInputError(BeamAgentsError, ValueError):
    """A recorded input that cannot be replayed; the message names the file and line."""


def read_jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each non-blank line of a JSON-lines file as `("FILE:LINE", object)`.

    The location travels with the record so whoever checks its fields can say
    where a bad one is. A line that is not a JSON object raises
    `InvalidLocalInputError`.
    """
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise InvalidLocalInputError(f"{where}: not JSON ({exc})") from None
            except RecursionError:
                raise InvalidLocalInputError(f"{where}: JSON nested too deeply") from None
            if not isinstance(record, dict):
                raise InvalidLocalInputError(
                    f"{where}: expected a JSON object, got {type(record).__name__}"
                )
            yield where, record
