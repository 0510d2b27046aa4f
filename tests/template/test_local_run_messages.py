"""A generated project's local run: one line for a store it cannot use, a failed run fails."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.template.baking import CHECKOUT, bake_into, package_of

BROKEN_MODEL = """
class Broken:
    def __call__(self):
        return self

    async def complete(self, request):
        raise ConnectionError("the model endpoint refused the connection")

    async def aclose(self):
        pass


broken = Broken()
"""


def _run(
    project: Path,
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    events: str = "data/events.jsonl",
) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(CHECKOUT), str(project / "src"), str(tmp_path)])
    return subprocess.run(
        [sys.executable, "-m", f"{package_of(project)}.pipeline", "--input", events, *args],
        cwd=project,
        env={**os.environ, **(env or {}), "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_an_unreachable_postgres_store_is_one_line_naming_it(tmp_path: Path) -> None:
    """The password stays in the driver's environment; the line names the URI and the fix."""
    project = bake_into(tmp_path / "baked", project_name="Pg Desk", longterm_backend="postgres")
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    uri = f"postgresql+asyncpg://desk@127.0.0.1:{port}/desk"

    done = _run(project, tmp_path, "--longterm", uri, env={"PGPASSWORD": "s3cret"})

    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: long-term store {uri} cannot be reached (StoreUnavailableError); start it "
        f"or correct the URI; check with: beam-agents inspect '{uri}' --entities"
    ]
    assert "s3cret" not in done.stdout + done.stderr


def test_a_store_uri_with_a_password_is_refused_in_one_line_without_echoing_it(
    tmp_path: Path,
) -> None:
    project = bake_into(tmp_path / "baked", project_name="Pg Desk", longterm_backend="postgres")

    done = _run(
        project, tmp_path, "--longterm", "postgresql+asyncpg://desk:s3cret@127.0.0.1:5/desk"
    )

    assert done.returncode != 0
    [line] = done.stderr.splitlines()
    assert "PGPASSWORD" in line
    assert "s3cret" not in done.stdout + done.stderr


def test_a_generated_run_where_every_activation_dead_letters_exits_1(tmp_path: Path) -> None:
    project = bake_into(tmp_path / "baked", project_name="Broken Desk")
    (tmp_path / "broken_model.py").write_text(BROKEN_MODEL)

    done = _run(project, tmp_path, "--model", "py:broken_model:broken")

    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-2:]
    assert last[0].startswith("dead letters: "), last
    assert "model_error" in last[0]
    assert last[1] == "error: every event was dead-lettered; nothing succeeded"


def test_a_generated_run_that_works_prints_its_dead_letters_and_exits_0(tmp_path: Path) -> None:
    """The sample's approval nobody answers is wiped at the end: a dead letter, not a failure."""
    project = bake_into(tmp_path / "baked", project_name="Fine Desk")

    done = _run(project, tmp_path)

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "dead letters: 1 (ttl_wiped_suspension 1)"


def test_an_input_file_that_does_not_exist_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """As a malformed line is: the path and why it cannot be read, no traceback."""
    project = bake_into(tmp_path / "baked", project_name="Typo Desk")

    done = _run(project, tmp_path, events="data/nope.jsonl")

    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: data/nope.jsonl: cannot read (No such file or directory)"
    ]
    assert done.stdout == ""


def test_a_malformed_input_line_is_one_line_and_exit_2(tmp_path: Path) -> None:
    project = bake_into(tmp_path / "baked", project_name="Typo Desk")
    (project / "data" / "bad.jsonl").write_text('{"key": "a", "text": "x"}\n')

    done = _run(project, tmp_path, events="data/bad.jsonl")

    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: data/bad.jsonl:1: missing time_ms"]
