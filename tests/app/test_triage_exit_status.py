"""A local run says how it went: dead letters by reason at the end, non-zero when nothing worked."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from app.triage.cli import main
from app.triage.data import DATA_DIR

pytestmark = pytest.mark.pipeline
CHECKOUT = Path(__file__).resolve().parents[2]


def _three_alerts(tmp_path: Path) -> Path:
    alerts = tmp_path / "alerts.jsonl"
    lines = (DATA_DIR / "alerts.jsonl").read_text().splitlines()[:3]
    alerts.write_text("\n".join(lines) + "\n")
    return alerts


def _run(tmp_path: Path, *extra: str) -> int:
    return main(
        [
            "run",
            "--input",
            str(_three_alerts(tmp_path)),
            "--out",
            str(tmp_path / "out"),
            *extra,
        ]
    )


def test_a_run_where_every_activation_dead_letters_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run(
        tmp_path,
        "--longterm",
        f"sqlite+aiosqlite:///{tmp_path / 'lt.sqlite'}",
        "--provision",
        "--model",
        "py:tests.app.triage_replays:broken_model",
    )

    captured = capsys.readouterr()
    assert code == 1
    assert "dead letters: 3 (model_error 3)" in captured.out
    assert "none of the 3 alerts was triaged" in captured.err


def test_a_run_that_triages_prints_its_dead_letters_and_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run(
        tmp_path, "--longterm", f"sqlite+aiosqlite:///{tmp_path / 'lt.sqlite'}", "--provision"
    )

    assert code == 0
    assert "dead letters: none" in capsys.readouterr().out


def test_an_unreachable_store_is_one_line_naming_it_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    uri = f"postgresql+asyncpg://triage:hunter2@127.0.0.1:{port}/triage"

    code = _run(tmp_path, "--longterm", uri)

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"python -m app.triage: error: long-term store "
        f"postgresql+asyncpg://triage:***@127.0.0.1:{port}/triage cannot be reached "
        f"(StoreUnavailableError); start it or correct the URI; check with: beam-agents inspect "
        f"'postgresql+asyncpg://triage:***@127.0.0.1:{port}/triage' --entities"
    ]
    assert "hunter2" not in captured.err


def test_a_run_whose_model_key_is_missing_exits_2_in_one_line_before_any_work(
    tmp_path: Path,
) -> None:
    """As a user runs it: the whole of stderr, Beam's logging included, is the one line."""
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = str(CHECKOUT)
    store = tmp_path / "lt.sqlite"
    command = [sys.executable, "-m", "app.triage", "run", "--input", str(_three_alerts(tmp_path))]
    command += ["--out", str(tmp_path / "out"), "--longterm", f"sqlite+aiosqlite:///{store}"]
    command += ["--provision", "--model", "openai:gpt-4o-mini"]

    done = subprocess.run(
        command, cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=300, check=False
    )

    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "python -m app.triage: error: --model: environment variable OPENAI_API_KEY is not set "
        "or empty, and openai:gpt-4o-mini reads its API key from it in this process, where the "
        "local runner runs the pipeline; set it, or name another variable with ?api_key_env=NAME"
    ]
    assert done.stdout == ""
    assert not store.exists()  # refused before the store was provisioned
