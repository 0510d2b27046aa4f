"""An evaluation's recording keeps a structured request's schema and its answer's stop reason.

Replayed, a refused answer must still be a refusal: without its stop
reason it would be validated as text, and a refusal that happens to hold
JSON would pass where the live run failed.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from beam_agents.eval import RecordingError
from beam_agents.eval.recording import (
    RecordingProvider,
    recording_at,
    save_recording,
    unload_recording,
)
from beam_agents.model import provider_from_spec
from beam_agents.model.messages import STOP_REFUSED, LlmResponse
from tests.model.exchange import sent
from tests.model.test_structured_openai import PATH, chat_answer
from tests.model.typed_agent import openai_spec, triage_request


def test_a_refused_structured_answer_replays_from_the_file_as_a_refusal(
    httpserver: HTTPServer, secret_key: str, tmp_path: Path
) -> None:
    httpserver.expect_request(PATH).respond_with_json(chat_answer(None, refusal="I won't."))
    path = str(tmp_path / "recording.jsonl")
    inner = provider_from_spec(openai_spec(httpserver.url_for("/v1")))
    request = triage_request("disk 91% full")

    async def ask() -> LlmResponse:
        provider = RecordingProvider(path, inner, "run")()
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    live = asyncio.run(ask())
    save_recording(path)
    unload_recording(path)
    replayed = asyncio.run(ask())

    assert (live.response, live.stop_reason) == (b"I won't.", STOP_REFUSED)
    assert replayed == live
    assert len(sent(httpserver)) == 1
    (line,) = (json.loads(text) for text in Path(path).read_text().splitlines())
    assert line["stop_reason"] == STOP_REFUSED
    assert line["request"]["output_schema"]["name"] == "Triage"
    assert recording_at(path).model_entries() == [line]


REQUEST = {"model_id": "m", "messages": ["hi"], "tools_schema": None, "sampling_params": None}
ANSWER = {"kind": "model", "response": "x", "model_id": "m", "input_tokens": 1, "output_tokens": 1}


@pytest.mark.parametrize(
    ("line", "refused"),
    [
        (
            {**ANSWER, "request": REQUEST, "stop_reason": "tired"},
            "a model line's stop_reason must be 'length' or 'refused'",
        ),
        (
            {**ANSWER, "request": {**REQUEST, "output_schema": {"schema": {}}}},
            "a model line's request must have an output_schema that is an object of name "
            "and schema",
        ),
    ],
    ids=["stop-reason", "output-schema"],
)
def test_a_hand_edited_structured_line_is_refused_naming_its_field(
    tmp_path: Path, line: dict[str, object], refused: str
) -> None:
    path = tmp_path / "recording.jsonl"
    path.write_text(json.dumps(line) + "\n")
    unload_recording(str(path))

    with pytest.raises(RecordingError, match=re.escape(f"recording.jsonl:1: {refused}")):
        recording_at(str(path))
