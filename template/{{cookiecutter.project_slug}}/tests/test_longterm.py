{%- set backend = cookiecutter.longterm_backend -%}
{%- set fixture = {"sqlite": "tmp_path", "postgres": "postgres_database_url", "redis": "redis_store_uri", "bigtable": "bigtable_store_uri", "firestore": "firestore_store_uri"}.get(backend, "tmp_path") -%}
"""Decisions reach a real {{ backend }} store{% if backend != "sqlite" %}, started by beam-agents' pytest fixtures{% endif %}."""

from __future__ import annotations

import asyncio
import json
{%- if backend == "sqlite" %}
from pathlib import Path
{%- endif %}

from beam_agents.local import Script, run_agent
from beam_agents.memory.stores import MemoryRecord, open_store
{%- if cookiecutter.framework != "plain" %}
from beam_agents.tools import open_ledger
{%- endif %}

from {{ cookiecutter.package_name }}.agent import Decision, agent, decision_json
from {{ cookiecutter.package_name }}.graph import SCRIPTED_MODEL, config


async def _provision(uri: str) -> None:
    """Create what the store needs (idempotent): nothing is created at run time."""
    store = open_store(uri)
    try:
        await store.provision()
    finally:
        await store.close()
{%- if cookiecutter.framework != "plain" %}
    async with open_ledger(uri) as ledger:  # where the agent's tools run once
        await ledger.provision()
{%- endif %}


async def _decisions(uri: str, entity: bytes) -> list[MemoryRecord]:
    store = open_store(uri)
    try:
        return await store.search(entity, "decision/", 100)
    finally:
        await store.close()


def test_each_decision_is_saved_to_the_longterm_store({{ fixture }}: {% if backend == "sqlite" %}Path{% else %}str{% endif %}) -> None:
{%- if backend == "sqlite" %}
    uri = f"sqlite+aiosqlite:///{tmp_path / 'longterm.sqlite'}"
{%- else %}
    uri = {{ fixture }}
{%- endif %}
    asyncio.run(_provision(uri))
    script = Script().events(
        ("acct-1", b"question: how do I close my account?", 1_000),
        ("acct-2", b"newsletter opened", 2_000),
        ("acct-1", b"ok", 3_000),
    )

    run = run_agent(agent, config(SCRIPTED_MODEL, uri), script, output_type=Decision)

    assert run.errors == []
    saved = asyncio.run(_decisions(uri, b"acct-1"))
    assert [json.loads(record.value)["label"] for record in saved] == ["reply", "reply"]
    outputs = sorted(decision_json(decision) for key, decision in run.outputs if key == b"acct-1")
    assert sorted(record.value for record in saved) == outputs
    assert [json.loads(r.value)["label"] for r in asyncio.run(_decisions(uri, b"acct-2"))] == [
        "ignore"
    ]
