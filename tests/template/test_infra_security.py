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


def _readers(resources: dict[tuple[str, str], dict[str, Any]], secret: str) -> set[str]:
    """The IAM grants on one of the root module's secrets."""
    return {
        name
        for (kind, name), body in resources.items()
        if kind == "google_secret_manager_secret_iam_member"
        and body.get("secret_id") == f"${{google_secret_manager_secret.{secret}.secret_id}}"
    }


def _check_key(
    infra: Path, resources: dict[tuple[str, str], dict[str, Any]], key: str, output: str
) -> None:
    """A key drawn ephemeral, written write-only, read by the worker, output by version."""
    module = tfcheck.parse_module(infra)
    assert ("random_password", key) in {(t, n) for _, t, n, _ in module.typed_blocks("ephemeral")}
    assert ("random_password", key) not in resources
    secret = resources[("google_secret_manager_secret", key)]
    assert secret["secret_id"] == f"${{local.name}}-{key.replace('_', '-')}"
    version = resources[("google_secret_manager_secret_version", key)]
    assert "secret_data" not in version
    assert version["secret_data_wo"] == f"${{ephemeral.random_password.{key}.result}}"
    worker = resources[("google_secret_manager_secret_iam_member", f"{key}_worker")]
    assert worker["role"] == "roles/secretmanager.secretAccessor"
    assert worker["member"] == "serviceAccount:${module.runtime.service_account_email}"
    value = module.outputs()[output]
    assert value["value"] == f"${{google_secret_manager_secret_version.{key}.name}}"
    assert value.get("sensitive") is not True


@pytest.mark.parametrize("backend", ["none", "redis"])
def test_the_entity_hash_key_is_ephemeral_and_read_by_the_workers_alone(
    bake: Bake, backend: str
) -> None:
    infra = bake(**combination_answers(backend, "fake", "no")) / "infra"
    resources = _resources(infra)

    _check_key(infra, resources, "entity_hash", "entity_hash_key_version")
    assert _readers(resources, "entity_hash") == {"entity_hash_worker"}
    assert ("google_secret_manager_secret", "answer_signing") not in resources


def test_the_answer_signing_key_is_read_by_the_workers_and_the_signers_alone(bake: Bake) -> None:
    """The console's identity (answer_signers) signs; nobody else may read the key."""
    infra = bake(**combination_answers("bigtable", "fake", "yes")) / "infra"
    resources = _resources(infra)

    _check_key(infra, resources, "answer_signing", "answer_signing_key_version")
    signer = resources[("google_secret_manager_secret_iam_member", "answer_signing_signer")]
    assert signer["role"] == "roles/secretmanager.secretAccessor"
    assert signer["for_each"] == "${toset(var.answer_signers)}"
    assert signer["member"] == "${each.value}"
    assert _readers(resources, "answer_signing") == {
        "answer_signing_worker",
        "answer_signing_signer",
    }
    assert tfcheck.parse_module(infra).variables()["answer_signers"]["default"] == []
