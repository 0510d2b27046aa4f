"""The command line refuses bad input with a message naming what is wrong, before any pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.triage.alerts import Alert
from app.triage.cli import build_parser, main
from beam_agents.model import FakeLLM, Rule


def test_the_parser_offers_demo_run_and_generate() -> None:
    parser = build_parser()

    assert parser.parse_args(["demo"]).out == Path("out/triage")
    run = parser.parse_args(
        [
            "run",
            "--input",
            "a.jsonl",
            "--model",
            "fake",
            "--longterm",
            "sqlite+aiosqlite:///x",
            "--out",
            "o",
        ]
    )
    assert (run.input, run.model, run.longterm, run.out) == (
        Path("a.jsonl"), "fake", "sqlite+aiosqlite:///x", Path("o"),
    )  # fmt: skip
    assert parser.parse_args(["generate"]).command == "generate"


def test_an_invalid_alert_line_is_refused_naming_the_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alerts = tmp_path / "alerts.jsonl"
    alerts.write_text(
        '{"alert_id":"a-1","event_time_ms":1,"message":"ok","service":"s","severity_hint":"info"}\n'
        '{"alert_id":"a-2","event_time_ms":"soon","message":"x","service":"s","severity_hint":"info"}\n'
    )

    code = main(
        ["run", "--input", str(alerts), "--longterm", f"sqlite+aiosqlite:///{tmp_path}/lt.sqlite",
         "--out", str(tmp_path / "out")]
    )  # fmt: skip

    assert code == 2
    error = capsys.readouterr().err
    assert f"{alerts}:2" in error
    assert "'event_time_ms'" in error


def test_an_unknown_model_spec_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alerts = tmp_path / "alerts.jsonl"
    alerts.write_text(
        '{"alert_id":"a-1","event_time_ms":1,"message":"ok","service":"s","severity_hint":"info"}\n'
    )

    code = main(
        ["run", "--input", str(alerts), "--model", "clippy:v1",
         "--longterm", f"sqlite+aiosqlite:///{tmp_path}/lt.sqlite", "--out", str(tmp_path / "out")]
    )  # fmt: skip

    assert code == 2
    assert "clippy" in capsys.readouterr().err
    assert not (tmp_path / "out" / "outputs.jsonl").exists()


@pytest.mark.pipeline
def _classified_as(alert_id: str, priority: str) -> Rule:
    """A rule answering the classification of `alert_id` (its own line, not the context)."""
    answer = {"priority": priority, "reason": "scripted", "history": "none"}
    return Rule(rf'Alert: \{{\\"alert_id\\":\\"{alert_id}\\"', json.dumps(answer).encode())


scripted = FakeLLM(
    rules=[_classified_as("a-1", "P1"), _classified_as("a-2", "P2"), _classified_as("a-3", "P3")],
    name="triage-cli-scripted",
    keep_calls=False,
)
"""Named by the provider spec `py:tests.app.test_triage_cli:scripted`."""


def test_run_triages_your_alerts_with_a_provider_spec_and_your_store(tmp_path: Path) -> None:
    """A `py:` spec names your provider: here a script answering each alert's classification."""
    alerts = tmp_path / "alerts.jsonl"
    lines = [
        Alert("db-1", "a-1", "critical", "disk on fire", 1_000_000),
        Alert("db-1", "a-2", "warning", "slow disk", 1_060_000),
        Alert("web-1", "a-3", "info", "all quiet", 1_000_000),
    ]
    alerts.write_bytes(b"".join(a.to_bytes() + b"\n" for a in lines))
    out = tmp_path / "out"
    uri = f"sqlite+aiosqlite:///{tmp_path / 'lt.sqlite'}"

    code = main(
        ["run", "--input", str(alerts), "--model", "py:tests.app.test_triage_cli:scripted",
         "--longterm", uri, "--provision", "--out", str(out)]
    )  # fmt: skip

    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outcomes"] == {"P1": 0, "P2": 1, "P3": 1, "noise": 0}
    assert summary["timed_out"] == 1  # nobody answered the P1: escalated
    # ... and nothing of db-1 settled its ticket in the 15 minutes after it: escalated too.
    assert summary["escalated_by_follow_up"] == 1
    assert summary["intents_by_tool"] == {"approval": 1, "escalate": 2, "open_ticket": 1}
    assert summary["longterm_rows"] > 0
    # Tokens come from the runtime's per-model counters: the model, both directions spent,
    # and the embedder recall used (the default, `fake`), which only reads.
    by_model = dict(summary["tokens_by_model"])
    embedder = by_model.pop("fake-embed-256")
    (tokens,) = by_model.values()
    assert embedder["input_tokens"] > 0
    assert embedder["output_tokens"] == 0
    assert tokens["input_tokens"] + embedder["input_tokens"] == summary["input_tokens"]
    assert tokens["output_tokens"] == summary["output_tokens"] > 0


def test_a_run_on_an_unprovisioned_store_fails_in_one_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alerts = tmp_path / "alerts.jsonl"
    alerts.write_bytes(Alert("db-1", "a-1", "critical", "disk on fire", 1_000_000).to_bytes())
    missing = tmp_path / "never-provisioned.sqlite"

    code = main(
        ["run", "--input", str(alerts), "--model", "fake",
         "--longterm", f"sqlite+aiosqlite:///{missing}", "--out", str(tmp_path / "out")]
    )  # fmt: skip

    assert code == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "beam-agents provision" in line
    assert not missing.exists()
    assert not (tmp_path / "out" / "outputs.jsonl").exists()
