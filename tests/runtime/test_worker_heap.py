"""While a RunAgent is set up, the heap its process held is frozen out of the collector.

Each test runs its pipeline in an interpreter of its own, whose collector
no earlier pipeline of the suite has touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from beam_agents.runtime._heap import OPT_OUT_ENV

pytestmark = pytest.mark.pipeline

_ROOT = Path(__file__).resolve().parents[2]

_WORKER = """
import gc, json
import apache_beam as beam
from apache_beam.metrics.metric import Metrics, MetricsFilter
from beam_agents import AgentConfig, RunAgent
from tests.runtime import agents

def seen(_):
    Metrics.distribution("heap", "frozen").update(gc.get_freeze_count())
    Metrics.distribution("heap", "walked").update(len(gc.get_objects()))

before = gc.get_freeze_count()
pipeline = beam.Pipeline()
events = pipeline | beam.Create([(b"k1", b"a"), (b"k2", b"b"), (b"k1", b"c")])
first = events | "first" >> RunAgent(agents.remember, AgentConfig())
first.outputs | "seen" >> beam.Map(seen)
events | "second" >> RunAgent(agents.remember, AgentConfig())
result = pipeline.run()
result.wait_until_finish()
found = result.metrics().query(MetricsFilter().with_namespace("heap"))["distributions"]
during = {d.key.metric.name: d.committed for d in found}
print(json.dumps({
    "before": before,
    "frozen_min": during["frozen"].min,
    "frozen_max": during["frozen"].max,
    "walked_max": during["walked"].max,
    "after": gc.get_freeze_count(),
    "tracked_after": len(gc.get_objects()),
}))
"""


def _worker(**env: str) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _WORKER],
        cwd=_ROOT,
        env={**os.environ, "PYTHONPATH": str(_ROOT), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    found: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_a_worker_s_heap_is_frozen_while_its_agents_run_and_given_back_after() -> None:
    heap = _worker()

    # Beam, the harness and the imports: far more than the run itself leaves tracked,
    # frozen once for both RunAgents (the second's setup found the freeze in effect).
    assert heap["frozen_min"] == heap["frozen_max"] > heap["before"] + 50_000
    assert heap["walked_max"] < heap["frozen_max"] // 2
    # The last teardown unfroze: a notebook's objects are collectable again (with them
    # the few hundred Python 3.12 freezes at startup: there is one frozen generation).
    assert heap["after"] == 0
    assert heap["tracked_after"] > 50_000


def test_a_worker_told_so_leaves_its_collector_as_python_set_it_up() -> None:
    heap = _worker(**{OPT_OUT_ENV: "0"})

    assert heap["frozen_max"] == heap["after"] == heap["before"]
    assert heap["walked_max"] > 50_000
