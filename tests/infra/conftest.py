"""Fixtures for the offline Terraform checks: the provider schema and the infra tree."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest

from beam_agents.testing.pytest_plugin import service_unavailable
from tests.infra import tfschema

INFRA = Path(__file__).resolve().parents[2] / "infra"


@pytest.fixture(scope="session", autouse=True)
def _hcl2_v8() -> None:
    """The checker relies on python-hcl2 v8's `__is_block__` markers."""
    major = int(version("python-hcl2").split(".")[0])
    if major < 8:
        pytest.fail(f"python-hcl2 {version('python-hcl2')} is too old: tests/infra needs >= 8")


@pytest.fixture(scope="session")
def provider_schemas() -> Callable[[str], tfschema.ProviderSchema]:
    """`provider name -> schema`, fetched once from npm and cached outside the repo."""
    loaded: dict[str, tfschema.ProviderSchema] = {}

    def schemas(provider: str) -> tfschema.ProviderSchema:
        if provider not in loaded:
            try:
                loaded[provider] = tfschema.load(provider)
            except tfschema.SchemaUnavailable as exc:
                service_unavailable(
                    f"google provider schema unavailable, cannot check infra/: {exc}"
                )
        return loaded[provider]

    schemas("google")
    return schemas


@pytest.fixture(scope="session")
def terraform() -> str:
    """Path of the terraform binary (only `fmt` is used: it needs no provider)."""
    binary = shutil.which("terraform") or "/usr/local/bin/terraform"
    if not Path(binary).exists():
        service_unavailable("terraform binary not found; cannot run terraform fmt")
    return binary


@pytest.fixture
def scratch_infra(tmp_path: Path) -> Path:
    """A throwaway copy of infra/ that a test may break on purpose."""
    target = tmp_path / "infra"
    shutil.copytree(INFRA, target, ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*"))
    return target
