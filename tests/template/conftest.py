"""Fixtures for the template tests: session bakes, the Terraform schema and binary."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from beam_agents.testing.pytest_plugin import service_unavailable
from tests.infra import tfschema
from tests.template.baking import COMBINATIONS, Bake, bake_into, combination_answers


@pytest.fixture
def bake(tmp_path: Path) -> Bake:
    """Bake into this test's temp dir."""
    return lambda **answers: bake_into(tmp_path / "bakes", **answers)


@pytest.fixture(scope="session")
def baked_combinations(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], Path]:
    """Every backend x provider x HITL combination, baked once for the session."""
    root = tmp_path_factory.mktemp("combinations")
    return {combo: bake_into(root, **combination_answers(*combo)) for combo in COMBINATIONS}


@pytest.fixture(scope="session")
def provider_schema() -> tfschema.ProviderSchema:
    """The google provider's schema (fetched once from npm, cached outside the repo)."""
    try:
        return tfschema.load("google")
    except tfschema.SchemaUnavailable as exc:
        service_unavailable(f"google provider schema unavailable: {exc}")
        raise


@pytest.fixture(scope="session")
def terraform() -> str:
    binary = shutil.which("terraform") or "/usr/local/bin/terraform"
    if not Path(binary).exists():
        service_unavailable("terraform binary not found; cannot run terraform fmt")
    return binary
