"""The documentation's code runs, and its navigation matches its pages."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[1]


def _section(page: str, heading: str) -> str:
    text = (ROOT / "docs" / page).read_text()
    return text.partition(f"\n{heading}\n")[2].partition("\n## ")[0]


def test_the_use_a_store_directly_example_runs(tmp_path: Path) -> None:
    (code,) = re.findall(
        r"```python\n(.*?)```", _section("stores.md", "## Use a store directly"), re.S
    )
    (tmp_path / "direct.py").write_text(code)

    done = subprocess.run(
        [sys.executable, "direct.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "[True, True]",
        "False",
        "True",
        "['case/0001']",
        "None",
        "2",
    ]
    assert (tmp_path / "profiles.db").is_file()


def test_every_nav_title_is_its_pages_title() -> None:
    """A nav entry may drop the page title's leading "The ", nothing else."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    mismatched = {}
    for entry in config["nav"]:
        ((nav_title, page),) = entry.items()
        title = (ROOT / "docs" / page).read_text().splitlines()[0].removeprefix("# ")
        if page != "index.md" and nav_title not in (title, title.removeprefix("The ").capitalize()):
            mismatched[page] = (nav_title, title)

    assert mismatched == {}
