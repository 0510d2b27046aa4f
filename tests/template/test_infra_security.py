"""The generated infra/ is secure by default: private workers, a GCS backend, scoped grants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.infra import tfcheck
from tests.template.baking import BACKENDS, Bake, combination_answers


def _resources(infra: Path) -> dict[tuple[str, str], dict[str, Any]]:
    module = tfcheck.parse_module(infra)
    return {(kind, name): body for _, kind, name, body in module.typed_blocks("resource")}


def _terraform_block(infra: Path) -> dict[str, Any]:
    module = tfcheck.parse_module(infra)
    (block,) = [b for doc in module.files.values() for b in doc.get("terraform", [])]
    return dict(block)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_project_runs_its_workers_in_a_private_subnetwork(bake: Bake, backend: str) -> None:
    infra = bake(**combination_answers(backend, "fake", "no")) / "infra"
    resources = _resources(infra)

    subnetwork = resources[("google_compute_subnetwork", "workers")]
    assert subnetwork["private_ip_google_access"] is True
    (flow_logs,) = subnetwork["log_config"]
    assert flow_logs["metadata"] == "INCLUDE_ALL_METADATA"
    (rule,) = [body for (kind, _), body in resources.items() if kind == "google_compute_firewall"]
    assert rule["source_tags"] == rule["target_tags"] == ["dataflow"]
    (allow,) = rule["allow"]
    assert (allow["protocol"], allow["ports"]) == ("tcp", ["12345-12346"])
    outputs = tfcheck.parse_module(infra).outputs()
    assert outputs["subnetwork"]["value"] == "${google_compute_subnetwork.workers.self_link}"


@pytest.mark.parametrize(
    ("provider", "nat"), [("fake", False), ("gemini", False), ("openai", True)]
)
def test_cloud_nat_only_for_a_model_outside_google(bake: Bake, provider: str, nat: bool) -> None:
    infra = bake(**combination_answers("bigtable", provider, "no")) / "infra"
    assert (("google_compute_router_nat", "workers") in _resources(infra)) is nat


@pytest.mark.parametrize("backend", ["none", "bigtable", "postgres", "redis"])
def test_state_goes_to_a_gcs_backend_and_write_only_needs_terraform_1_11(
    bake: Bake, backend: str
) -> None:
    """Every project writes its entity hashing key write-only, drawn by the random provider."""
    project = bake(**combination_answers(backend, "fake", "no"))
    terraform = _terraform_block(project / "infra")
    (backend_block,) = terraform["backend"]
    assert backend_block["gcs"]["prefix"] == project.name
    assert terraform["required_version"] == ">= 1.11"
    (providers,) = terraform["required_providers"]
    assert providers["random"]["source"] == "hashicorp/random"
    assert providers["random"]["version"] == ">= 3.7, < 4.0"


def test_only_the_worker_may_read_the_store_uri_secret(bake: Bake) -> None:
    infra = bake(**combination_answers("redis", "fake", "no")) / "infra"
    resources = _resources(infra)

    grants = [
        body
        for (kind, _), body in resources.items()
        if "secret_manager" in kind and "longterm" in str(body.get("secret_id"))
    ]
    assert grants == [
        {
            "project": "${var.project_id}",
            "secret_id": "${module.memory.longterm_secret_id}",
            "role": "roles/secretmanager.secretAccessor",
            "member": "serviceAccount:${module.runtime.service_account_email}",
            "__is_block__": True,
        }
    ]
    calls = {label: body for _, label, body in tfcheck.parse_module(infra).blocks("module")}
    assert "worker_service_account" not in calls["memory"]


def test_cloud_sql_workers_sign_in_with_iam_and_no_uri_secret_exists(bake: Bake) -> None:
    """The postgres project passes the worker to the module for its IAM user and roles."""
    infra = bake(**combination_answers("postgres", "fake", "no")) / "infra"
    resources = _resources(infra)

    assert not [name for kind, name in resources if "secret_manager" in kind and "longterm" in name]
    assert not (infra / "longterm_secret.tf").exists()
    calls = {label: body for _, label, body in tfcheck.parse_module(infra).blocks("module")}
    memory = calls["memory"]
    assert memory["worker_service_account"] == "${module.runtime.service_account_email}"
    assert "auth_mode" not in memory, "IAM sign-in is the module's default"


def test_answers_are_published_by_approvers_alone(bake: Bake) -> None:
    infra = bake(**combination_answers("bigtable", "fake", "yes")) / "infra"
    calls = {label: body for _, label, body in tfcheck.parse_module(infra).blocks("module")}
    assert calls["runtime"]["input_publishers"] == {"answers": "${var.approvers}"}


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_the_image_carries_the_store_ca_the_uri_verifies_against(bake: Bake, backend: str) -> None:
    project = bake(**combination_answers(backend, "fake", "no"))
    dockerfile = (project / "Dockerfile").read_text()
    package = project.name.replace("-", "_")
    if backend == "redis":
        assert "COPY certs/redis-ca.pem certs/redis-ca.pem" in dockerfile
        calls = {
            label: body
            for _, label, body in tfcheck.parse_module(project / "infra").blocks("module")
        }
        assert calls["memory"]["ca_path"] == f"/opt/{package}/certs/redis-ca.pem"
    else:
        assert f"PGSSLROOTCERT=/opt/{package}/certs/cloudsql-ca.pem" in dockerfile


def test_the_image_tag_is_never_latest(bake: Bake) -> None:
    makefile = (bake(**combination_answers("none", "fake", "no")) / "Makefile").read_text()
    assert "latest" not in makefile
    assert "IMAGE_TAG := $(shell git rev-parse --short HEAD" in makefile


def _key_call(infra: Path, key: str, output: str) -> dict[str, Any]:
    """The call of modules/generated_key for one key: its secret, the worker, its output."""
    module = tfcheck.parse_module(infra)
    assert not list(module.blocks("ephemeral")), "keys are drawn in modules/generated_key"
    calls = {label: body for _, label, body in module.blocks("module")}
    call = calls[f"{key}_key"]
    assert str(call["source"]).endswith("/infra/modules/generated_key")
    assert call["secret_id"] == f"${{local.name}}-{key.replace('_', '-')}"
    assert call["worker_service_account"] == "${module.runtime.service_account_email}"
    value = module.outputs()[output]
    assert value["value"] == f"${{module.{key}_key.version_name}}"
    assert value.get("sensitive") is not True
    return dict(call)


def _moves(infra: Path) -> dict[str, str]:
    module = tfcheck.parse_module(infra)
    assert [str(finding) for finding in tfcheck.check_moved(module)] == []
    return {
        str(block["from"]).strip("${}"): str(block["to"]).strip("${}")
        for document in module.files.values()
        for block in document.get("moved", [])
    }


def _key_moves(key: str) -> dict[str, str]:
    """Where a key's resources stood in keys.tf before modules/generated_key."""
    secret = "google_secret_manager_secret"
    return {
        f"{secret}.{key}": f"module.{key}_key.{secret}.this",
        f"{secret}_version.{key}": f"module.{key}_key.{secret}_version.this",
        f"{secret}_iam_member.{key}_worker": f"module.{key}_key.{secret}_iam_member.worker",
    }


