"""The triage application's inputs, for a fragment that applies its pipeline.

`<!-- fragment: triage -->`: the fragment runs inside `with beam.Pipeline() as p:` (the
default runner, in batch) with `events`, the first hour of the committed alerts as
timestamped `(service, alert JSON bytes)`, and `answers` None; the SQLite store it
names, `out/triage/longterm.sqlite`, is provisioned first, as `make demo` does.
"""

import asyncio
from pathlib import Path

import apache_beam as beam
from apache_beam.transforms.window import TimestampedValue

from app.triage.alerts import read_alerts
from app.triage.data import DATA_DIR
from beam_agents.memory.stores import open_store

STORE = "sqlite+aiosqlite:///out/triage/longterm.sqlite"


async def provision() -> None:
    async with open_store(STORE) as store:
        await store.provision()


Path("out/triage").mkdir(parents=True)
asyncio.run(provision())
alerts = read_alerts(DATA_DIR / "alerts.jsonl")
first_hour = [a for a in alerts if a.event_time_ms < alerts[0].event_time_ms + 3_600_000]
with beam.Pipeline() as p:
    events = p | beam.Create(
        [TimestampedValue((a.service, a.to_bytes()), a.event_time_ms / 1000) for a in first_hour]
    )
    answers = None
    # <fragment>
