"""The README's quickstart runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_readme_quickstart_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    (code,) = re.findall(r"## Quickstart\n\n```python\n(.*?)```", readme, re.S)
    script = tmp_path / "quickstart.py"
    script.write_text(code)

    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert "(b'db-3', b'page')" in done.stdout
    assert "(b'web-1', b'ignore')" in done.stdout
    assert "page_oncall" in done.stdout
