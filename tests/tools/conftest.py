"""What the tool tests share: a provisioned SQLite tool ledger per test."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from beam_agents.tools import open_ledger


@pytest.fixture
def ledger_uri(tmp_path: Path) -> str:
    """A SQLite ledger, provisioned as `beam-agents provision` would, in the test's directory."""
    uri = f"sqlite+aiosqlite:///{tmp_path / 'ledger.db'}"

    async def provision() -> None:
        async with open_ledger(uri) as ledger:
            await ledger.provision()

    asyncio.run(provision())
    return uri
