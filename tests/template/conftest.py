"""Fixtures for the template tests: session bakes, the Terraform schema and binary."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Helpers beside this file, and the offline Terraform checker beside the infra tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "infra"))
import tfschema
from baking import COMBINATIONS, bake_into, combination_answers

REQUIRE_SERVICES = os.environ.get("BEAM_AGENTS_REQUIRE_SERVICES") == "1"
Bake = Callable[..., Path]


@pytest.fixture
def bake(tmp_path: Path) -> Bake:
    """Bake into this test's temp dir."""
    return lambda **answers: bake_into(tmp_path / "bakes", **answers)


@pytest.fixture(scope="session")
def baked_combinations(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], Path]:
    """Every backend x provider x HITL combination, baked once for the session."""
    root = tmp_path_factory.mktemp("combinations")
    return {combo: bake_into(root, **combination_answers(*combo)) for combo in COMBINATIONS}


def _unavailable(message: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{message} (BEAM_AGENTS_REQUIRE_SERVICES=1)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def provider_schema() -> tfschema.ProviderSchema:
    """The google provider's schema (fetched once from npm, cached outside the repo)."""
    try:
        return tfschema.load("google")
    except tfschema.SchemaUnavailable as exc:
        _unavailable(f"google provider schema unavailable: {exc}")
        raise


@pytest.fixture(scope="session")
def terraform() -> str:
    binary = shutil.which("terraform") or "/usr/local/bin/terraform"
    if not Path(binary).exists():
        _unavailable("terraform binary not found; cannot run terraform fmt")
    return binary
