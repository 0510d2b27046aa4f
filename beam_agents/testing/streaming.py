"""Run an agent under RunAgent on the streaming DirectRunner, for tests.

Event-time TTL and processing-time HITL timers only mean something in
streaming mode, so agent tests belong there. A `Script` (from
`beam_agents.local`, re-exported here) says what arrives when; `run_script`
runs RunAgent over it with `beam_agents.local.run_locally` and hands back
everything the transform emitted plus the pipeline's metrics, with the
counters that run reads back intact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apache_beam.metrics.metric import MetricsFilter

from beam_agents.coders import encode_deterministic
from beam_agents.config import AgentConfig
from beam_agents.local import AgentRun, Script, run_agent
from beam_agents.runtime.agent import Agent

__all__ = ["Script", "StreamRun", "run_script"]


@dataclass
class StreamRun(AgentRun):
    """What one run emitted, in emission order, and its metrics."""

    def counter(self, namespace: str, name: str) -> int:
        """A committed counter's value (0 when it was never incremented)."""
        found = self.metrics.query(MetricsFilter().with_namespace(namespace).with_name(name))
        return sum(int(c.committed) for c in found["counters"])

    def fingerprint(
        self,
    ) -> tuple[list[tuple[bytes, bytes]], list[bytes], list[bytes], list[bytes]]:
        """Everything the run emitted, as sorted deterministic bytes.

        Two runs of one script with equal fingerprints emitted the same outputs,
        intents, errors and lifecycle records, byte for byte, each exactly as
        many times: what a retry-determinism check compares between a clean
        and a faulty run.
        """
        return (
            sorted(self.outputs),
            sorted(encode_deterministic(intent) for intent in self.intents),
            sorted(encode_deterministic(error.to_proto()) for error in self.errors),
            sorted(encode_deterministic(event.to_proto()) for event in self.lifecycle),
        )

    def kinds(self) -> list[str]:
        """The kinds of the lifecycle records, in order."""
        return [event.kind for event in self.lifecycle]

    def reasons(self) -> list[str]:
        """The reasons of the errors output, in order."""
        return [e.reason for e in self.errors]


def run_script(
    agent: Agent,
    config: AgentConfig,
    script: Script,
    *,
    clock_ms: Callable[[], int] | None = None,
    options: Sequence[str] = (),
    lifecycle: bool = False,
    output_type: type | None = None,
) -> StreamRun:
    """`beam_agents.local.run_agent`, with the comparisons tests make on what it emitted."""
    run = run_agent(
        agent,
        config,
        script,
        clock_ms=clock_ms,
        options=options,
        lifecycle=lifecycle,
        output_type=output_type,
    )
    return StreamRun(**vars(run))
