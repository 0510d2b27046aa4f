"""The triage replay gives the same files with calls parked as with every call in place."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from app.triage.alerts import read_alerts
from app.triage.data import DATA_DIR
from app.triage.model import rules_llm
from app.triage.replay import ReplayResult, replay
from app.triage.summary import count_rows, summarize
from beam_agents import LlmRequest
from tests.app.triage_replays import SCENARIO_HOURS, SCENARIOS, _dump, _provision, slice_of

pytestmark = pytest.mark.pipeline

SLOW_RULES = "py:tests.app.triage_replays:slow_rules"
LIFECYCLE_FIGURES = ("buffered", "lifecycle_by_kind", "cache_hits")
"""Summary figures parking adds to by design: the `parked` and `buffered`
records of a parked key, and the replays of a re-run's own earlier calls."""


def _replay(tmp_path: Path, name: str, inflight: int, model: str) -> dict[str, Any]:
    uri = f"sqlite+aiosqlite:///{tmp_path / name}.sqlite"
    asyncio.run(_provision(uri))
    alerts, answers = slice_of(SCENARIOS, SCENARIO_HOURS)
    result: ReplayResult = replay(
        alerts, answers, longterm_uri=uri, model_spec=model, max_inflight_calls=inflight
    )
    return {
        "outputs.jsonl": result.outputs,
        "intents.jsonl": result.intents,
        "errors.jsonl": result.errors,
        "lifecycle.jsonl": result.lifecycle,
        "summary.json": summarize(result, asyncio.run(count_rows(uri))),
        "longterm rows": asyncio.run(_dump(uri)),
        "parks": result.counter("beam_agents.runtime/parks"),
    }


def test_the_demo_writes_the_same_files_with_the_default_and_with_one_call_in_flight(
    tmp_path: Path,
) -> None:
    serial = _replay(tmp_path, "serial", 1, "rules")
    default = _replay(tmp_path, "default", 256, "rules")

    for name, content in serial.items():
        assert default[name] == content, name
    # The demo's rules answer without waiting: nothing parks, and nothing costs more,
    # by what the run counted (its summary, equal above, holds the model calls, cache
    # hits and tokens); how long either took is a benchmark's figure, not a test's.
    assert default["parks"] == 0
    assert default["summary.json"]["model_calls"] > 0


def test_a_model_that_waits_parks_and_the_triage_results_do_not_change(tmp_path: Path) -> None:
    serial = _replay(tmp_path, "slow-serial", 1, SLOW_RULES)
    parked = _replay(tmp_path, "slow-parked", 256, SLOW_RULES)

    assert parked["parks"] > 0
    for name in ("outputs.jsonl", "intents.jsonl", "errors.jsonl", "longterm rows"):
        assert parked[name] == serial[name], name
    figures = {k: v for k, v in serial["summary.json"].items() if k not in LIFECYCLE_FIGURES}
    assert {k: parked["summary.json"][k] for k in figures} == figures


PARK_RECORDS = ("parked", "buffered")
"""Lifecycle records only a key whose calls park writes: its park, and events waiting behind it."""


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    """Loopback only, on a free port."""
    return ("127.0.0.1", 0)


def _rules_over_http(request: Request) -> Response:
    """An OpenAI-compatible answer from the demo's rules, after a model's latency."""
    body = json.loads(request.get_data())
    asked_format = body.get("response_format") or {}
    schema = asked_format.get("json_schema", {}).get("schema")  # native structured output
    asked = LlmRequest(
        model_id=body["model"],
        messages=[m["content"] for m in body["messages"]],
        output_type=schema,
    )
    answer = asyncio.run(rules_llm.complete(asked))
    time.sleep(0.03)
    message = {"role": "assistant", "content": answer.response.decode()}
    return Response(
        json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": answer.input_tokens, "completion_tokens": 1},
            }
        ),
        content_type="application/json",
    )


def _all_services() -> tuple[str, ...]:
    return tuple(sorted({a.service for a in read_alerts(DATA_DIR / "alerts.jsonl")}))


def _without_parks(lifecycle: list[bytes]) -> list[dict[str, Any]]:
    """The lifecycle but what parking adds: its records, and `drained` on what waited behind."""
    records = [json.loads(line) for line in lifecycle]
    kept = [r for r in records if r["kind"] not in PARK_RECORDS]
    for record in kept:
        if record["kind"] == "activated" and record["detail"] == "drained":
            record["detail"] = ""
    return kept


def test_a_replay_whose_calls_overlap_across_steps_writes_what_one_call_at_a_time_writes(
    tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quarter hour of the demo (15 one-minute steps) against a model on loopback that waits."""
    monkeypatch.setenv("TRIAGE_TEST_KEY", "not-a-secret")
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(_rules_over_http)
    spec = (
        f"openai:triage-rules?base_url={httpserver.url_for('/v1')}"
        "&api_key_env=TRIAGE_TEST_KEY&max_retries=0"
    )
    alerts, answers = slice_of(_all_services(), 0.25)
    runs = {}
    for inflight in (1, 256):
        uri = f"sqlite+aiosqlite:///{tmp_path / str(inflight)}.sqlite"
        asyncio.run(_provision(uri))
        result = replay(
            alerts, answers, longterm_uri=uri, model_spec=spec, max_inflight_calls=inflight
        )
        runs[inflight] = (result, summarize(result, asyncio.run(count_rows(uri))))
    (serial, serial_summary), (overlapped, overlapped_summary) = runs[1], runs[256]

    assert overlapped.counter("beam_agents.runtime/parks") > 0
    assert len({json.loads(line)["service"] for line in serial.outputs}) > 1
    for name in ("outputs", "intents", "errors"):
        assert getattr(overlapped, name) == getattr(serial, name), name
    assert _without_parks(overlapped.lifecycle) == _without_parks(serial.lifecycle)
    figures = {k: v for k, v in serial_summary.items() if k not in LIFECYCLE_FIGURES}
    assert {k: overlapped_summary[k] for k in figures} == figures
