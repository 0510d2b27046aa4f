"""`beam-agents --help`: how long the command takes to start, as a whole process.

The CLI never builds a pipeline, so it must not pay for importing Apache
Beam (over a second on a 2-core machine). This times `beam-agents --help`
and `--version` end to end, against a bare interpreter start as the
baseline, and prints the medians. Target: `--help` median under 0.3 s, and
under 3x a bare interpreter start (the ratio holds when the machine is
slower or busier than the one the absolute figure was set on).

    python benchmarks/bench_cli.py            # 21 runs each (make bench)
    python benchmarks/bench_cli.py --quick    # 3 runs each (the test suite)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.3
TARGET_RATIO = 3.0


def _cli() -> list[str]:
    """The installed console script beside this interpreter, else `python -m`."""
    script = Path(sys.executable).with_name("beam-agents")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("beam-agents")
    return [found] if found else [sys.executable, "-m", "beam_agents.cli"]


def _median_s(argv: list[str], runs: int) -> float:
    subprocess.run(argv, capture_output=True, check=True)  # warm the file cache
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs instead of 21")
    runs = 3 if parser.parse_args().quick else 21
    cli = _cli()
    baseline = _median_s([sys.executable, "-c", "pass"], runs)
    help_s = _median_s([*cli, "--help"], runs)
    version_s = _median_s([*cli, "--version"], runs)
    ratio = help_s / baseline
    print(f"command: {' '.join(cli)} ({runs} runs each, median wall time)")
    print(f"python -c pass        {baseline * 1000:7.1f} ms")
    print(f"beam-agents --help    {help_s * 1000:7.1f} ms")
    print(f"beam-agents --version {version_s * 1000:7.1f} ms")
    verdict = "met" if help_s < TARGET_S and ratio < TARGET_RATIO else "MISSED"
    print(
        f"target: --help < {TARGET_S} s and < {TARGET_RATIO}x a bare interpreter start: "
        f"{help_s:.3f} s, {ratio:.2f}x ({verdict})"
    )


if __name__ == "__main__":
    main()
