"""Run what a user without the lock would get today, and name what breaks it.

`pip install beam-agents` resolves the newest versions pyproject.toml's ranges
allow on the day it runs; the lock (constraints.txt) holds the versions CI ran.
The two drift apart every time an upstream package releases. This check
installs the project into a fresh virtualenv with no lock, runs the core tests,
the README's and the docs' code and a baked project's `make run` there, and
when a step fails it finds the package to blame: for each package whose
version differs from the lock (the project's own requirements first), it puts
the lock's version back alone and runs the failed part again. The first
package whose locked version makes the failure go away is named, with both
versions. Nothing here reads the wall clock or a network beyond pip's.

Run by `make newest` and by .ci/run. It runs in two phases: the first, under
any Python, makes the virtualenv and installs; the second runs inside that
virtualenv, where `packaging` reads the lock's markers as pip does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE_TESTS = ROOT / ".ci" / "core-tests"
EXTRAS = "memory-stores,providers,console,tools,dev"
#: The README's quickstart and every block of the docs, as a user copies them; blocks that
#: import ADK or LangGraph need extras this check does not install (`make test` runs them).
DOC_TESTS = ["-m", "not framework_extras", "tests/test_readme.py", "tests/test_docs_blocks.py"]
#: The local embedder's tests need its extra, which this check does not install: it pins
#: torch exactly (the CPU build on disk) and runs under `make test` with the lock's.
NOT_IN_EXTRAS = ["-m", "not local_embeddings"]
STEP_TIMEOUT_S = 3600
#: Packages tried one by one when a step fails; past it the drift is listed, not bisected.
MAX_SUSPECTS = 40


@dataclass(frozen=True)
class Drift:
    """A package whose installed version is not the lock's."""

    name: str
    installed: str
    locked: str | None

    def __str__(self) -> str:
        locked = f"lock {self.locked}" if self.locked else "not in the lock"
        return f"{self.name} {self.installed} ({locked})"


def say(message: str) -> None:
    print(f"newest: {message}", flush=True)


def run(command: list[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None) -> bool:
    say("$ " + " ".join(command))
    done = subprocess.run(command, cwd=cwd, env=env, timeout=STEP_TIMEOUT_S, check=False)
    return done.returncode == 0


# --- phase 1: a fresh virtualenv with the newest versions ------------------------------


def install(venv: Path) -> None:
    """A new virtualenv and the project, resolved by pip with no lock and no cache of pins."""
    if venv.exists():
        shutil.rmtree(venv)
    python = venv / "bin" / "python"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        [str(python), "-m", "pip", "install", "--quiet", "-e", f".[{EXTRAS}]"],
    ]
    for step in steps:
        if not run(step):
            say("FAILED: pip could not install the newest versions the ranges allow")
            sys.exit(1)


# --- phase 2: inside the virtualenv ------------------------------------------------------


def locked_versions(lock: Path) -> dict[str, str]:
    """The lock's pin of each package that applies to this interpreter."""
    from packaging.markers import Marker
    from packaging.utils import canonicalize_name

    pins: dict[str, str] = {}
    for raw in lock.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-") or "==" not in line:
            continue
        requirement, _, marker = line.partition(";")
        if marker.strip() and not Marker(marker.strip()).evaluate():
            continue
        name, _, version = requirement.partition("==")
        pins[canonicalize_name(name.split("[", 1)[0].strip())] = version.strip()
    return pins


def installed_versions() -> dict[str, str]:
    from importlib.metadata import distributions

    from packaging.utils import canonicalize_name

    return {canonicalize_name(d.metadata["Name"]): d.version for d in distributions()}


