"""Local runs: recorded events replayed on the streaming DirectRunner with production's timers."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.pvalue import PCollection

from beam_agents import AgentConfig, RunAgent, intent_id
from beam_agents.errors import ConfigurationError
from beam_agents.local import (
    EVENTS_COUNTER,
    InvalidLocalInputError,
    LocalRun,
    Script,
    read_jsonl,
    run_locally,
    stepped_script,
)
from beam_agents.model import FakeLLM
from tests.runtime import agents

MINUTE = 60_000


def _run_agent(script: Script, agent: Any, *, on_progress: Any = None, **config: int) -> LocalRun:
    """RunAgent with lifecycle records over `script`, every output gathered."""
    provider = FakeLLM(name="local", default=b"-")
    provider.reset()
    agent_config = AgentConfig(provider_factory=provider, **config)  # type: ignore[arg-type]

    def build(events: PCollection[Any], answers: PCollection[Any]) -> dict[str, Any]:
        result = events | RunAgent(
            agent, agent_config, answers=answers, lifecycle=True, clock_ms=agents.clock_at_zero
        )
        return {"outputs": result.outputs, "errors": result.errors, "lifecycle": result.lifecycle}

    return run_locally(script, build, on_progress=on_progress)


def _kinds(run: LocalRun, key: bytes) -> list[str]:
    return [e.kind for e in run.outputs["lifecycle"] if e.entity_key == key]


@pytest.mark.pipeline
def test_an_idle_key_expires_between_steps_before_its_next_event() -> None:
    """The watermark moves at every step, so an event-time TTL fires where it would live."""
    script = stepped_script(
        [("a", b"first", 0), ("b", b"filler", 3 * MINUTE), ("a", b"back", 10 * MINUTE)],
        step_ms=MINUTE,
        drain_ms=0,
    )

    run = _run_agent(script, agents.remember, ttl_ms=5 * MINUTE)

    assert run.outputs["outputs"][0] == (b"a", b"1:first")
    kinds = _kinds(run, b"a")
    assert kinds.index("ttl_expired") < kinds.index("activated", 1)
    assert (b"a", b"2:back") in run.outputs["outputs"]  # memory was wiped, seq kept counting


@pytest.mark.pipeline
def test_an_unanswered_approval_times_out_during_the_drain() -> None:
    """After the last step the processing-time clock moves on, so pending deadlines pass."""
    script = stepped_script([("k", b"ask now", 0)], step_ms=MINUTE, drain_ms=2 * MINUTE)

    run = _run_agent(script, agents.log_then_approve)

    assert [e.reason for e in run.outputs["errors"]] == ["suspension_timeout"]
    assert "suspended" in _kinds(run, b"k")


@pytest.mark.pipeline
def test_an_answer_in_a_later_step_resumes_the_suspension_it_answers() -> None:
    """Both clocks stop at the answer's step, short of the suspension's one-minute deadline."""
    script = stepped_script(
        [("k", b"ask now", 0)],
        [("k", intent_id(b"k", 1, 0), b"yes", 40_000)],
        step_ms=MINUTE // 2,
        drain_ms=2 * MINUTE,
    )

    run = _run_agent(script, agents.log_then_approve)

    assert run.outputs["errors"] == []
    assert run.outputs["outputs"] == [(b"k", b"1:-")]
    kinds = _kinds(run, b"k")
    assert kinds.index("suspended") < kinds.index("resumed") < kinds.index("completed")


@pytest.mark.pipeline
def test_counters_of_every_bundle_survive_a_run_of_many_steps() -> None:
    """The streaming DirectRunner would keep only each step's first bundle's updates."""
    events = [(f"key-{i % 7}", b"e%d" % i, i * MINUTE // 2) for i in range(60)]
    seen: list[int] = []

    run = _run_agent(
        stepped_script(events, step_ms=MINUTE, drain_ms=0), agents.remember, on_progress=seen.append
    )

    counters = run.counters()
    assert counters["/".join(EVENTS_COUNTER)] == run.events == len(events)
    assert counters["beam_agents.runtime/activations"] == len(events)
    assert len(run.outputs["outputs"]) == len(events)
    assert seen[-1] == len(events)
    assert seen == sorted(seen)  # progress never goes back


@pytest.mark.pipeline
def test_a_pipeline_failure_is_raised_to_the_caller() -> None:
    def explode(element: Any) -> Any:
        raise RuntimeError(f"cannot take {element!r}")

    def build(events: PCollection[Any], answers: PCollection[Any]) -> dict[str, Any]:
        return {"mapped": events | beam.Map(explode)}

    with pytest.raises(RuntimeError, match="cannot take"):
        run_locally(Script().events(("k", b"x", 0)), build, on_progress=lambda _: None)


@pytest.mark.parametrize(
    ("step_ms", "drain_ms", "field"),
    [(0, 0, "step_ms"), (1.5, 0, "step_ms"), (60_000, -1, "drain_ms")],
)
def test_stepped_script_names_a_step_or_drain_it_cannot_use(
    step_ms: Any, drain_ms: Any, field: str
) -> None:
    with pytest.raises(ConfigurationError, match=rf"stepped_script\.{field}"):
        stepped_script([("k", b"x", 0)], step_ms=step_ms, drain_ms=drain_ms)


def test_read_jsonl_names_the_file_and_line_of_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"key": "a", "time_ms": 1}\n\n[1, 2]\n')

    records = read_jsonl(path)

    assert next(records) == (f"{path}:1", {"key": "a", "time_ms": 1})
    with pytest.raises(InvalidLocalInputError, match=rf"{path}:3: expected a JSON object"):
        next(records)


def test_read_jsonl_refuses_a_line_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("{not json\n")

    with pytest.raises(InvalidLocalInputError, match=rf"{path}:1: not JSON"):
        list(read_jsonl(path))


def test_read_jsonl_refuses_a_line_nested_past_the_recursion_limit(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")

    with pytest.raises(InvalidLocalInputError, match=rf"{path}:1: JSON nested too deeply"):
        next(read_jsonl(path))


_lifecycle_calls: list[str] = []


class _CountsItsLifecycle(beam.DoFn):
    """Records each setup and teardown of its instances (module level: pickled by reference)."""

    def setup(self) -> None:
        _lifecycle_calls.append("setup")

    def process(self, element: Any) -> Any:
        yield element

    def teardown(self) -> None:
        _lifecycle_calls.append("teardown")


@pytest.mark.pipeline
def test_a_local_run_sets_each_dofn_up_once_for_all_its_bundles() -> None:
    """The DirectRunner alone would set it up and tear it down for each bundle (each step)."""
    _lifecycle_calls.clear()
    events = [(f"key-{i % 3}", b"e%d" % i, i * MINUTE) for i in range(12)]

    def build(events: PCollection[Any], answers: PCollection[Any]) -> dict[str, Any]:
        return {"seen": events | beam.ParDo(_CountsItsLifecycle())}

    run = run_locally(stepped_script(events, step_ms=MINUTE, drain_ms=0), build)

    assert len(run.outputs["seen"]) == len(events)
    assert _lifecycle_calls == ["setup", "teardown"]


class _SeesTheCollector(beam.DoFn):
    """Outputs how many objects the collector leaves alone while the element runs."""

    def process(self, element: Any) -> Any:
        yield gc.get_freeze_count()


@pytest.mark.pipeline
def test_a_local_run_spares_what_the_process_held_before_it_from_collection() -> None:
    """Held before the run, objects are frozen while it runs (no full collection walks them)
    and collectable again once it ends."""
    held = [[index] for index in range(1_000)]
    events = [("k", b"e", 0)]

    def build(events: PCollection[Any], answers: PCollection[Any]) -> dict[str, Any]:
        return {"frozen": events | beam.ParDo(_SeesTheCollector())}

    run = run_locally(stepped_script(events, step_ms=MINUTE, drain_ms=0), build)

    assert run.outputs["frozen"][0] > len(held)
    assert gc.get_freeze_count() == 0
