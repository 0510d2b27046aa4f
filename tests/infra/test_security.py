"""Offline checks that infra/ is secure by default: private workers, grants, backups, state."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.infra import tfcheck

INFRA = Path(__file__).resolve().parents[2] / "infra"
EXAMPLES = sorted(path.name for path in (INFRA / "examples").iterdir() if path.is_dir())
MODULES = sorted(path.name for path in (INFRA / "modules").iterdir() if path.is_dir())
#: The Dataflow ports workers use to talk to each other (shuffle and streaming).
DATAFLOW_PORTS = ["12345-12346"]


def _resources(where: str) -> dict[tuple[str, str], dict[str, Any]]:
    module = tfcheck.parse_module(INFRA / where)
    return {(kind, name): body for _, kind, name, body in module.typed_blocks("resource")}


def _one(block: Any) -> dict[str, Any]:
    """A nested block parses as a list of one body."""
    assert isinstance(block, list), block
    (body,) = block
    assert isinstance(body, dict)
    return body


def _dynamic_content(body: dict[str, Any], name: str) -> dict[str, Any]:
    dynamic = {key: value for entry in body.get("dynamic", []) for key, value in entry.items()}
    return _one(dynamic[name]["content"])


# --- private workers ------------------------------------------------------------------


def test_the_job_always_asks_for_private_worker_ips_in_a_given_subnetwork() -> None:
    module = tfcheck.parse_module(INFRA / "modules" / "dataflow_job")
    (job,) = _resources("modules/dataflow_job").values()
    assert job["ip_configuration"] == "WORKER_IP_PRIVATE"
    assert job["subnetwork"] == "${var.subnetwork}"
    assert "default" not in module.variables()["subnetwork"], "a subnetwork must be given"


def test_the_workers_subnetwork_has_private_google_access_and_flow_logs() -> None:
    resources = _resources("modules/triage_deployment")
    subnetwork = resources[("google_compute_subnetwork", "workers")]
    assert "count" not in subnetwork, "every deployment gets it, whatever the store"
    assert subnetwork["private_ip_google_access"] is True
    assert _one(subnetwork["log_config"])["metadata"] == "INCLUDE_ALL_METADATA"
    network = resources[("google_compute_network", "this")]
    assert network["auto_create_subnetworks"] is False
    job = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    (call,) = [body for _, label, body in job.blocks("module") if label == "job"]
    assert call["subnetwork"] == "${google_compute_subnetwork.workers.self_link}"


def test_the_only_ingress_rule_is_worker_to_worker_on_the_dataflow_ports() -> None:
    resources = _resources("modules/triage_deployment")
    rules = [body for (kind, _), body in resources.items() if kind == "google_compute_firewall"]
    (rule,) = rules
    assert rule["direction"] == "INGRESS"
    assert rule["source_tags"] == rule["target_tags"] == ["${local.worker_tag}"]
    assert "source_ranges" not in rule
    (allow,) = rule["allow"]
    assert allow == {"protocol": "tcp", "ports": DATAFLOW_PORTS, "__is_block__": True}
    module = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    assert {label: body for _, label, body in module.blocks("locals")}["worker_tag"] == "dataflow"


def test_cloud_nat_exists_only_for_a_model_outside_google() -> None:
    resources = _resources("modules/triage_deployment")
    for key in (("google_compute_router", "nat"), ("google_compute_router_nat", "workers")):
        assert resources[key]["count"] == "${local.nat}", key
    locals_ = {
        label: body
        for _, label, body in tfcheck.parse_module(INFRA / "modules" / "triage_deployment").blocks(
            "locals"
        )
    }
    assert "gemini:" in locals_["google_model"]
    assert '"fake", "rules"' in locals_["google_model"]
    assert locals_["nat"] == "${coalesce(var.enable_nat, !local.google_model) ? 1 : 0}"


def test_make_deploy_always_disables_public_ips() -> None:
    source = (INFRA.parent / "app" / "deploy.py").read_text()
    assert '"--disable-public-ips",' in source
    assert "f\"--subnetwork={values['subnetwork']}\"," in source


# --- who can do what ------------------------------------------------------------------


def test_flex_template_specs_live_in_a_bucket_the_worker_can_only_read() -> None:
    module = tfcheck.parse_module(INFRA / "modules" / "dataflow_runtime")
    resources = _resources("modules/dataflow_runtime")
    assert "google_storage_bucket.templates.name" in module.outputs()["template_path"]["value"]
    readers = resources[("google_storage_bucket_iam_member", "templates_reader")]
    assert readers["role"] == "roles/storage.objectViewer"
    assert readers["for_each"] == {"worker": "${local.worker}", "build": "${local.build}"}
    writable = resources[("google_storage_bucket_iam_member", "worker")]
    assert writable["role"] == "roles/storage.objectAdmin"
    assert set(writable["for_each"]) == {"staging", "temp"}
    assert "templates" not in str(writable["for_each"])


def test_the_staging_bucket_expires_what_was_staged() -> None:
    staging = _resources("modules/dataflow_runtime")[("google_storage_bucket", "staging")]
    rule = _dynamic_content(staging, "lifecycle_rule")
    assert _one(rule["condition"])["age"] == "${lifecycle_rule.value}"
    assert _one(rule["action"])["type"] == "Delete"


def test_images_are_built_by_a_build_account_that_can_only_push_read_sources_and_log() -> None:
    resources = _resources("modules/dataflow_runtime")
    grants = {
        (kind, body["role"])
        for (kind, _), body in resources.items()
        if kind.endswith("_iam_member") and body.get("member") == "${local.build}"
    }
    assert grants == {
        ("google_project_iam_member", "roles/logging.logWriter"),
        ("google_artifact_registry_repository_iam_member", "roles/artifactregistry.writer"),
    }
    outputs = tfcheck.parse_module(INFRA / "modules" / "dataflow_runtime").outputs()
    assert outputs["build_service_account"]["value"] == "${google_service_account.build.id}"
    cloudbuild = (INFRA.parent / "app" / "cloudbuild.yaml").read_text()
    assert "logging: CLOUD_LOGGING_ONLY" in cloudbuild
    assert "serviceAccount" in cloudbuild


def test_image_tags_are_immutable() -> None:
    repository = _resources("modules/dataflow_runtime")[
        ("google_artifact_registry_repository", "images")
    ]
    assert _one(repository["docker_config"])["immutable_tags"] is True


def test_approvers_get_a_publisher_grant_on_the_answers_topic_alone() -> None:
    module = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    (runtime,) = [body for _, label, body in module.blocks("module") if label == "runtime"]
    assert "answers = var.approvers" in runtime["input_publishers"]
    grant = _resources("modules/dataflow_runtime")[
        ("google_pubsub_topic_iam_member", "input_publisher")
    ]
    assert grant["role"] == "roles/pubsub.publisher"
    assert grant["topic"] == "${google_pubsub_topic.this[each.value.topic].name}"


@pytest.mark.parametrize("name", ["postgres_store", "redis_store"])
def test_the_worker_may_read_only_the_secret_it_reads(name: str) -> None:
    """One secret per store, holding the URI the worker opens; no unused password secret."""
    resources = _resources(f"modules/{name}")
    secrets = [key for key in resources if key[0] == "google_secret_manager_secret"]
    assert secrets == [("google_secret_manager_secret", "uri")]
    assert ("random_password", "user") not in resources


# --- no secret in state -----------------------------------------------------------------


def test_the_cloud_sql_password_is_ephemeral_and_written_only_write_only() -> None:
    module = tfcheck.parse_module(INFRA / "modules" / "postgres_store")
    ephemerals = {label for _, label, _ in module.blocks("ephemeral")}
    assert ephemerals == {"random_password"}
    user = _resources("modules/postgres_store")[("google_sql_user", "this")]
    assert "password" not in user
    assert user["password_wo"] == "${ephemeral.random_password.user[0].result}"
    assert user["password_wo_version"] == "${var.rotation}"


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_keeps_its_state_in_a_gcs_backend(name: str) -> None:
    module = tfcheck.parse_module(INFRA / "examples" / name)
    (terraform,) = [block for doc in module.files.values() for block in doc.get("terraform", [])]
    (backend,) = terraform["backend"]
    assert backend["gcs"]["prefix"] == f"beam-agents/{name}"


def test_the_state_bucket_is_private_versioned_and_optionally_cmek() -> None:
    bucket = _resources("bootstrap")[("google_storage_bucket", "state")]
    assert bucket["uniform_bucket_level_access"] is True
    assert bucket["public_access_prevention"] == "enforced"
    assert _one(bucket["versioning"])["enabled"] is True
    assert _dynamic_content(bucket, "encryption")["default_kms_key_name"] == "${encryption.value}"


# --- backups and the database ---------------------------------------------------------


def test_bigtable_takes_automated_backups_by_default() -> None:
    module = tfcheck.parse_module(INFRA / "modules" / "bigtable_store")
    table = _resources("modules/bigtable_store")[("google_bigtable_table", "memory")]
    policy = _dynamic_content(table, "automated_backup_policy")
    assert policy["retention_period"] == "${automated_backup_policy.value}"
    assert module.variables()["backup_retention"]["default"] == "604800s"


def test_firestore_has_point_in_time_recovery_and_a_daily_backup_schedule() -> None:
    resources = _resources("modules/firestore_store")
    database = resources[("google_firestore_database", "this")]
    assert database["point_in_time_recovery_enablement"] == "POINT_IN_TIME_RECOVERY_ENABLED"
    schedule = resources[("google_firestore_backup_schedule", "daily")]
    assert schedule["database"] == "${local.database}"
    assert "daily_recurrence" in schedule


def test_cloud_sql_has_backups_pitr_iam_authentication_and_the_cis_logging_flags() -> None:
    settings = _one(
        _resources("modules/postgres_store")[("google_sql_database_instance", "this")]["settings"]
    )
    backups = _one(settings["backup_configuration"])
    assert backups["enabled"] is True
    assert backups["point_in_time_recovery_enabled"] is True
    ip = _one(settings["ip_configuration"])
    assert ip["ipv4_enabled"] is False
    assert ip["server_ca_mode"] == "GOOGLE_MANAGED_INTERNAL_CA"
    locals_ = {
        label: body
        for _, label, body in tfcheck.parse_module(INFRA / "modules" / "postgres_store").blocks(
            "locals"
        )
    }
    flags = locals_["database_flags"]
    assert flags["cloudsql.iam_authentication"] == "on"
    for flag in ("log_checkpoints", "log_connections", "log_disconnections", "log_lock_waits"):
        assert flags[flag] == "on", flag
    assert flags["log_min_duration_statement"] == "-1"
    assert flags["cloudsql.enable_pgaudit"] == "on"


def test_the_cloud_sql_uri_verifies_the_server_against_the_instance_ca() -> None:
    version = _resources("modules/postgres_store")[("google_secret_manager_secret_version", "uri")]
    assert str(version["secret_data_wo"]).endswith("?ssl=verify-ca")
    dockerfile = (INFRA.parent / "app" / "Dockerfile").read_text()
    assert "PGSSLROOTCERT=/opt/triage/app/certs/cloudsql-ca.pem" in dockerfile


# --- CMEK -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [m for m in MODULES if m != "triage_deployment"])
def test_every_module_takes_an_optional_kms_key(name: str) -> None:
    module = tfcheck.parse_module(INFRA / "modules" / name)
    assert module.variables()["kms_key_name"]["default"] is None
    assert "var.kms_key_name" in (INFRA / "modules" / name / "main.tf").read_text()


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_passes_its_kms_key_to_the_deployment_and_the_store(name: str) -> None:
    calls = {
        label: body
        for _, label, body in tfcheck.parse_module(INFRA / "examples" / name).blocks("module")
    }
    assert calls["deployment"]["kms_key_name"] == "${var.kms_key_name}"
    assert calls["memory"]["kms_key_name"] == "${var.kms_key_name}"


# --- Cloud SQL: the workers sign in with IAM by default ------------------------------------


def test_cloud_sql_workers_sign_in_with_iam_by_default() -> None:
    """An IAM service-account user, the two roles limited to the instance, no password path."""
    module = tfcheck.parse_module(INFRA / "modules" / "postgres_store")
    auth = module.variables()["auth_mode"]
    assert auth["default"] == "iam"
    resources = _resources("modules/postgres_store")
    worker = resources[("google_sql_user", "worker")]
    assert worker["type"] == "CLOUD_IAM_SERVICE_ACCOUNT"
    assert worker["count"] == "${local.worker_iam ? 1 : 0}"
    grants = resources[("google_project_iam_member", "worker_sql")]
    assert '"roles/cloudsql.client"' in str(grants["for_each"])
    assert '"roles/cloudsql.instanceUser"' in str(grants["for_each"])
    (condition,) = (
        grants["condition"] if isinstance(grants["condition"], list) else [grants["condition"]]
    )
    assert "local.instance_res" in condition["expression"]
    # The password user, its secret and the secret grant exist only for the fallback.
    for key in [
        ("google_sql_user", "this"),
        ("google_secret_manager_secret", "uri"),
        ("google_secret_manager_secret_version", "uri"),
    ]:
        assert resources[key]["count"] == "${local.passwords}", key
    main = (INFRA / "modules" / "postgres_store" / "main.tf").read_text()
    assert re.search(r'passwords\s+= var\.auth_mode == "password" \? 1 : 0', main)


@pytest.mark.parametrize(
    ("uri", "accepted"),
    [
        ("postgresql+cloudsql://w%40p.iam@p:europe-west1:triage/triage?ip_type=private", True),
        ("secretmanager://projects/p/secrets/s/versions/1", True),
        ("bigtable://p/i/t", True),
        ("postgresql+asyncpg://triage:hunter2@10.0.0.3:5432/triage", False),
        ("rediss://:hunter2@10.0.0.3:6378/0", False),
        ("postgresql+asyncpg://triage@10.0.0.3:5432/triage?password=hunter2", False),
        ("redis://10.0.0.3:6379/0?Token=hunter2", False),
    ],
)
def test_the_deployments_longterm_memory_validation_follows_the_url_credentials_rule(
    uri: str, accepted: bool
) -> None:
    """The Terraform validation (RE2) refuses what AgentConfig refuses; checked here with re."""
    module = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    (validation,) = module.variables()["longterm_memory"]["validation"]
    patterns = re.findall(
        r'regex\("((?:[^"\\]|\\.)+)", var\.longterm_memory\)', validation["condition"]
    )
    assert len(patterns) == 2
    refused = any(re.search(pattern.replace("\\\\", "\\"), uri) for pattern in patterns)
    assert refused is not accepted


def test_a_generated_key_is_ephemeral_written_write_only_and_read_by_its_readers_alone() -> None:
    """The one place a key is drawn: never in state, read by the worker and `readers`."""
    module = tfcheck.parse_module(INFRA / "modules" / "generated_key")
    assert {(kind, name) for _, kind, name, _ in module.typed_blocks("ephemeral")} == {
        ("random_password", "this")
    }
    resources = _resources("modules/generated_key")
    assert ("random_password", "this") not in resources
    version = resources[("google_secret_manager_secret_version", "this")]
    assert "secret_data" not in version
    assert version["secret_data_wo"] == "${ephemeral.random_password.this.result}"
    worker = resources[("google_secret_manager_secret_iam_member", "worker")]
    assert worker["role"] == "roles/secretmanager.secretAccessor"
    assert worker["member"] == "serviceAccount:${var.worker_service_account}"
    reader = resources[("google_secret_manager_secret_iam_member", "reader")]
    assert reader["role"] == "roles/secretmanager.secretAccessor"
    assert reader["for_each"] == "${toset(var.readers)}"
    assert reader["member"] == "${each.value}"
    grants = {
        name
        for (kind, name), body in resources.items()
        if kind.endswith("_iam_member")
        and body.get("secret_id") == "${google_secret_manager_secret.this.secret_id}"
    }
    assert grants == {"worker", "reader"}
    assert not [kind for kind, _ in resources if kind.endswith(("_iam_binding", "_iam_policy"))]
    assert module.variables()["readers"]["default"] == []
    outputs = module.outputs()
    assert outputs["version_name"]["value"] == "${google_secret_manager_secret_version.this.name}"
    assert outputs["version_name"].get("sensitive") is not True


def _key_calls() -> dict[str, dict[str, Any]]:
    module = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    return {
        label: body
        for _, label, body in module.blocks("module")
        if body["source"] == "../generated_key"
    }


def test_the_entity_hash_key_is_generated_worker_readable_and_passed_by_version() -> None:
    """The key spans hash entity keys under: read only by the workers."""
    module = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    assert not list(module.blocks("ephemeral")), "keys are drawn in modules/generated_key"
    call = _key_calls()["entity_hash_key"]
    assert call["secret_id"] == "${local.name}-entity-hash"
    assert call["worker_service_account"] == "${module.runtime.service_account_email}"
    assert "readers" not in call
    locals_ = {label: body for _, label, body in module.blocks("locals")}
    parameter = locals_["stream_parameters"]["entity_hash_secret"]
    assert parameter == "${module.entity_hash_key.version_name}"


def test_the_answer_signing_key_is_generated_readable_by_workers_and_signers_alone() -> None:
    """The answer signing key: passed by version, read by the signers, output for the console."""
    call = _key_calls()["answer_signing_key"]
    assert call["secret_id"] == "${local.name}-answer-signing"
    assert call["worker_service_account"] == "${module.runtime.service_account_email}"
    assert call["readers"] == "${var.answer_signers}"
    module = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    locals_ = {label: body for _, label, body in module.blocks("locals")}
    parameter = locals_["stream_parameters"]["answer_signing_secret"]
    assert parameter == "${module.answer_signing_key.version_name}"
    assert module.variables()["answer_signers"]["default"] == []
    output = module.outputs()["answer_signing_key_version"]
    assert output["value"] == "${module.answer_signing_key.version_name}"
    # No other grant on either secret in the deployment itself.
    resources = _resources("modules/triage_deployment")
    assert not [name for kind, name in resources if kind.startswith("google_secret_manager")]
    for example in sorted((INFRA / "examples").glob("triage_*")):
        output = tfcheck.parse_module(example).outputs()["answer_signing_key_version"]
        assert output["value"] == "${module.deployment.answer_signing_key_version}", example.name
        assert output.get("sensitive") is not True, example.name


#: Where the keys' resources stood before modules/generated_key, and where they are now.
KEY_MOVES = {
    f"google_secret_manager_secret{kind}.{old}": (
        f"module.{key}_key.google_secret_manager_secret{kind}.{new}"
    )
    for key in ("entity_hash", "answer_signing")
    for kind, old, new in (
        ("", key, "this"),
        ("_version", key, "this"),
        ("_iam_member", f"{key}_worker", "worker"),
    )
} | {
    "google_secret_manager_secret_iam_member.answer_signing_signer": (
        "module.answer_signing_key.google_secret_manager_secret_iam_member.reader"
    )
}


def _moves(module: tfcheck.Module) -> dict[str, str]:
    return {
        str(block["from"]).strip("${}"): str(block["to"]).strip("${}")
        for document in module.files.values()
        for block in document.get("moved", [])
    }


def test_an_existing_deployment_keeps_its_keys_through_moved_blocks() -> None:
    """A recreated hashing key would re-hash every entity: every old address is moved."""
    module = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    assert _moves(module) == KEY_MOVES
    assert [str(finding) for finding in tfcheck.check_moved(module)] == []
