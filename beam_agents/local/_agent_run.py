"""`run_agent`: one agent under `RunAgent` over a script, the shortest end-to-end run."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apache_beam.metrics.metric import MetricResults
from apache_beam.pvalue import PCollection

from beam_agents.config import AgentConfig
from beam_agents.local._run import run_locally
from beam_agents.local._script import Script
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.runtime.errors import ActivationError
from beam_agents.runtime.lifecycle import LifecycleEvent
from beam_agents.runtime.transform import RunAgent

__all__ = ["AgentRun", "run_agent"]


@dataclass
class AgentRun:
    """What one agent emitted over a script, each output in emission order, and the counters."""

    outputs: list[tuple[bytes, Any]]
    """`(key, bytes)`, or `(key, T)` under `run_agent(output_type=T)`."""
    errors: list[ActivationError]
    intents: list[ToolIntent]
    metrics: MetricResults
    lifecycle: list[LifecycleEvent] = field(default_factory=list)
    """Lifecycle records, when the run asked for them (`run_agent(lifecycle=True)`)."""


def run_agent(
    agent: Callable[..., Any],
    config: AgentConfig,
    script: Script,
    *,
    clock_ms: Callable[[], int] | None = None,
    options: Sequence[str] = (),
    lifecycle: bool = False,
    output_type: type | None = None,
) -> AgentRun:
    """Run `agent` under `RunAgent(agent, config)` over `script` and gather what it emitted.

    The shortest way to see an agent work end to end, with its TTL and
    approval timers: a project's tests and notebooks use it. `clock_ms`
    stands in for the processing-time clock of approval deadlines
    (`RunAgent(clock_ms=...)`); `lifecycle=True` also gathers `.lifecycle`;
    `output_type` types the outputs as `RunAgent(output_type=...)` does.
    """

    def build(events: PCollection[Any], answers: PCollection[Any]) -> Mapping[str, Any]:
        result = events | "RunAgent" >> RunAgent(
            agent,
            config,
            answers=answers,
            clock_ms=clock_ms,
            lifecycle=lifecycle,
            output_type=output_type,
        )
        outputs = {"outputs": result.outputs, "errors": result.errors, "intents": result.intents}
        if result.lifecycle is not None:
            outputs["lifecycle"] = result.lifecycle
        return outputs

    run = run_locally(script, build, options=options)
    return AgentRun(
        outputs=run.outputs["outputs"],
        errors=run.outputs["errors"],
        intents=run.outputs["intents"],
        metrics=run.metrics,
        lifecycle=run.outputs.get("lifecycle", []),
    )
