"""Bake the template: cookiecutter's API with a throwaway config, options and file sets.

cookiecutter writes replay files under the user's home unless given a
`config_file`; every bake here gets one beside its output, so tests never
touch `~/.cookiecutter_replay` or `~/.cookiecutters`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cookiecutter.main import cookiecutter

CHECKOUT = Path(__file__).resolve().parents[2]
TEMPLATE = CHECKOUT / "template"
#: What the tests pass for beam_agents_requirement: this checkout, as pip reads it.
LOCAL_REQUIREMENT = f"beam-agents @ {CHECKOUT.as_uri()}"
BACKENDS = ("none", "sqlite", "postgres", "redis", "bigtable", "firestore")
PROVIDERS = ("fake", "openai", "gemini")
HITL = ("yes", "no")
COMBINATIONS = list(itertools.product(BACKENDS, PROVIDERS, HITL))


def combination_id(backend: str, provider: str, hitl: str) -> str:
    return f"{backend}-{provider}-hitl_{hitl}"


def bake_into(output_dir: Path, **answers: Any) -> Path:
    """Bake the template with `answers` (no prompts) into `output_dir`; return the project."""
    config = output_dir / ".cookiecutter-config.yaml"
    if not config.exists():
        output_dir.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f"cookiecutters_dir: {output_dir / '.cookiecutters'}\n"
            f"replay_dir: {output_dir / '.replay'}\n"
        )
    answers.setdefault("beam_agents_requirement", LOCAL_REQUIREMENT)
    project = cookiecutter(
        str(TEMPLATE),
        no_input=True,
        extra_context=answers,
        output_dir=str(output_dir),
        config_file=str(config),
    )
    return Path(project)


def combination_answers(backend: str, provider: str, hitl: str) -> dict[str, str]:
    """Answers with a project name of their own, so every bake has a distinct package."""
    return {
        "project_name": f"Desk {backend} {provider} {hitl}",
        "longterm_backend": backend,
        "model_provider": provider,
        "include_hitl": hitl,
    }


def package_of(project: Path) -> str:
    (package,) = [p.name for p in (project / "src").iterdir() if p.is_dir()]
    return package


def text_files(project: Path) -> Iterator[Path]:
    for path in sorted(project.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path
