"""A typed agent on the FnApiRunner over a real provider, for the structured-output tests.

The agent asks its model for a `Triage` and completes with the validated
fields, so an output proves the answer validated; a dead letter carries
what did not. Outputs and dead letters are collected in this module: the
FnApiRunner runs the DoFns in this process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import apache_beam as beam
import pydantic
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, RunAgent
from beam_agents.model import provider_from_spec
from beam_agents.runtime.errors import ActivationError
from tests.model.exchange import KEY_ENV

SYSTEM = "You triage alerts."


class Triage(pydantic.BaseModel):
    """What the agent asks its model for."""

    priority: Literal["p1", "p2", "p3"]
    reason: str


TRIAGE_SCHEMA = Triage.model_json_schema()
GOOD = '{"priority": "p2", "reason": "disk filling"}'
WRONG = '{"priority": "urgent", "reason": 7}'


def triage_request(alert: str) -> LlmRequest:
    """The agent's structured request for one alert."""
    return LlmRequest(
        model_id="m",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": alert}],
        output_type=Triage,
    )


async def triage(ctx: ActivationContext) -> Complete:
    """Complete with the validated decision's fields."""
    answer = await ctx.call_model(triage_request(ctx.event.decode()))
    decision = answer.parsed
    if not isinstance(decision, Triage):
        raise TypeError(f"parsed is a {type(decision).__name__}, not a Triage")
    return Complete(f"{decision.priority}|{decision.reason}".encode())


@dataclass(frozen=True)
class TypedRun:
    """What a run emitted: outputs and dead letters, each sorted."""

    outputs: list[tuple[bytes, bytes]]
    errors: list[ActivationError]

    def reasons(self) -> list[str]:
        """The dead letters' reasons."""
        return [error.reason for error in self.errors]


_outputs: list[tuple[bytes, bytes]] = []
_errors: list[ActivationError] = []


def _keep_output(element: tuple[bytes, bytes]) -> None:
    _outputs.append(element)


def _keep_error(error: ActivationError) -> None:
    _errors.append(error)


def openai_spec(base_url: str, **options: Any) -> str:
    """An `openai:` spec for the loopback server, failing fast (no retries)."""
    extra = "".join(f"&{key}={value}" for key, value in options.items())
    return (
        f"openai:gpt-test?base_url={base_url}&api_key_env={KEY_ENV}&timeout_s=5&max_retries=0"
        + extra
    )


def gemini_spec(base_url: str) -> str:
    """A `gemini:` spec for the loopback server, failing fast (no retries)."""
    return f"gemini:gemini-test?base_url={base_url}&api_key_env={KEY_ENV}&timeout_s=5&max_retries=0"


def run_typed(spec: str, events: Sequence[tuple[str, str]]) -> TypedRun:
    """Run `triage` under RunAgent on the FnApiRunner over the provider `spec` names."""
    _outputs.clear()
    _errors.clear()
    config = AgentConfig(provider_factory=provider_from_spec(spec), activation_timeout_s=30.0)
    pipeline = beam.Pipeline(runner=FnApiRunner())
    created = pipeline | beam.Create([(key, alert.encode()) for key, alert in events])
    result = created | RunAgent(triage, config)
    result.outputs | "Outputs" >> beam.Map(_keep_output)
    result.errors | "Errors" >> beam.Map(_keep_error)
    pipeline.run().wait_until_finish()
    return TypedRun(sorted(_outputs), sorted(_errors, key=lambda e: (e.entity_key, e.detail)))
