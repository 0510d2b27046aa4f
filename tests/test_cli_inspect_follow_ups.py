"""`beam-agents inspect --lifecycle`: an entity's pending follow-ups, from a real run's records.

The records come from a streaming pipeline run (`tests.console.follow_up_run`)
and are written as the triage application writes `lifecycle.jsonl`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from beam_agents import LifecycleEvent
from beam_agents.cli import main
from tests.console.follow_up_run import follow_up_records, through, write_lifecycle

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def records() -> list[LifecycleEvent]:
    return follow_up_records()


@pytest.fixture
def part_way(records: list[LifecycleEvent], tmp_path: Path) -> Path:
    """A records directory as a run leaves it after svc-1's cancel and replacement."""
    write_lifecycle(tmp_path, through(records, 2))
    return tmp_path


def test_inspect_lists_an_entitys_pending_follow_ups_from_a_records_directory(
    part_way: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["inspect", "--lifecycle", str(part_way), "--entity", "svc-1"])

    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].split() == ["name", "due", "(UTC)", "clock", "scheduled", "at", "(UTC)", "seq"]
    assert [line.split() for line in out[1:-1]] == [
        ['"page-again"', "2026-11-30T08:16:26", "processing", "2026-11-30T08:01:26", "1"],
        ['"recheck"', "2026-11-30T08:31:26", "event", "2026-11-30T08:01:26", "1"],
        ['"close"', "2026-12-02T08:11:26", "event", "2026-11-30T08:11:26", "2"],
    ]
    assert out[-1] == (
        f"3 pending follow-up(s) of entity b'svc-1' in {part_way / 'lifecycle.jsonl'} "
        "(5 scheduled, 0 fired, 1 cancelled)"
    )


def test_with_json_each_pending_follow_up_is_one_object_and_the_summary_goes_to_stderr(
    part_way: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = part_way / "lifecycle.jsonl"

    code = main(["inspect", "--lifecycle", str(path), "--entity-hex", b"svc-2".hex(), "--json"])

    captured = capsys.readouterr()
    assert code == 0
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        {
            "entity": "svc-2",
            "name": "recheck",
            "due_ms": 1_796_025_986_000,
            "clock": "event",
            "scheduled_ms": 1_796_025_686_000,
            "scheduled_seq": 1,
        }
    ]
    assert captured.err.startswith("1 pending follow-up(s) of entity b'svc-2'")


def test_once_every_wake_has_run_no_follow_up_is_pending(
    records: list[LifecycleEvent], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_lifecycle(tmp_path, records)

    code = main(["inspect", "--lifecycle", str(tmp_path), "--entity", "svc-1"])

    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert len(out) == 2  # the header and the summary
    assert out[-1].startswith("0 pending follow-up(s) of entity b'svc-1'")
    assert out[-1].endswith("(5 scheduled, 3 fired, 1 cancelled)")


def test_an_entity_without_records_has_no_follow_up(
    part_way: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["inspect", "--lifecycle", str(part_way), "--entity", "svc-404"])

    assert code == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("0 pending follow-up(s)")


def test_a_half_written_last_line_is_left_for_the_next_look(
    part_way: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (part_way / "lifecycle.jsonl").open("ab") as handle:
        handle.write(b'{"detail":"{\\"name\\": \\"clo')  # a live run, mid-write

    code = main(["inspect", "--lifecycle", str(part_way), "--entity", "svc-1"])

    assert code == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("3 pending follow-up(s)")


def test_a_line_no_pipeline_writes_is_refused_with_its_file_and_line(
    part_way: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = part_way / "lifecycle.jsonl"
    lines = path.read_text().splitlines()
    bad = {"service": "svc-1", "kind": "wake_fired", "detail": "{}", "event_time_ms": 1, "seq": 3}
    path.write_text("\n".join([*lines, json.dumps(bad)]) + "\n")

    code = main(["inspect", "--lifecycle", str(path), "--entity", "svc-1"])

    err = capsys.readouterr().err
    assert code == 1
    assert f"{path}:{len(lines) + 1}: wake_fired record at seq 3: detail has no wake name" in err


def test_a_line_that_is_not_json_is_refused_with_its_file_and_line(
    part_way: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = part_way / "lifecycle.jsonl"
    count = len(path.read_text().splitlines())
    with path.open("a") as handle:
        handle.write("[1, 2]\n")

    code = main(["inspect", "--lifecycle", str(path), "--entity", "svc-1"])

    assert code == 1
    assert f"{path}:{count + 1}: not a JSON object" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["missing", "empty-dir"])
def test_a_path_with_no_lifecycle_records_is_a_usage_error(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / where
    if where == "empty-dir":
        path.mkdir()

    code = main(["inspect", "--lifecycle", str(path), "--entity", "svc-1"])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("beam-agents: error: --lifecycle: no ")
    assert str(path) in err


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["sqlite+aiosqlite:///rows.db", "--entity", "svc-1"], "URI is for a store"),
        (["--entities"], "--entities is for a store"),
        (["--entity", "svc-1", "--prefix", "case/", "--full"], "--prefix, --full are for a store"),
        (["--entity", "svc-1", "--limit", "5"], "--limit is for a store"),
    ],
)
def test_store_options_beside_lifecycle_are_refused_by_name(
    part_way: Path, extra: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["inspect", "--lifecycle", str(part_way), *extra])

    assert code == 2
    assert named in capsys.readouterr().err


def test_inspect_without_a_store_or_lifecycle_records_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["inspect", "--entity", "svc-1"])

    assert code == 2
    assert "give a store URI, or --lifecycle PATH" in capsys.readouterr().err


def test_inspect_lifecycle_runs_as_a_command_without_importing_apache_beam(part_way: Path) -> None:
    code = (
        "import sys\n"
        "from beam_agents.cli import main\n"
        f"assert main(['inspect', '--lifecycle', {str(part_way)!r}, '--entity', 'svc-1']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'apache_beam'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
