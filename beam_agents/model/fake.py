"""FakeLLM: a deterministic scripted provider for tests and the offline demo.

Pipelines pickle their DoFns and build providers on the workers, so a test
cannot hold the provider instance it wants to inspect. FakeLLM therefore
keeps its call log in a process-wide registry under its `name`: the test and
every DoFn instance in the same process (the DirectRunner) see one log.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from beam_agents.errors import BeamAgentsError
from beam_agents.model._call_log import CallLog, Step
from beam_agents.model.messages import LlmRequest, LlmResponse, canonical_request_bytes

__all__ = ["FakeLLM", "FakeLLMError", "Rule"]

_log: CallLog[LlmRequest] = CallLog()


class FakeLLMError(BeamAgentsError):
    """A failure FakeLLM was scripted to raise."""


@dataclass(frozen=True, slots=True)
class Rule:
    """Answer `response` when `pattern` (a regex) matches the request's canonical JSON.

    `{n}` in the response is replaced by the 1-based count of calls so far,
    which lets a script tell repeated calls apart.
    """

    pattern: str
    response: bytes


@dataclass(frozen=True)
class FakeLLM:
    """A scripted provider: the first matching rule answers, else `default`.

    A structured request (`LlmRequest.output_type`) that no rule matches is
    answered with `default` only when `default` is a valid value of the
    type; otherwise with the smallest value the type's JSON Schema accepts,
    as canonical JSON: the first `enum`/`const` value, `""` for a string,
    0 for a number, `false`, `[]`, an object holding only its required
    properties (`$ref`s resolved, the first branch of an `anyOf`). So a
    pipeline asking for a type runs without a rule per schema, and the same
    request always gets the same answer. A matching rule still answers as
    written, valid or not: that is how a test scripts an invalid answer.

    - `latency_s` sleeps (asynchronously) before answering.
    - `fail_first` raises `FakeLLMError` on the first N calls (counted per name).
    - `fail_pattern` raises on every request matching the regex.
    - `keep_calls=False` keeps no call log: a long-running demo would grow
      it without bound. `{n}` and `fail_first` then see a count of 0.
    - `calls_wait=True` says every call waits, as a model over the network
      does: a parking RunAgent parks its first call too, instead of running
      it in place to learn that calls wait (a benchmark standing for a
      served model; see `beam_agents.model.spec.on_network`).
    It is its own factory: `AgentConfig(provider_factory=FakeLLM(...))` is a
    picklable zero-argument callable returning the provider.
    """

    rules: Sequence[Rule] = ()
    default: bytes = b"ok"
    name: str = "fake"
    model_id: str = "fake-1"
    latency_s: float = 0.0
    fail_first: int = 0
    fail_pattern: str | None = None
    keep_calls: bool = True
    calls_wait: bool = False
    _compiled: tuple[tuple[re.Pattern[str], bytes], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        compiled = tuple((re.compile(rule.pattern), rule.response) for rule in self.rules)
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "rules", tuple(self.rules))

    def __call__(self) -> FakeLLM:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer from the script, after the configured latency and failures."""
        text = canonical_request_bytes(request).decode("utf-8")
        count = _log.record(self.name, request) if self.keep_calls else 0
        try:
            return await self._answer(text, count, request.output_type)
        finally:
            if count:
                _log.end(self.name, count)

    async def _answer(self, text: str, count: int, output_type: object) -> LlmResponse:
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        if 0 < count <= self.fail_first:
            raise FakeLLMError(f"scripted failure {count} of {self.fail_first}")
        if self.fail_pattern is not None and re.search(self.fail_pattern, text):
            raise FakeLLMError(f"scripted failure: request matches {self.fail_pattern!r}")
        response = self._scripted(text, count, output_type)
        return LlmResponse(
            response=response,
            model_id=self.model_id,
            input_tokens=len(text) // 4,
            output_tokens=len(response) // 4,
        )

    def _scripted(self, text: str, count: int, output_type: object) -> bytes:
        """The first matching rule's answer, else the default (or, for a type, a valid value)."""
        for pattern, answer in self._compiled:
            if pattern.search(text):
                return answer.replace(b"{n}", str(count).encode())
        default = self.default.replace(b"{n}", str(count).encode())
        if output_type is None:
            return default
        return _valid_or_minimal(default, output_type)

    async def aclose(self) -> None:
        """A script holds nothing to release."""

    def calls(self) -> list[LlmRequest]:
        """Every request this script's name has received in this process."""
        return _log.calls(self.name)

    def call_count(self) -> int:
        """How many requests this script's name has received in this process."""
        return _log.count(self.name)

    def call_steps(self) -> list[Step]:
        """This name's call starts and ends in the order they happened, in this process.

        `("start", n)` and `("end", n)`, `n` the call's 1-based number: what a
        provider sees of concurrency, so a test can prove calls overlapped
        without timing them.
        """
        return _log.steps(self.name)

    def peak_in_flight(self) -> int:
        """The most of this name's calls that were waiting at once in this process."""
        return _log.peak_in_flight(self.name)

    def reset(self) -> None:
        """Forget the call log (and so the `fail_first` count) of this name."""
        _log.reset(self.name)


def _valid_or_minimal(default: bytes, output_type: object) -> bytes:
    """`default` when it is a value of `output_type`, else the least value its schema accepts."""
    # Imported here: the schema machinery needs pydantic, which unstructured scripts never load.
    from beam_agents.model._minimal_value import minimal_value
    from beam_agents.model.errors import OutputInvalid
    from beam_agents.model.structured import output_schema

    schema = output_schema(output_type)
    try:
        schema.read(default)
    except OutputInvalid:
        value = minimal_value(schema.json_schema)
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")
    return default