@pytest.mark.parametrize("backend", ["none", "redis"])
def test_the_entity_hash_key_is_generated_and_read_by_the_workers_alone(
    bake: Bake, backend: str
) -> None:
    """The key is drawn in modules/generated_key; an existing project keeps its own."""
    infra = bake(**combination_answers(backend, "fake", "no")) / "infra"

    call = _key_call(infra, "entity_hash", "entity_hash_key_version")
    assert "readers" not in call
    modules = {label for _, label, _ in tfcheck.parse_module(infra).blocks("module")}
    assert "answer_signing_key" not in modules
    assert _moves(infra) == _key_moves("entity_hash")


def test_the_answer_signing_key_is_read_by_the_workers_and_the_signers_alone(bake: Bake) -> None:
    """The console's identity (answer_signers) signs; nobody else may read the key."""
    infra = bake(**combination_answers("bigtable", "fake", "yes")) / "infra"

    _key_call(infra, "entity_hash", "entity_hash_key_version")
    call = _key_call(infra, "answer_signing", "answer_signing_key_version")
    assert call["readers"] == "${var.answer_signers}"
    assert tfcheck.parse_module(infra).variables()["answer_signers"]["default"] == []
    assert _moves(infra) == {
        **_key_moves("entity_hash"),
        **_key_moves("answer_signing"),
        "google_secret_manager_secret_iam_member.answer_signing_signer": (
            "module.answer_signing_key.google_secret_manager_secret_iam_member.reader"
        ),
    }
    resources = _resources(infra)
    assert not [name for kind, name in resources if kind.startswith("google_secret_manager")]
