"""The store URIs and entity keys of a command line, checked as the arguments that gave them.

A problem names the argument (`URI`, `FROM`, `TO`, `STORE`), not
`AgentConfig`, because on a command line that is what the operator typed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.memory.stores.errors import StoreNotProvisionedError
from beam_agents.memory.stores.uri import StoreURI, parse_store_uri

if TYPE_CHECKING:
    from beam_agents.memory.stores.base import MemoryStore

__all__ = ["UsageError", "entity_key_of", "open_argument", "parse_argument"]


class UsageError(BeamAgentsError):
    """A command line that parses but cannot be acted on (exit status 2)."""


def parse_argument(argument: str, uri: str) -> StoreURI:
    """Validate a URI argument; a problem names the argument, not `AgentConfig`."""
    try:
        return parse_store_uri(uri)
    except ConfigurationError as exc:
        raise UsageError(f"{argument}: {exc.problem}") from None


def open_argument(argument: str, parsed: StoreURI, *, must_exist: bool) -> MemoryStore:
    """Open a store; with `must_exist`, a SQLite file that is not there is an error.

    SQLite creates a missing database file on connect: a typo in a path given
    to `inspect` or `migrate-store` would otherwise leave an empty file behind
    and report "no rows" or "not provisioned" about the wrong thing.
    """
    from beam_agents.memory.stores.factory import open_store

    missing = parsed.dialect == "sqlite" and parsed.path and not Path(parsed.path).is_file()
    if must_exist and missing:
        raise StoreNotProvisionedError(
            f"{argument}: no SQLite database at {parsed.path!r} (nothing was created); "
            f"check the path, or create it with `beam-agents provision {parsed.redacted}`"
        )
    try:
        return open_store(parsed)
    except ConfigurationError as exc:
        raise UsageError(f"{argument}: {exc.problem}") from None


def entity_key_of(text: str | None, hex_text: str | None) -> bytes:
    """The key `--entity` (UTF-8 text) or `--entity-hex` (its bytes) names."""
    if hex_text is None:
        return (text or "").encode("utf-8")
    try:
        return bytes.fromhex(hex_text)
    except ValueError:
        raise UsageError(f"--entity-hex is not hex: {hex_text!r}") from None
