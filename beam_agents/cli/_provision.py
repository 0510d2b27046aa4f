"""`beam-agents provision`: what a store and its tool ledger need, created before any pipeline."""

from __future__ import annotations

from beam_agents.cli._store_args import UsageError, open_argument, parse_argument
from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores.uri import redact_uri, refuse_in_memory_sqlite

__all__ = ["provision"]


async def provision(uri: str) -> None:
    parsed = parse_argument("URI", uri)
    try:
        refuse_in_memory_sqlite(
            parsed, "provision would create its table in a database that vanishes when it exits"
        )
    except ConfigurationError as exc:
        raise UsageError(f"URI: {exc.problem}") from None
    async with open_argument("URI", parsed, must_exist=False) as store:
        await store.provision()
    # The tool ledger lives beside the store's rows and takes the same URI.
    from beam_agents.tools.ledger.factory import open_ledger

    async with open_ledger(parsed) as ledger:
        await ledger.provision()
    print(f"provisioned {redact_uri(uri)} (store and tool ledger)")
