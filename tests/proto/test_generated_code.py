"""The committed generated module matches beam_agents.proto (no drift)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
GENERATED = ("beam_agents_pb2.py", "beam_agents_pb2.pyi")


def test_generated_module_matches_the_proto(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{ROOT}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            str(ROOT / "beam_agents" / "proto" / "beam_agents.proto"),
        ],
        check=True,
        capture_output=True,
    )
    for name in GENERATED:
        fresh = (tmp_path / "beam_agents" / "proto" / name).read_text()
        committed = (ROOT / "beam_agents" / "proto" / name).read_text()
        assert fresh == committed, f"{name} is stale: run `make proto` and commit the result"
