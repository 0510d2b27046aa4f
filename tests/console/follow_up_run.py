"""One real pipeline run whose lifecycle records carry follow-ups, written as the triage app does.

`tests.runtime.follow_up_agents.follow_up` schedules four wakes for svc-1
(one on the processing clock), then cancels one and replaces another; one
wake runs at seq 3, the processing-time one at seq 4, the replaced one at
seq 6. svc-2 schedules one wake, which runs at its seq 2. The console's and
the command line's tests read these records part-way (`through`) and whole.
"""

from __future__ import annotations

from pathlib import Path

from beam_agents import AgentConfig, LifecycleEvent
from beam_agents.testing.streaming import Script, run_script
from tests.runtime.follow_up_agents import command, follow_up

__all__ = ["MIN", "T0", "after", "follow_up_records", "through", "write_lifecycle"]

T0 = 1_796_025_686_000  # 2026-11-30 08:01:26 UTC
MIN = 60_000


def follow_up_records() -> list[LifecycleEvent]:
    """The run's lifecycle records, in the order the pipeline emitted them."""
    first = [
        {"name": "recheck", "after_ms": 30 * MIN},
        {"name": "escalate", "after_ms": 60 * MIN},
        {"name": "close", "after_ms": 24 * 60 * MIN},
        {"name": "page-again", "after_ms": 15 * MIN, "processing_time": True},
    ]
    later = command(schedule=[{"name": "close", "after_ms": 48 * 60 * MIN}], cancel=["escalate"])
    script = (
        Script()
        .events(("svc-1", command(schedule=first), T0))
        .events(("svc-2", command(schedule=[{"name": "recheck", "after_ms": 5 * MIN}]), T0))
        .events(("svc-1", later, T0 + 10 * MIN))
        .watermark(T0 + 40 * MIN)
        .processing_time(T0 + 20 * MIN)
        .events(("svc-1", command(), T0 + 45 * MIN))
    )
    run = run_script(follow_up, AgentConfig(), script, lifecycle=True, clock_ms=lambda: T0)
    assert run.errors == []
    return run.lifecycle


def write_lifecycle(run_dir: Path, records: list[LifecycleEvent]) -> Path:
    """Append the records to the run's `lifecycle.jsonl`, as the triage application writes them."""
    from app.triage.records import lifecycle_json

    path = run_dir / "lifecycle.jsonl"
    with path.open("ab") as handle:
        handle.writelines(lifecycle_json(record) + b"\n" for record in records)
    return path


def through(records: list[LifecycleEvent], seq: int, key: bytes = b"svc-1") -> list[LifecycleEvent]:
    """What had been emitted once `key` committed its activation at `seq` (others' too)."""
    last = max(i for i, r in enumerate(records) if r.entity_key == key and r.seq <= seq)
    return records[: last + 1]


def after(records: list[LifecycleEvent], seq: int, key: bytes = b"svc-1") -> list[LifecycleEvent]:
    """The rest of the records, after `through(records, seq, key)`."""
    return records[len(through(records, seq, key)) :]
