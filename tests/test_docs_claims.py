"""The documentation never says a part is missing when the repository has it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
#: Phrases that claim a part does not exist yet.
MISSING = re.compile(
    r"not (yet )?(built|implemented|available|written)( yet)?|coming soon|to be written", re.I
)
CODE_SPAN = re.compile(r"`([^`\s]+)`")


def false_absence_claims(markdown: str) -> list[str]:
    """Paragraphs that call something missing while naming a path that exists."""
    claims = []
    for paragraph in re.split(r"\n\s*\n", markdown):
        if not MISSING.search(paragraph):
            continue
        existing = [span for span in CODE_SPAN.findall(paragraph) if (ROOT / span).exists()]
        if existing:
            claims.append(f"{' '.join(paragraph.split())[:160]} (exists: {', '.join(existing)})")
    return claims


def test_no_page_claims_an_existing_part_is_not_built() -> None:
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    pages += [ROOT / "app" / "triage" / "README.md", ROOT / "template" / "README.md"]
    claims = {
        page.relative_to(ROOT).as_posix(): found
        for page in pages
        if (found := false_absence_claims(page.read_text(encoding="utf-8")))
    }

    assert claims == {}


def test_a_claim_that_an_existing_part_is_not_built_is_caught() -> None:
    """The sentence the home page once carried, after both parts had shipped."""
    stale = (
        "The cookiecutter template (`template/`) and the triage reference application\n"
        "(`app/`) are not built yet.\n"
    )

    (claim,) = false_absence_claims(stale)

    assert "exists: template/, app/" in claim


def test_the_home_page_names_every_part_that_ships() -> None:
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    parts = ["beam_agents/runtime/", "beam_agents/memory/stores/", "beam_agents/model/"]
    parts += ["app/", "template/", "infra/"]

    assert [part for part in parts if f"`{part}`" not in home] == []
    assert all((ROOT / part).is_dir() for part in parts)
    assert "images/triage-report.png" in home
    assert (ROOT / "docs" / "images" / "triage-report.png").is_file()
