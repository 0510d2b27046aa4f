"""Trim the baked project to the chosen options and record how it was made.

The template holds every option's files; removing the unused ones here keeps
each of them a plain file (no file-wide `{% raw %}{% if %}{% endraw %}` wrapper) and leaves a
project with nothing it does not use. Two more things need the output
directory, which templates cannot see: local Terraform module sources must
be relative paths, and `.cruft.json` must name the template's commit so that
`cruft check` and `cruft update` work on a project made with plain
cookiecutter.
"""

import json
import os
import re
import subprocess
from pathlib import Path

CONTEXT = json.loads({{ cookiecutter | jsonify | tojson }})
BACKEND = CONTEXT["longterm_backend"]
STORES = ("postgres", "redis", "bigtable", "firestore")
PROJECT = Path.cwd()


def unused_files() -> list[str]:
    """Paths (relative to the project) that the chosen options do not use."""
    unused = [f"infra/memory_{store}.tf" for store in STORES if store != BACKEND]
    if BACKEND not in ("postgres", "redis"):
        unused.append("infra/network.tf")
    if BACKEND == "none":
        unused += ["tests/test_longterm.py", "tests/conftest.py"]
    if CONTEXT["include_hitl"] == "no":
        unused += ["tests/test_hitl.py", "data/answers.jsonl"]
    if CONTEXT["model_provider"] == "fake":
        unused += ["tests/test_model.py", "infra/model_secret.tf"]
    return unused


def relative_module_sources() -> None:
    """Terraform reads a module source as a local path only when it starts with ./ or ../."""
    infra = PROJECT / "infra"
    for path in sorted(infra.glob("*.tf")):
        text = path.read_text(encoding="utf-8")

        def relative(match: re.Match[str]) -> str:
            return f'{match.group(1)}"{Path(os.path.relpath(match.group(2), infra)).as_posix()}"'

        path.write_text(
            re.sub(r'(source\s*=\s*)"(/[^"]*)"', relative, text), encoding="utf-8"
        )


def _git(directory: str, *args: str) -> str | None:
    try:
        return subprocess.run(
            ["git", "-C", directory, *args], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def write_cruft_state() -> None:
    """What `cruft create` would have recorded: template repository, subdirectory, commit."""
    repo_dir = CONTEXT.get("_repo_dir") or CONTEXT["_template"]
    template = CONTEXT["_template"]
    directory = None
    root = _git(repo_dir, "rev-parse", "--show-toplevel")
    commit = _git(repo_dir, "rev-parse", "HEAD") if root else None
    if root:
        relative = Path(os.path.relpath(Path(repo_dir).resolve(), Path(root).resolve()))
        directory = None if relative == Path(".") else relative.as_posix()
        if Path(template).expanduser().exists():
            template = str(Path(root).resolve())
        else:
            # `gh:owner/repo` and friends are cookiecutter's shorthands; git (and cruft) need
            # the URL the template was actually cloned from.
            template = _git(root, "remote", "get-url", "origin") or template
    context = {k: v for k, v in CONTEXT.items() if k not in ("_output_dir", "_repo_dir")}
    state = {
        "template": template,
        "commit": commit,
        "checkout": CONTEXT.get("_checkout"),
        "context": {"cookiecutter": context},
        "directory": directory,
    }
    (PROJECT / ".cruft.json").write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    for name in unused_files():
        (PROJECT / name).unlink(missing_ok=True)
    relative_module_sources()
    write_cruft_state()
