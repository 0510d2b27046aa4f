"""Trim the baked project to the chosen options and record how it was made.

The template holds every option's files; removing the unused ones here keeps
each of them a plain file (no file-wide `{% raw %}{% if %}{% endraw %}` wrapper) and leaves a
project with nothing it does not use. Two more things need the output
directory and the template's own location, which templates cannot see:

- the default `beam_agents_requirement` (`SOURCE`) means "the beam-agents the
  template comes from": a bake from a local checkout pins that checkout
  (`beam-agents @ file://...`), a bake from a repository URL pins that
  repository at the baked commit (`git+URL@commit`), in `pyproject.toml` and
  in the Terraform module sources alike; an explicit answer is kept as given;
- local Terraform module sources must be relative paths;
- `.cruft.json` must name the template (an absolute path or the clone URL,
  never the relative path it was given as) and its commit, so that
  `cruft check` and `cruft update` work on a project made with plain
  cookiecutter. cruft's own renders (they carry `_commit`) leave it alone.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

CONTEXT = json.loads({{ cookiecutter | jsonify | tojson }})
BACKEND = CONTEXT["longterm_backend"]
STORES = ("postgres", "redis", "bigtable", "firestore")
PROJECT = Path.cwd()
#: The default requirement: resolved here to the template's own source.
SOURCE = "beam-agents @ file://TEMPLATE_SOURCE"
SOURCE_PATH = SOURCE.split("file://", 1)[1]


def unused_files() -> list[str]:
    """Paths (relative to the project) that the chosen options do not use."""
    unused = [f"infra/memory_{store}.tf" for store in STORES if store != BACKEND]
    if BACKEND not in ("postgres", "redis"):
        unused.append("infra/network.tf")
    if BACKEND != "redis":
        # Cloud SQL signs the workers in with IAM: no URI with a password, no secret.
        unused.append("infra/longterm_secret.tf")
    if BACKEND == "none":
        unused += ["tests/test_longterm.py"]
    if CONTEXT["include_hitl"] == "no":
        unused += ["tests/test_hitl.py", "data/answers.jsonl"]
    if CONTEXT["model_provider"] == "fake":
        unused.append("tests/test_model.py")
    return unused


def use_framework() -> None:
    """Put the chosen framework's agent and tests where the plain ones are, then drop the rest.

    The plain project's files stay as they are for `framework=plain`; an
    adapter's agent and the tests that fit it live in `_frameworks/` until here.
    """
    framework = CONTEXT.get("framework", "plain")
    spare = PROJECT / "_frameworks"
    if framework != "plain":
        package = PROJECT / "src" / CONTEXT["package_name"]
        (spare / f"agent_{framework}.py").replace(package / "agent.py")
        for test in ("test_agent.py", "test_hitl.py"):
            (spare / test).replace(PROJECT / "tests" / test)
    shutil.rmtree(spare)


def template_directory() -> Path | None:
    """The template directory, absolute, even when cookiecutter was given a relative path.

    Cookiecutter runs hooks from inside the template directory but starts this
    script in the new project, so a relative `_repo_dir` is resolved against
    the parent's working directory (Linux), else the shell's `PWD`.
    """
    given = CONTEXT.get("_repo_dir")
    candidates = []
    if given and Path(given).is_absolute():
        candidates.append(Path(given))
    try:
        candidates.append(Path(os.readlink(f"/proc/{os.getppid()}/cwd")))
    except OSError:
        pass
    if given and os.environ.get("PWD"):
        candidates.append(Path(os.environ["PWD"]) / given)
    for candidate in candidates:
        if (candidate / "cookiecutter.json").is_file():
            return candidate.resolve()
    return None


def _git(directory: Path | str, *args: str) -> str | None:
    try:
        return subprocess.run(
            ["git", "-C", str(directory), *args], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def template_source() -> tuple[str, str | None, str | None]:
    """(template as cruft reads it, its directory inside the repository, commit)."""
    given = str(CONTEXT["_template"])
    here = template_directory()
    local = Path(given).expanduser()
    if local.is_absolute() and local.is_dir():
        root: Path | None = _checkout_of(local)
    elif here is not None and not _looks_remote(given):
        root = _checkout_of(here)
    else:
        root = None
    commit = CONTEXT.get("_commit") or (_git(here, "rev-parse", "HEAD") if here else None)
    directory = None
    if here is not None:
        top = _git(here, "rev-parse", "--show-toplevel")
        inner = Path(os.path.relpath(here, Path(top).resolve())) if top else Path(".")
        directory = None if inner == Path(".") else inner.as_posix()
    if root is not None:
        return str(root), directory, commit
    # `gh:owner/repo` and friends are cookiecutter's shorthands; git (and cruft) need
    # the URL the template was actually cloned from.
    url = (_git(here, "remote", "get-url", "origin") if here else None) or given
    return url, directory, commit


def _checkout_of(directory: Path) -> Path:
    """The beam-agents checkout holding a template directory (or given as one)."""
    top = _git(directory, "rev-parse", "--show-toplevel")
    if top:
        return Path(top).resolve()
    # Not a git checkout (an unpacked archive): the template sits at its root.
    is_template = (directory / "cookiecutter.json").is_file()
    return (directory.parent if is_template else directory).resolve()


def _looks_remote(template: str) -> bool:
    return "://" in template or template.startswith(("git@", "gh:", "gl:", "bb:"))


def resolve_requirement(template: str, commit: str | None) -> None:
    """Replace the default requirement with the template's source, everywhere it was rendered."""
    if CONTEXT["beam_agents_requirement"] != SOURCE:
        return
    remote = not Path(template).is_dir()
    if remote:
        pin = f"@{commit}" if commit else ""
        requirement = f"beam-agents @ git+{template}{pin}"
        modules = f"git::{template}//infra/modules/"
        ref = f"?ref={commit}" if commit else ""
    else:
        requirement = f"beam-agents @ {Path(template).as_uri()}"
        modules, ref = f"{template}/infra/modules/", ""
    pyproject = PROJECT / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    text = re.sub(
        r'"beam-agents(\[[^\]]*\])? @ file://' + re.escape(SOURCE_PATH) + '"',
        lambda m: json.dumps(requirement.replace("beam-agents", "beam-agents" + (m[1] or ""), 1)),
        text,
    )
    pyproject.write_text(text, encoding="utf-8")
    for path in sorted((PROJECT / "infra").glob("*.tf")):
        source = re.compile(r'"' + re.escape(SOURCE_PATH) + r'/infra/modules/([A-Za-z0-9_]+)"')
        tf = source.sub(lambda m: f'"{modules}{m[1]}{ref}"', path.read_text(encoding="utf-8"))
        path.write_text(tf, encoding="utf-8")


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


def write_cruft_state(template: str, directory: str | None, commit: str | None) -> None:
    """What `cruft create` would have recorded: template, subdirectory, commit."""
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
    use_framework()
    for name in unused_files():
        (PROJECT / name).unlink(missing_ok=True)
    template, directory, commit = template_source()
    resolve_requirement(template, commit)
    relative_module_sources()
    if "_commit" not in CONTEXT:
        write_cruft_state(template, directory, commit)
