"""The triage image installs from app/requirements.lock: pinned, hashed, sufficient, the lock's.

Docker is not run here; these read the Dockerfile and the lock as text.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from app.deploy import EXTRAS

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = (REPO / "app" / "Dockerfile").read_text()
LOCK = (REPO / "app" / "requirements.lock").read_text()
CONSTRAINTS = (REPO / "constraints.txt").read_text()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: The image's Python: the Beam SDK base image is `apache/beam_python3.11_sdk`.
IMAGE_PYTHON = {"python_version": "3.11", "python_full_version": "3.11.0"}
IMAGE_PLATFORM = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"}


def _entries(lock: str) -> list[tuple[str, list[str]]]:
    """Each requirement of the lock with its `--hash` options, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", lock)
    entries = []
    for line in joined.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, *options = line.split(" --")
        entries.append((requirement.strip(), [f"--{o.strip()}" for o in options]))
    return entries


def _pins(lock: str) -> dict[str, Version]:
    pins = {}
    for requirement, _ in _entries(lock):
        name, _, version = requirement.partition("==")
        pins[canonicalize_name(name)] = Version(version)
    return pins


def _image_extras() -> list[str]:
    (extras,) = re.findall(r"^ARG EXTRAS=(\S+)$", DOCKERFILE, re.M)
    return extras.split(",")


def test_the_image_installs_only_from_the_lock_with_hashes_required() -> None:
    (install,) = re.findall(r"^RUN .*?(?<!\\)$", DOCKERFILE, re.M | re.S)[:1]
    commands = [c.strip() for c in re.split(r"&&|\|\|", install.replace("\\\n", " "))]
    pip_installs = [c for c in commands if c.startswith("pip install")]
    assert pip_installs == [
        "pip install --no-cache-dir --require-hashes --no-deps -r app/requirements.lock",
        "pip install --no-cache-dir --no-deps --no-build-isolation .",
    ]
    assert "pip check" in commands


def test_the_lock_covers_exactly_the_extras_the_image_and_deploy_install() -> None:
    (locked,) = re.findall(r"^ARG LOCKED_EXTRAS=(\S+)$", DOCKERFILE, re.M)
    assert _image_extras() == locked.split(",") == EXTRAS.split(",")
    (command,) = re.findall(r"^#\s+uv pip compile (.*)$", LOCK, re.M)
    assert sorted(re.findall(r"--extra (\S+)", command)) == sorted(_image_extras())
    assert "--generate-hashes" in command
    assert "--python-version 3.11" in command
    assert "--constraint constraints.txt" in command


def test_every_lock_line_is_pinned_with_a_sha256_hash() -> None:
    entries = _entries(LOCK)
    assert len(entries) > 50
    for requirement, options in entries:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][A-Za-z0-9.+!-]*", requirement), (
            requirement
        )
        hashes = [o for o in options if o.startswith("--hash=")]
        assert hashes, f"{requirement} has no --hash"
        assert all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in hashes), requirement
        assert hashes == options, f"{requirement}: options other than --hash: {options}"


def test_no_index_or_find_links_is_baked_into_the_lock() -> None:
    """The lock names no machine's mirror; pip uses the image's own index settings."""
    assert not re.search(r"^\s*--(index-url|extra-index-url|find-links|trusted-host)", LOCK, re.M)


def test_the_lock_satisfies_pyprojects_requirements_for_the_image_extras() -> None:
    pins = _pins(LOCK)
    project = PYPROJECT["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    for extra in _image_extras():
        wanted += [Requirement(r) for r in project["optional-dependencies"][extra]]
    wanted += [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    for requirement in wanted:
        environment = {**IMAGE_PYTHON, **IMAGE_PLATFORM, "extra": ""}
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in the lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"lock pins {name}=={pins[name]}, pyproject wants {requirement}"
        )


def test_the_image_lock_holds_the_versions_of_the_projects_lock() -> None:
    """One set: the image's lock is constraints.txt narrowed to its Python and extras."""
    environment = {**IMAGE_PYTHON, **IMAGE_PLATFORM, "extra": ""}
    project: dict[str, Version] = {}
    for requirement, _ in _entries(CONSTRAINTS):
        pin, _, marker = requirement.partition(";")
        if marker.strip() and not Marker(marker.strip()).evaluate(environment):
            continue
        name, _, version = pin.partition("==")
        project[canonicalize_name(name.strip())] = Version(version.strip())
    image = _pins(LOCK)
    differ = {n: (v, project.get(n)) for n, v in image.items() if project.get(n) != v}
    assert not differ, (
        f"app/requirements.lock and constraints.txt disagree, run make lock: {differ}"
    )


def test_the_locked_beam_is_the_base_images_sdk() -> None:
    """The image's Beam SDK and the lock's apache-beam must be the same release."""
    (image,) = re.findall(r"^ARG BEAM_IMAGE=apache/beam_python3\.11_sdk:(\S+)$", DOCKERFILE, re.M)
    assert _pins(LOCK)["apache-beam"] == Version(image)
