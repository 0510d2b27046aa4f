"""The recording file: what it keeps, how it reads back, and what it refuses."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from beam_agents.eval import EvalInputError, RecordingError
from beam_agents.eval.events import read_events, read_labels
from beam_agents.eval.recording import (
    RecordingEmbedder,
    RecordingProvider,
    recording_at,
    save_recording,
    unload_recording,
)
from beam_agents.model.embedders.fake import FakeEmbedder
from beam_agents.model.fake import FakeLLM
from beam_agents.model.messages import LlmRequest
from tests.eval.logs import runtime_id, write_jsonl


def test_embeddings_are_recorded_by_model_and_texts_and_replayed_exactly(tmp_path: Path) -> None:
    inner = FakeEmbedder(dimensions=8, name="eval-embed")
    inner.reset()
    path = str(tmp_path / "rec.jsonl")

    async def embed() -> list[list[float]]:
        embedder = RecordingEmbedder(path, inner, "t")()
        embedded = await embedder.embed(["disk full", "cpu hot"])
        return [list(v) for v in embedded.vectors]

    live = asyncio.run(embed())
    save_recording(path)
    unload_recording(path)
    replayed = asyncio.run(embed())

    assert replayed == live
    assert inner.call_count() == 1
    (line,) = Path(path).read_text().splitlines()
    assert json.loads(line)["texts"] == ["disk full", "cpu hot"]


def test_one_request_anywhere_is_one_line_and_saving_twice_writes_the_same_bytes(
    tmp_path: Path,
) -> None:
    model = FakeLLM(default=b"\xff\x00 not utf-8", name="eval-bytes")
    model.reset()
    path = str(tmp_path / "rec.jsonl")
    request = LlmRequest(model_id="m", messages=[{"role": "user", "content": "hi"}])

    async def ask() -> bytes:
        provider = RecordingProvider(path, model, "t")()
        first = await provider.complete(request)
        second = await provider.complete(request)
        assert first == second
        return first.response

    answer = asyncio.run(ask())
    save_recording(path)
    written = Path(path).read_bytes()
    recording_at(path).added = 1
    save_recording(path)

    assert answer == b"\xff\x00 not utf-8"
    assert model.call_count() == 1
    assert Path(path).read_bytes() == written
    assert json.loads(written)["response"] == {"b64": "/wAgbm90IHV0Zi04"}


def test_a_bad_recording_line_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"kind": "tool", "tool": "t", "args": {}, "result": "ok"}\n{"kind": "nope"}\n')
    unload_recording(str(path))

    with pytest.raises(RecordingError, match=r"rec.jsonl:2: kind must be model, embed or tool"):
        recording_at(str(path))


def test_events_and_labels_are_checked_line_by_line(tmp_path: Path) -> None:
    events = write_jsonl(
        tmp_path / "events.jsonl",
        [
            {"key": "a", "payload": "one", "time_ms": 5},
            {"key": "a", "payload": {"b64": "dHdv"}, "time_ms": 6, "id": "two"},
        ],
    )
    log = read_events(str(events))

    assert [(e.id, e.payload) for e in log.events] == [
        (runtime_id("a", "one", 5), b"one"),
        ("two", b"two"),
    ]
    labels = write_jsonl(
        tmp_path / "labels.jsonl", [{"id": runtime_id("a", "one", 5)}, {"id": "two"}]
    )
    assert set(read_labels(str(labels), log)) == {log.events[0].id, "two"}

    bad = write_jsonl(tmp_path / "bad.jsonl", [{"key": "a", "payload": "x", "time_ms": "soon"}])
    with pytest.raises(EvalInputError, match=r"bad.jsonl:1: time_ms must be an int"):
        read_events(str(bad))
    twice = write_jsonl(tmp_path / "twice.jsonl", [{"key": "a", "payload": "x", "time_ms": 1}] * 2)
    with pytest.raises(EvalInputError, match=r"twice.jsonl:2: the same event as .*twice.jsonl:1"):
        read_events(str(twice))
    unknown = write_jsonl(tmp_path / "unknown.jsonl", [{"id": "nobody"}])
    with pytest.raises(EvalInputError, match=r"unknown.jsonl:1: no event has id 'nobody'"):
        read_labels(str(unknown), log)


def test_an_event_time_past_9999_is_refused_by_line_and_9999_itself_replays(
    tmp_path: Path,
) -> None:
    """The replay's watermark runs past the last event, and Beam's stream refuses times at its
    end: a log line stamped there is a usage error naming the line, not a crash in Beam."""
    from beam_agents.eval.running import replay_script

    latest = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
    late = write_jsonl(
        tmp_path / "late.jsonl",
        [
            {"key": "a", "payload": "x", "time_ms": latest},
            {"key": "a", "payload": "y", "time_ms": 9_223_372_036_854_774},  # Beam's max - 1 ms
        ],
    )
    with pytest.raises(EvalInputError, match=r"late.jsonl:2: time_ms must be an int in \[0, "):
        read_events(str(late))

    last = write_jsonl(tmp_path / "last.jsonl", [{"key": "a", "payload": "x", "time_ms": latest}])
    # Building the TestStream is where Beam checks each element's and watermark's time.
    stream = replay_script(read_events(str(last)), 60_000, 600_000).build()
    assert stream.output_tags == {"events", "answers"}
