"""`make eval`'s pieces: the labelled alerts, the candidates through `beam-agents eval`, gates.

The evaluations here replay six hours of six services (a few dozen alerts,
the three whose right answer depends on history among them) through the
committed recording, copied so the test never writes the committed file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.triage.candidates import CANDIDATES, OUTPUT_TYPE
from app.triage.cli import main as triage_main
from app.triage.data import generate_labels
from app.triage.labelled import labelled_set
from app.triage.model import classify
from beam_agents.cli import main as beam_agents_main
from tests.eval.test_report_browser import _open, browser
from tests.template.baking import CHECKOUT

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
__all__ = ["browser"]  # the Chromium fixture, shared with the report's own tests

RECORDING = CHECKOUT / "app" / "triage" / "recordings" / "eval.jsonl"
HOURS, SERVICES = "6", "6"
HISTORY = {"svc-004-0004": "P3", "svc-004-0007": "P3", "svc-005-0006": "P1"}
"""The labelled recurrences of the first six services and the class history gives them."""


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("labelled")
    code = triage_main(
        ["labels", "--hours", HOURS, "--first-services", SERVICES, "--out", str(out)]
    )
    assert code == 0
    return out


def _eval(labelled: Path, out: Path, *candidates: str, gates: tuple[str, ...] = ()) -> int:
    recording = out.parent / f"{out.name}-recording.jsonl"
    shutil.copyfile(RECORDING, recording)
    argv = ["eval", str(labelled / "events.jsonl"), "--quiet"]
    for name in candidates:
        argv += ["--candidate", f"{name}={CANDIDATES[name]}"]
    argv += ["--output-type", OUTPUT_TYPE]
    argv += ["--labels", str(labelled / "labels.jsonl"), "--recording", str(recording)]
    argv += ["--scorer", "field:class", "--out", str(out)]
    for gate in gates:
        argv += ["--gate", gate]
    code = beam_agents_main(argv)
    assert recording.read_bytes() == RECORDING.read_bytes(), "a call was not in the recording"
    return code


def test_the_labels_command_writes_the_same_bytes_every_time(
    labelled: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    assert (
        triage_main(["labels", "--hours", HOURS, "--first-services", SERVICES, "--out", str(again)])
        == 0
    )

    for name in ("events.jsonl", "labels.jsonl"):
        assert (again / name).read_bytes() == (labelled / name).read_bytes()


def test_alerts_whose_answer_depends_on_history_are_labelled_with_what_history_gives(
    labelled: Path,
) -> None:
    labels = {label["id"]: label for label in _lines(labelled / "labels.jsonl")}
    from_generator = {x.alert_id: x for x in generate_labels() if x.alert_id in HISTORY}

    for alert_id, expected in HISTORY.items():
        assert labels[alert_id]["expected"] == {"class": expected}
        assert labels[alert_id]["scenario"] == from_generator[alert_id].scenario
        assert labels[alert_id]["message_class"] == from_generator[alert_id].message_class
    assert all(label["class_field"] == "class" for label in labels.values())


def test_answers_answer_alerts_of_the_set_and_unanswered_approvals_are_unlabelled(
    labelled: Path,
) -> None:
    """A P1 nobody answers times out in every candidate alike: there is no decision to score."""
    found = labelled_set(float(HOURS), int(SERVICES))
    events = _lines(labelled / "events.jsonl")
    alerts = {e["id"]: e for e in events if "answer_to" not in e}
    answers = [e for e in events if "answer_to" in e]
    labelled_ids = {label["id"] for label in found.labels}

    assert found.alerts == len(alerts)
    assert answers, "the set carries the humans' answers"
    assert {a["answer_to"] for a in answers} <= labelled_ids
    unlabelled = set(alerts) - labelled_ids
    assert unlabelled, "some approvals are never answered"
    for alert_id in unlabelled:
        assert classify(json.loads(alerts[alert_id]["payload"])["message"])[0] == "P1"
        assert alert_id not in HISTORY
    times = [e["time_ms"] for e in events]
    assert times == sorted(times)


def test_recall_fixes_the_history_alerts_and_changes_no_other_decision(
    labelled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"

    code = _eval(labelled, out, "no-recall", "recall", gates=("class>=0.99", "delta(class)>=0"))

    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    by_name = {c["name"]: c for c in summary["candidates"]}
    for candidate in by_name.values():
        assert candidate["recorded"] == candidate["model_calls"], (
            "every call came from the recording"
        )
    assert by_name["recall"]["metrics"]["class"]["mean"] == 1.0
    assert by_name["no-recall"]["metrics"]["class"]["mean"] < 1.0
    rows = [r for r in _lines(out / "results.jsonl") if r["scores"].get("class") is not None]
    wrong = {
        r["event_id"] for r in rows if r["candidate"] == "no-recall" and r["scores"]["class"] == 0
    }
    assert wrong == set(HISTORY)
    # Without recall the returning lag is a P2 ticket; the human's answer to the P1
    # approval the recall candidate asked for finds nothing waiting, and is its own
    # dead letter, not this event's outcome.
    [lag] = [r for r in rows if r["candidate"] == "no-recall" and r["event_id"] == "svc-005-0006"]
    assert lag["dead_letter"] is None
    assert lag["output_json"]["class"] == "P2"
    assert (out / "report.html").is_file()

    capsys.readouterr()
    assert triage_main(["changes", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == [
        "candidate",
        "class",
        "[95%",
        "interval]",
        "n",
        "dead",
        "letters",
        "model",
        "calls",
        "(recorded)",
    ]
    assert printed[3].startswith("recall vs no-recall: class +")
    assert printed[3].endswith("; 3 decisions changed")
    changed = [line.split()[0] for line in printed[4:] if line.startswith("  svc-")]
    assert sorted(changed) == sorted(HISTORY)
    assert "recall: P3 remembered (known flap: " in "\n".join(printed)
    assert "recall: P1 paged (replication lag caused the outage" in "\n".join(printed)


def test_a_candidate_that_ignores_history_fails_the_gate_with_exit_1(
    labelled: Path, tmp_path: Path
) -> None:
    """The regression: with recall as the baseline, turning it off lowers the class accuracy."""
    out = tmp_path / "eval"

    code = _eval(labelled, out, "recall", "no-recall", gates=("delta(class)>=0",))

    assert code == 1
    summary = json.loads((out / "summary.json").read_text())
    [gate] = summary["gates"]
    assert gate["passed"] is False
    assert gate["value"] < 0
    assert summary["passed"] is False


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`make eval`, the real target, on a small set, with this environment's Python."""
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    tmp_path = tmp_path_factory.mktemp("make-eval")
    venv = Path(sys.executable).parent.parent
    recording = tmp_path / "recording.jsonl"
    shutil.copyfile(RECORDING, recording)
    out = tmp_path / "out"

    done = subprocess.run(
        ["make", "--no-print-directory", "eval", f"VENV={venv}", "-o", f"{venv}/.installed-stamp",
         f"EVAL_HOURS={HOURS}", f"EVAL_SERVICES={SERVICES}", f"EVAL_OUT={out}",
         f"EVAL_RECORDING={recording}"],
        cwd=CHECKOUT, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MAKEFLAGS": "", "MAKELEVEL": ""},
    )  # fmt: skip
    assert recording.read_bytes() == RECORDING.read_bytes()
    return done, out