def direct_requirements() -> list[str]:
    """The project's own requirements, in pyproject.toml's order, each named once."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = list(project["dependencies"])
    for extra in EXTRAS.split(","):
        declared += project["optional-dependencies"][extra]
    names: list[str] = []
    for text in declared:
        name = canonicalize_name(Requirement(text).name)
        if name not in names:
            names.append(name)
    return names


def drift(lock: Path) -> list[Drift]:
    """Every installed package not at the lock's version: the project's own first."""
    from packaging.version import Version

    pins = locked_versions(lock)
    ours = ("beam-agents", "pip")  # the project itself, and the installer
    found = {
        name: Drift(name, version, pins.get(name))
        for name, version in installed_versions().items()
        if name not in ours and (name not in pins or Version(version) != Version(pins[name]))
    }
    direct = [found.pop(name) for name in direct_requirements() if name in found]
    return direct + [found[name] for name in sorted(found)]


@dataclass(frozen=True)
class Step:
    """One thing a user does; `again` repeats only what failed."""

    name: str
    command: list[str]
    again: list[str]
    cwd: Path = ROOT
    env: dict[str, str] | None = None


def pytest_step(name: str, tests: list[str], cache: Path) -> Step:
    base = [sys.executable, "-m", "pytest", "-q", "-o", f"cache_dir={cache}", *tests]
    return Step(name, base, [*base, "--last-failed", "--last-failed-no-failures", "none"])


def baked_project_step(work: Path, venv: Path) -> Step:
    """The template baked with its defaults, then its `make run`, in this virtualenv.

    CONSTRAINTS= makes the project's setup skip its copy of the lock, so pip
    adds the project to these newest versions instead of pinning them back.
    """
    project = work / "fraud-desk"
    if not project.exists():
        config = work / "cookiecutter.yaml"
        config.write_text(f"cookiecutters_dir: {work / 'cc'}\nreplay_dir: {work / 'replay'}\n")
        bake = [
            sys.executable,
            "-m",
            "cookiecutter",
            "--no-input",
            "--config-file",
            str(config),
            "--output-dir",
            str(work),
            str(ROOT / "template"),
            f"beam_agents_requirement=beam-agents @ {ROOT.as_uri()}",
        ]
        if not run(bake):
            say("FAILED: the template did not bake")
            sys.exit(1)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    command = ["make", "run", f"VENV={venv}", "CONSTRAINTS="]
    return Step("a baked project's make run", command, command, cwd=project, env=env)


def blame(step: Step, suspects: list[Drift]) -> Drift | None:
    """The first suspect whose locked version alone makes the failed step pass again."""
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    for suspect in suspects[:MAX_SUSPECTS]:
        if suspect.locked is None:
            continue
        say(f"trying {suspect.name} {suspect.locked} (the lock's) in place of {suspect.installed}")
        if not run([*pip, f"{suspect.name}=={suspect.locked}"]):
            continue
        passed = run(step.again, cwd=step.cwd, env=step.env)
        run([*pip, f"{suspect.name}=={suspect.installed}"])
        if passed:
            return suspect
    return None


def check(venv: Path, lock: Path, workers: int) -> int:
    drifted = drift(lock)
    if drifted:
        say(f"{len(drifted)} packages differ from {lock.name}:")
        for item in drifted:
            say(f"  {item}")
    else:
        say(f"every package is at {lock.name}'s version")
    cache = venv / ".pytest_cache"
    core = [
        line.strip()
        for line in CORE_TESTS.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parallel = ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else []
    work = Path(tempfile.mkdtemp(prefix="newest-", dir=venv))
    steps = [
        pytest_step("the core tests", [*NOT_IN_EXTRAS, *parallel, *core], cache / "core"),
        pytest_step("the README's quickstart and the docs' code", DOC_TESTS, cache / "docs"),
        baked_project_step(work, venv),
    ]
    for step in steps:
        say(f"== {step.name}")
        if run(step.command, cwd=step.cwd, env=step.env):
            continue
        say(f"FAILED: {step.name}, on the newest versions the ranges allow")
        culprit = blame(step, drifted)
        if culprit is None:
            say(
                "no single package's locked version makes it pass: "
                "the packages that differ from the lock are listed above"
            )
        else:
            say(
                f"FAILED: {culprit.name} {culprit.installed} breaks {step.name} "
                f"(with {culprit.name} {culprit.locked}, the lock's, it passes). "
                f"Bound it below {culprit.installed} in pyproject.toml, or fix the code "
                "and refresh the lock (docs/development.md)"
            )
        return 1
    say("passed: the newest versions the ranges allow run the core tests, the docs and a project")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-newest")
    parser.add_argument("--lock", type=Path, default=ROOT / "constraints.txt")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers")
    parser.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    venv, lock = args.venv.resolve(), args.lock.resolve()
    if args.in_venv:
        return check(venv, lock, args.workers)
    install(venv)
    again = [str(venv / "bin" / "python"), __file__, "--in-venv", "--venv", str(venv)]
    again += ["--lock", str(lock), "--workers", str(args.workers)]
    return subprocess.run(again, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
