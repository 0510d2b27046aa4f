"""docs/deploy.md's "Try it locally first" runs as written, against the real Pub/Sub emulator.

The test takes the page's shell block verbatim and changes only the emulator's
port (8085 may be taken on a shared machine). It runs the block with bash in a
session of its own, from a scratch directory with this checkout on PYTHONPATH
and this environment's `python` first on PATH (the page's virtualenv), then
kills the session: the emulator and the streaming run it started in the
background would otherwise outlive it (cancelling the run takes ~30 s).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.triage.emulator import sample_alerts
from beam_agents.testing.pytest_plugin import service_unavailable
from beam_agents.testing.services import free_port

ROOT = Path(__file__).resolve().parents[2]
DOC_PORT = "8085"
WALK_TIMEOUT_S = 300


def walk_commands() -> str:
    """The shell block of the page's "Try it locally first" section."""
    page = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = page.partition("\n## Try it locally first\n")[2].partition("\n## ")[0]
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    return block


def _records(text: str, field: str) -> list[dict[str, object]]:
    """The JSON lines of `text` that carry `field` (the walk's pulled records)."""
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if field in record:
                found.append(record)
    return found


@pytest.mark.pipeline
def test_the_local_pubsub_walk_runs_as_written(tmp_path: Path) -> None:
    block = walk_commands()
    emulator = block.split()[0]
    if not Path(emulator).exists():
        service_unavailable(f"Pub/Sub emulator not installed at {emulator}")
    if shutil.which("java") is None:
        service_unavailable("java not found: the Pub/Sub emulator needs it")
    port = str(free_port())
    script = tmp_path / "walk.sh"
    script.write_text("set -euo pipefail\n" + block.replace(DOC_PORT, port), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PUBSUB_EMULATOR_HOST"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    env["PYTHONPATH"] = str(ROOT)
    stdout, stderr = tmp_path / "walk.out", tmp_path / "walk.log"

    # Files, not pipes: the background processes keep a pipe open until they are killed.
    with stdout.open("w") as out_sink, stderr.open("w") as err_sink:
        walk = subprocess.Popen(
            ["bash", str(script)],
            cwd=tmp_path,
            env=env,
            stdout=out_sink,
            stderr=err_sink,
            start_new_session=True,
        )
        try:
            walk.wait(timeout=WALK_TIMEOUT_S)
        finally:
            os.killpg(walk.pid, signal.SIGKILL)
            walk.wait()
    out, errors = stdout.read_text(), stderr.read_text()[-4000:]

    assert walk.returncode == 0, out[-3000:] + errors
    assert "published 20 alerts to projects/local-dev/topics/triage-alerts" in out
    decisions = _records(out, "decision")
    assert decisions, out[-3000:] + errors
    sample = {alert.alert_id for alert in sample_alerts(20, now_ms=0)}
    assert {str(d["alert_id"]) for d in decisions} <= sample
    assert _records(out, "tool"), out[-3000:] + errors
    assert "reading alerts  projects/local-dev/subscriptions/triage-alerts" in errors
    assert "Ctrl-C" in errors
    assert (tmp_path / "out" / "triage-local" / "longterm.sqlite").is_file()
