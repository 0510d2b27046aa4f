"""Scorers: how well one candidate decided on one event, as a number in [0, 1] or None.

None means "not applicable" (the event has no label saying what to
expect), so an unlabelled event neither helps nor hurts a mean. An event
the candidate dead-lettered did not decide, and scores 0 wherever a label
applies. A field scorer reads a typed result (a candidate run with an
`output_type`) by field, by its Python or its JSON name, and a bytes
result as the JSON it holds. Trajectory modes are named as Google's ADK names them: `EXACT`
(the same calls, in order, nothing else), `IN_ORDER` (the expected calls
in order, others allowed between), `ANY_ORDER` (the expected calls in any
order, others allowed).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, runtime_checkable

from beam_agents.eval.errors import EvalInputError
from beam_agents.eval.events import Event
from beam_agents.eval.recording import RecordingProvider, recording_at
from beam_agents.eval.typed_values import read_expected, read_field
from beam_agents.model.messages import LlmRequest
from beam_agents.model.provider import ProviderFactory

__all__ = [
    "FieldMatch",
    "LlmJudge",
    "Sample",
    "Scorer",
    "TrajectoryMatch",
    "UserScorer",
]

TRAJECTORY_MODES: Final = ("EXACT", "IN_ORDER", "ANY_ORDER")
TRAJECTORY_KINDS: Final = ("intents", "tool_calls")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Sample:
    """One candidate's run of one event, with its label: what a scorer sees.

    `output` is the result as text (a typed result as its JSON),
    `output_json` that text parsed, and `value` the typed result itself: an
    instance of the candidate's `output_type`, None for a bytes result or
    a dead letter. `output_type` is the candidate's (None: bytes).
    `follow_ups` are the wakes the event started that ran, each as its
    results.jsonl entry (`name`, `due_ms`, `output`, `intents`, ...): a
    scorer of what a re-check decided reads them.
    """

    event: Event
    output: str | None
    output_json: Any
    intents: Sequence[Mapping[str, Any]]
    tool_calls: Sequence[Mapping[str, Any]]
    label: Mapping[str, Any] | None
    dead_letter: Mapping[str, str] | None = None
    value: Any = None
    output_type: type | None = None
    follow_ups: Sequence[Mapping[str, Any]] = ()

    def field_value(self, name: str) -> tuple[bool, Any]:
        """`(found, value)` of the result's field `name`, as JSON carries it.

        A typed result is read by field, under its Python name or its JSON
        name; a bytes result when it holds a JSON object.
        """
        return read_field(self.value, self.output_json, name)


@runtime_checkable
class Scorer(Protocol):
    """Scores every sample of one candidate; `name` is the metric's name.

    A scorer that needs something to run (a key, a service) may also have
    `check(recording)`: `run_eval` calls it before anything runs, so what
    is missing is a usage error then, not a failure after the replay. It
    is not part of the protocol: a scorer without it is not refused.
    """

    name: str

    def score_all(self, samples: Sequence[Sample], recording: str) -> list[float | None]:
        """One score per sample, in order; `recording` is where model calls are recorded."""
        ...


class _PerSample:
    name: str

    def score(self, sample: Sample) -> float | None:
        raise NotImplementedError

    def score_all(self, samples: Sequence[Sample], recording: str) -> list[float | None]:
        return [self.score(sample) for sample in samples]


@dataclass(frozen=True)
class FieldMatch(_PerSample):
    """1 when the result's `field` equals the label's `expected[field]`, else 0.

    The field of a typed result is read by name (`Sample.field_value`), of a
    bytes result from the JSON object it holds; a result without the field
    scores 0. A label written with a typed field's JSON name applies to the
    field's Python name too.
    """

    field: str
    name: str = ""

    def __post_init__(self) -> None:
        if type(self.field) is not str or not self.field:
            raise EvalInputError(f"FieldMatch.field must be a non-empty str, got {self.field!r}")
        object.__setattr__(self, "name", self.name or self.field)

    def score(self, sample: Sample) -> float | None:
        expected = (sample.label or {}).get("expected")
        if not isinstance(expected, Mapping):
            return None
        labelled, wanted = read_expected(expected, sample.output_type, self.field)
        if not labelled:
            return None
        found, actual = sample.field_value(self.field)
        if not found:
            return 0.0
        return 1.0 if actual == wanted else 0.0


def _matches(actual: Mapping[str, Any], expected: Mapping[str, Any], name_field: str) -> bool:
    if actual.get(name_field) != expected.get("tool", expected.get("name")):
        return False
    return "args" not in expected or actual.get("args") == expected["args"]


def _in_order(actual: Sequence[Mapping[str, Any]], expected: Sequence[Any], name: str) -> bool:
    position = 0
    for want in expected:
        while position < len(actual) and not _matches(actual[position], want, name):
            position += 1
        if position == len(actual):
            return False
        position += 1
    return True


def _any_order(actual: Sequence[Mapping[str, Any]], expected: Sequence[Any], name: str) -> bool:
    free = list(actual)
    for want in expected:
        hit = next((i for i, got in enumerate(free) if _matches(got, want, name)), None)
        if hit is None:
            return False
        del free[hit]
    return True


@dataclass(frozen=True)
class TrajectoryMatch(_PerSample):
    """Compares the calls made with the label's `expected_intents` / `expected_tool_calls`.

    An expected call is `{"tool": NAME}` and, when the label cares,
    `"args": {...}` (then the args must be equal too).
    """

    mode: Literal["EXACT", "IN_ORDER", "ANY_ORDER"] = "EXACT"
    kind: Literal["intents", "tool_calls"] = "intents"
    name: str = ""

    def __post_init__(self) -> None:
        if self.mode not in TRAJECTORY_MODES:
            raise EvalInputError(
                f"TrajectoryMatch.mode must be one of {', '.join(TRAJECTORY_MODES)}, "
                f"got {self.mode!r}"
            )
        if self.kind not in TRAJECTORY_KINDS:
            raise EvalInputError(
                f"TrajectoryMatch.kind must be intents or tool_calls, got {self.kind!r}"
            )
        object.__setattr__(self, "name", self.name or f"{self.kind}_{self.mode.lower()}")

    def score(self, sample: Sample) -> float | None:
        expected = (sample.label or {}).get(f"expected_{self.kind}")
        if not isinstance(expected, list):
            return None
        if sample.dead_letter is not None:
            return 0.0
        if self.kind == "intents":
            actual, name = sample.intents, "tool"
        else:
            actual, name = sample.tool_calls, "name"
        if self.mode == "EXACT":
            ok = len(actual) == len(expected) and all(
                _matches(got, want, name) for got, want in zip(actual, expected, strict=True)
            )
        elif self.mode == "IN_ORDER":
            ok = _in_order(actual, expected, name)
        else:
            ok = _any_order(actual, expected, name)
        return 1.0 if ok else 0.0


def _checked(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise EvalInputError(f"scorer {name!r} returned {value!r}; a score is in [0, 1] or None")
    return float(value)


@dataclass(frozen=True)
class UserScorer(_PerSample):
    """Your own rule: `fn(event, output, intents, label) -> float | bool | None`.

    `output` is the typed result itself when the candidate has an
    `output_type` (its fields read by name), else the parsed JSON output
    when it parses, else the text (None when the event was dead-lettered).
    """

    fn: Callable[[Event, Any, Sequence[Mapping[str, Any]], Mapping[str, Any] | None], object]
    name: str = "user"

    def score(self, sample: Sample) -> float | None:
        output = sample.value
        if output is None:
            output = sample.output_json if sample.output_json is not None else sample.output
        return _checked(self.name, self.fn(sample.event, output, sample.intents, sample.label))


_JUDGE_INSTRUCTIONS: Final = (
    "You grade one decision of an agent against the rubric below. Answer with JSON "
    '{"score": S, "reason": "..."} where S is a number from 0 (fails the rubric) to 1 '
    "(meets it fully).\n\nRubric:\n"
)


@dataclass(frozen=True)
class LlmJudge:
    """A model grades each output against `rubric`; its calls are recorded like the agent's.

    `provider` is a model spec (`provider_from_spec`) or a provider factory.
    A dead-lettered event scores 0 without asking; an answer with no score
    in [0, 1] scores None.
    """

    provider: str | ProviderFactory
    rubric: str
    name: str = "judge"
    model_id: str = "judge"
    concurrency: int = 8
    _factory: ProviderFactory = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if type(self.rubric) is not str or not self.rubric.strip():
            raise EvalInputError("LlmJudge.rubric must be a non-empty str")
        if isinstance(self.provider, str):
            from beam_agents.model.spec import provider_from_spec

            factory = provider_from_spec(self.provider)
        elif callable(self.provider):
            factory = self.provider
        else:
            raise EvalInputError("LlmJudge.provider must be a model spec or a provider factory")
        object.__setattr__(self, "_factory", factory)

    def request(self, sample: Sample) -> LlmRequest:
        """What the judge is asked about one sample (canonical, so it records)."""
        subject = {
            "event": sample.event.payload.decode("utf-8", "replace"),
            "output": sample.output,
            "intents": list(sample.intents),
            "label": sample.label,
        }
        return LlmRequest(
            model_id=self.model_id,
            messages=[
                self._instructions(),
                {"role": "user", "content": json.dumps(subject, sort_keys=True)},
            ],
        )

    def _instructions(self) -> dict[str, str]:
        return {"role": "system", "content": _JUDGE_INSTRUCTIONS + self.rubric}

    def check(self, recording: str) -> None:
        """Refuse a judge whose model could not be asked: its key's variable is unset here.

        Only a judge the recording has never answered is sure to ask its
        model; one it has answered may be a rerun that asks nothing, which
        needs no key (a new request would then fail after the replay).
        """
        variable = _unset_key_variable(self._factory)
        if variable is None:
            return
        instructions = self._instructions()
        for entry in recording_at(recording).model_entries():
            request = entry["request"]
            if request["model_id"] == self.model_id and request["messages"][:1] == [instructions]:
                return
        raise EvalInputError(
            f"scorer {self.name!r}: environment variable {variable} is not set; its model "
            "needs the key, and the recording holds none of this judge's answers"
        )

    def score_all(self, samples: Sequence[Sample], recording: str) -> list[float | None]:
        return asyncio.run(self._score_all(samples, recording))

    async def _score_all(self, samples: Sequence[Sample], recording: str) -> list[float | None]:
        provider = RecordingProvider(recording, self._factory, f"judge:{self.name}")()
        gate = asyncio.Semaphore(self.concurrency)

        async def one(sample: Sample) -> float | None:
            if sample.dead_letter is not None or sample.output is None:
                return 0.0
            async with gate:
                response = await provider.complete(self.request(sample))
            return parse_score(response.response)

        try:
            return list(await asyncio.gather(*(one(sample) for sample in samples)))
        finally:
            await provider.aclose()


def _unset_key_variable(factory: object) -> str | None:
    """The environment variable a spec's provider reads its key from, if it is unset here.

    Only a model spec's own provider (`openai:`, `gemini:`) names its key's
    variable without being built; a key in Secret Manager or Vertex AI's
    credentials cannot be looked up offline, and a user's factory is
    theirs to check.
    """
    from beam_agents.model.spec import SpecFactory

    if not isinstance(factory, SpecFactory):
        return None
    variable = factory.key_variable()
    if variable is None or os.environ.get(variable, "").strip():
        return None
    return variable


def parse_score(answer: bytes) -> float | None:
    """The score in a judge's answer: `{"score": S}`, a bare number, or the first number."""
    text = answer.decode("utf-8", "replace").strip()
    value: object = None
    try:
        parsed = json.loads(text)
        value = parsed.get("score") if isinstance(parsed, dict) else parsed
    except json.JSONDecodeError:
        found = _NUMBER.search(text)
        value = float(found.group()) if found else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0.0 <= value <= 1.0 else None