def test_make_eval_runs_labels_eval_and_changes_and_passes_its_gates(
    made: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, out = made

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "gate class>=0.99: pass" in done.stderr
    assert "recall vs no-recall: class +" in done.stdout
    assert f"report: {out}/report.html" in done.stdout
    assert (out / "report.html").is_file()


def test_make_evals_report_counts_the_decisions_its_changes_command_counts(
    made: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """Outputs that differ only in what was recalled are shown, not counted as changes."""
    done, out = made
    printed = re.search(r"; (\d+) decisions changed$", done.stdout, re.MULTILINE)
    report = (out / "report.html").read_text()
    counted = re.search(r'<span id="decisions-changed">(\d+)</span>', report)

    assert printed is not None, done.stdout
    assert counted is not None
    assert counted[1] == printed[1] == "3"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["decision_fields"] == ["class", "decision"]
    (comparison,) = summary["comparisons"]
    assert len(comparison["disagreements"]) > 3
    assert "only in history, recalled_keys, recalled_scores, rehydrated" in report
    assert "dead letter" not in done.stderr  # --quiet: the summary counts them instead


def test_the_triage_evaluations_report_reads_in_chromium(
    labelled: Path, tmp_path: Path, browser: Any
) -> None:
    """The report `make eval` writes, as a person opens it: numbers, the changed decisions."""
    out = tmp_path / "eval"
    assert _eval(labelled, out, "no-recall", "recall", gates=("delta(class)>=0",)) == 0
    summary = json.loads((out / "summary.json").read_text())
    recall = next(c for c in summary["candidates"] if c["name"] == "recall")

    context, page, blocked = _open(browser, (out / "report.html").resolve().as_uri())
    try:
        cell = page.locator('#metrics td[data-candidate="recall"][data-metric="class"]')
        assert cell.inner_text().split()[0] == f"{recall['metrics']['class']['mean']:.3f}"
        delta = page.locator('#comparison td[data-candidate="recall"][data-delta="class"]')
        change = summary["comparisons"][0]["deltas"]["class"]["delta"]
        assert change > 0
        assert delta.inner_text().startswith(f"+{change:.3f}")
        text = page.locator("body").inner_text()
        for alert_id in HISTORY:
            assert alert_id in text
        assert "delta(class)>=0" in text
        assert blocked == []
        assert page.errors == []
    finally:
        context.close()
