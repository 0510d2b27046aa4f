"""The triage agent's typed path: a schema'd classification in, a `Decision` row out."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.portability.api import schema_pb2
from apache_beam.transforms import trigger, window
from apache_beam.transforms.combiners import CountCombineFn
from apache_beam.typehints import schemas

from app.triage.alerts import Alert
from app.triage.decision import Decision, decision_json
from app.triage.model import rules_llm
from app.triage.pipeline import triage
from app.triage.prompts import Classification, classify_request
from app.triage.records import error_json, output_json
from app.triage.replay import script
from beam_agents import LlmRequest, LlmResponse
from beam_agents.local import run_locally
from beam_agents.model import OutputInvalid, output_schema
from tests.app.triage_replays import _provision, slice_of

SERVICES = ("svc-002", "svc-003")
HOURS = 2.0
REFUSED_ALERT = "svc-003-0003"
"""The alert `old_format_rules` answers in the shape the agent read before it had a schema."""


@dataclass(frozen=True)
class OldFormatRules:
    """The rules model, except that one alert gets the pre-schema answer `{"class", "reason"}`.

    It keeps that answer when the runtime re-asks with the validation errors,
    as a model that cannot follow the schema would.
    """

    alert_id: str = REFUSED_ALERT

    def __call__(self) -> OldFormatRules:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        asked = [m for m in request.messages if isinstance(m, str) and m.startswith("Alert: ")]
        if asked and json.loads(asked[0].removeprefix("Alert: "))["alert_id"] == self.alert_id:
            body = b'{"class": "P2", "reason": "matched \'latency\'"}'
            return LlmResponse(body, "old-format", input_tokens=10, output_tokens=4)
        return await rules_llm.complete(request)

    async def aclose(self) -> None:
        """Nothing to release."""


old_format_rules = OldFormatRules()
"""Named by the provider spec `py:tests.app.test_triage_decisions:old_format_rules`."""


def _run(tmp_path: Path, model_spec: str, *, grouped: bool = False) -> dict[str, list[Any]]:
    """The slice through the triage pipeline; with `grouped`, its decisions grouped by priority."""
    uri = f"sqlite+aiosqlite:///{tmp_path / 'longterm.sqlite'}"
    asyncio.run(_provision(uri))
    alerts, answers = slice_of(SERVICES, HOURS)

    def build(events: Any, answered: Any) -> dict[str, Any]:
        result = triage(
            events, answered, model_spec=model_spec, longterm_uri=uri, replay=True, lifecycle=False
        )
        gathered = {"outputs": result.outputs, "errors": result.errors}
        if grouped:
            gathered["by_priority"] = (
                result.outputs
                | "Decisions" >> beam.Values()
                # One pane once every alert is in: the run's watermark passes the end of time.
                | "WhenAllAreIn"
                >> beam.WindowInto(
                    window.GlobalWindows(),
                    trigger=trigger.AfterWatermark(),
                    accumulation_mode=trigger.AccumulationMode.DISCARDING,
                )
                | "ByPriority"
                >> beam.GroupBy("priority").aggregate_field("alert_id", CountCombineFn(), "alerts")
            )
        return gathered

    return dict(run_locally(script(alerts, answers), build).outputs)


@pytest.fixture(scope="module")
def typed_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    return _run(tmp_path_factory.mktemp("typed"), "rules", grouped=True)


def test_a_triage_decision_reaches_the_outputs_as_a_decision_row_grouped_by_priority(
    typed_run: dict[str, list[Any]],
) -> None:
    """`beam.GroupBy("priority")` counts the typed outputs without parsing any of them."""
    outputs = typed_run["outputs"]
    assert outputs
    assert all(isinstance(decision, Decision) for _, decision in outputs)
    expected = Counter(decision.priority for _, decision in outputs)

    grouped = {row.priority: row.alerts for row in typed_run["by_priority"]}

    assert grouped == dict(expected)
    assert set(grouped) >= {"P2", "P3"}


def test_the_triage_outputs_carry_decisions_beam_schema() -> None:
    """The outputs' element type is `(bytes, row)`: Beam reads Decision's fields from it."""
    pipeline = beam.Pipeline()
    events = pipeline | beam.Create([("svc-000", b"{}")])
    result = triage(events, longterm_uri="memory://schema-only", lifecycle=False)

    row_type = result.outputs.element_type.tuple_types[1]
    schema = schemas.schema_from_element_type(row_type)
    types = {field.name: field.type for field in schema.fields}

    assert list(types) == list(Decision.model_fields)
    assert types["priority"].atomic_type == schema_pb2.STRING
    assert types["seq"].atomic_type == schema_pb2.INT64
    assert types["rehydrated"].atomic_type == schema_pb2.BOOLEAN
    assert types["recalled_scores"].nullable
    assert types["recalled_scores"].array_type.element_type.atomic_type == schema_pb2.DOUBLE


def test_an_output_line_is_the_decisions_json_as_the_outputs_always_carried_it() -> None:
    decision = Decision(
        service="svc-004",
        alert_id="svc-004-0004",
        priority="P3",
        decision="remembered",
        reason="known flap",
        note="",
        seq=4,
        event_time_ms=7,
        rehydrated=False,
        history="downgraded",
        recalled_keys=["history/svc-004-0002"],
        recalled_scores=[0.59],
    )

    line = output_json((b"svc-004", decision))

    assert line == decision_json(decision)
    assert json.loads(line) == {
        "service": "svc-004",
        "alert_id": "svc-004-0004",
        "class": "P3",
        "decision": "remembered",
        "reason": "known flap",
        "note": "",
        "seq": 4,
        "event_time_ms": 7,
        "rehydrated": False,
        "history": "downgraded",
        "recalled": [{"key": "history/svc-004-0002", "score": 0.59}],
    }
    assert Decision.model_validate_json(json.dumps(decision.model_dump(by_alias=True))) == decision


def test_a_decision_with_recall_fields_out_of_step_is_refused() -> None:
    with pytest.raises(ValueError, match="recalled_keys has 2 entries and recalled_scores 1"):
        Decision.model_validate(
            {
                "service": "s",
                "alert_id": "s-1",
                "class": "P2",
                "decision": "ticket",
                "reason": "",
                "note": "",
                "seq": 1,
                "event_time_ms": 1,
                "rehydrated": False,
                "history": "none",
                "recalled_keys": ["a", "b"],
                "recalled_scores": [0.5],
            }
        )


def test_an_answer_the_schema_refuses_dead_letters_that_alert_alone(
    typed_run: dict[str, list[Any]], tmp_path: Path
) -> None:
    """The pre-schema answer is re-asked once, then `output_invalid`; every other alert decides."""
    refused = _run(tmp_path, "py:tests.app.test_triage_decisions:old_format_rules")

    errors = [json.loads(error_json(error)) for error in refused["errors"]]
    invalid = [e for e in errors if e["reason"] == "output_invalid"]
    assert len(invalid) == 1
    assert json.loads(invalid[0]["payload"])["alert_id"] == REFUSED_ALERT
    assert "priority" in invalid[0]["detail"]
    assert '"class": "P2"' in invalid[0]["detail"]  # the raw answer, for the operator
    decided = {decision.alert_id for _, decision in refused["outputs"]}
    before = {decision.alert_id for _, decision in typed_run["outputs"]}
    assert REFUSED_ALERT in before
    assert decided == before - {REFUSED_ALERT}
    others = [e for e in errors if e["reason"] != "output_invalid"]
    assert others == [json.loads(error_json(error)) for error in typed_run["errors"]]


def _alert(alert_id: str = "svc-009-0001", message: str = "db: disk usage at 91%") -> Alert:
    return Alert.from_bytes(
        json.dumps(
            {
                "alert_id": alert_id,
                "event_time_ms": 1,
                "message": message,
                "service": "svc-009",
                "severity_hint": "warning",
            }
        ).encode()
    )


def test_the_rules_model_answers_a_classification_in_its_schema() -> None:
    request = classify_request(_alert(), None, [])

    answer = asyncio.run(rules_llm.complete(request))

    assert request.output_type is Classification
    assert output_schema(Classification).read(answer.response) == Classification(
        priority="P2", reason="matched 'disk usage'", history="none"
    )


def test_the_rules_model_answers_only_the_fields_the_requests_schema_names() -> None:
    """A schema without `history` gets no history: the answer is exactly the schema asked."""
    schema = {
        "type": "object",
        "properties": {"priority": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["priority", "reason"],
        "additionalProperties": False,
    }
    asked = classify_request(_alert(), None, [])
    request = LlmRequest(model_id=asked.model_id, messages=asked.messages, output_type=schema)

    answer = asyncio.run(rules_llm.complete(request))

    assert json.loads(answer.response) == {"priority": "P2", "reason": "matched 'disk usage'"}


def test_the_rules_model_answers_a_repair_of_its_classification() -> None:
    """A re-ask carries the answer and the errors after the alert: the alert is still found."""
    asked = classify_request(_alert(), None, [])
    repair = LlmRequest(
        model_id=asked.model_id,
        messages=[
            *asked.messages,
            {"role": "assistant", "content": "{}"},
            {"role": "user", "content": "That answer does not match the schema"},
        ],
        output_type=Classification,
    )

    answer = asyncio.run(rules_llm.complete(repair))

    assert output_schema(Classification).read(answer.response).priority == "P2"


def test_an_answer_outside_the_classification_schema_is_refused_naming_the_field() -> None:
    with pytest.raises(OutputInvalid) as refused:
        output_schema(Classification).read(b'{"priority": "P0", "reason": "", "history": "none"}')

    assert refused.value.errors == ("priority: Input should be 'P1', 'P2', 'P3' or 'noise'",)
