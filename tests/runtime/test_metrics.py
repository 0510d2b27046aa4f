"""The per-activation metrics: held per bundle, handed to Beam whole, never twice."""

from __future__ import annotations

import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.metrics.metricbase import MetricName

from beam_agents import AgentConfig
from beam_agents.runtime._dofn import AgentDoFn
from beam_agents.runtime._metrics import _FLUSH_EVERY
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents
from tests.runtime.recording import recording_cells
from tests.step_metrics import step_metrics

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


def _timed(run: StreamRun) -> int:
    """How many activations `activation_micros` holds (committed)."""
    found = run.metrics.query(
        MetricsFilter().with_namespace(RUNTIME).with_name("activation_micros")
    )
    return sum(d.committed.count for d in found["distributions"])


def test_every_activation_of_a_long_bundle_is_counted_and_timed_once() -> None:
    """One bundle of more activations than the tally holds before handing them over."""
    events = _FLUSH_EVERY + 300
    script = Script().events(*((f"k{i % 7}", b"e%d" % i, 1_000 + i) for i in range(events)))

    run = run_script(agents.remember, AgentConfig(), script)

    assert len(run.outputs) == events
    assert run.counter(RUNTIME, "activations") == events
    assert _timed(run) == events


def test_a_failed_activation_is_counted_but_not_timed() -> None:
    script = Script().events(("k", b"ok", 1_000), ("k", b"boom", 2_000), ("k", b"ok", 3_000))

    run = run_script(agents.explode_on_boom, AgentConfig(), script)

    assert run.reasons() == ["activation_error"]
    assert run.counter(RUNTIME, "activations") == 3
    assert _timed(run) == 2


def test_a_retried_bundle_counts_its_activations_once() -> None:
    """The failed attempt's held figures are dropped, not added to the retry's."""
    script = Script().events(*(("k", b"e%d" % i, 1_000 * i) for i in range(1, 6)))

    with fail_commit_once(b"k", 3) as fault:
        run = run_script(agents.remember, AgentConfig(), script)

    assert fault.fired == [(b"k", 3)]
    assert len(run.outputs) == 5
    assert run.counter(RUNTIME, "activations") == 5
    assert _timed(run) == 5


def test_a_bundle_that_failed_hands_none_of_its_figures_to_the_next() -> None:
    """A runner that keeps the DoFn after a failed bundle starts the next one clean."""
    dofn = AgentDoFn(agents.remember, AgentConfig(), token="metrics")
    dofn.setup()
    try:
        activator = dofn._live_activator()
        activator.on_event(b"k", b"lost", 1_000, recording_cells())  # its bundle then fails
        with step_metrics() as container:
            dofn.start_bundle()
            activator.on_event(b"k", b"kept", 1_000, recording_cells())
            dofn.finish_bundle()
    finally:
        dofn.teardown()

    counted = container.get_counter(MetricName(RUNTIME, "activations")).get_cumulative()
    timed = container.get_distribution(MetricName(RUNTIME, "activation_micros"))
    assert (counted, timed.get_cumulative().count) == (1, 1)
