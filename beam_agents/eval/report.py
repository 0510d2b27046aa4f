"""report.html: the summary and the disagreements as one self-contained page.

A placeholder: a plain page with the summary and the results as tables of
JSON, no script and no network. The full report replaces it.
"""

from __future__ import annotations

import html
import json
from typing import Any

__all__ = ["render_report"]


def render_report(summary: dict[str, Any], results: list[dict[str, Any]]) -> str:
    """The report page for `summary` and `results` (as written to summary.json, results.jsonl)."""
    verdict = "passed" if summary.get("passed") else "failed"
    rows = "".join(
        f"<tr><td>{html.escape(str(r['candidate']))}</td><td>{html.escape(str(r['event_id']))}"
        f"</td><td><code>{html.escape(json.dumps(r['scores'], sort_keys=True))}</code></td></tr>"
        for r in results
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>beam-agents eval</title></head><body>"
        f"<h1>beam-agents eval: {verdict}</h1>"
        f"<pre>{html.escape(json.dumps(summary, indent=2, sort_keys=True))}</pre>"
        "<table><thead><tr><th>candidate</th><th>event</th><th>scores</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></body></html>\n"
    )
