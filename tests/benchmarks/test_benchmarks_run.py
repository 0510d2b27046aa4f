"""Every benchmark runs once at minimal size, so none can rot unnoticed.

Timings are not asserted here (they belong to `make bench`, reported as
ratios); what is asserted is that each benchmark completes and reports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
BENCHMARKS = sorted((ROOT / "benchmarks").glob("bench_*.py"))


def test_there_are_benchmarks() -> None:
    assert BENCHMARKS


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_runs_quick(script: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-4000:]
    assert "target" in done.stdout, done.stdout
