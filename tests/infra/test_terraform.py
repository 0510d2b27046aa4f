"""Offline checks of infra/: formatting, provider schema, module conventions and wiring."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.infra import tfcheck, tfschema

INFRA = Path(__file__).resolve().parents[2] / "infra"
Schemas = Callable[[str], tfschema.ProviderSchema]

MODULES = sorted(path.name for path in (INFRA / "modules").iterdir() if path.is_dir())
EXAMPLES = sorted(path.name for path in (INFRA / "examples").iterdir() if path.is_dir())
#: What each store module's `longterm_memory` output starts with: a credential-free URI, or
#: a reference to the Secret Manager version holding one (read where the store opens).
STORE_URI_PREFIXES = {
    "bigtable_store": "bigtable://",
    "redis_store": "secretmanager://",
    "firestore_store": "firestore://",
    "postgres_store": "postgresql+cloudsql://",
}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _messages(findings: list[tfcheck.Finding]) -> list[str]:
    return [str(finding) for finding in findings]


# --- the shipped tree ---------------------------------------------------------------------


def test_terraform_fmt_finds_nothing_to_reformat(terraform: str) -> None:
    """`terraform fmt -check -recursive infra` exits 0 (3 = misformatted, 2 = syntax error)."""
    result = subprocess.run(
        [terraform, "fmt", "-check", "-recursive", "-diff", str(INFRA)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_terraform_fmt_check_flags_a_misformatted_file(terraform: str, tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text('locals {\nx="y"\n}\n')
    result = subprocess.run(
        [terraform, "fmt", "-check", "-recursive", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 3


def test_every_resource_and_data_source_matches_the_google_provider_schema(
    provider_schemas: Schemas,
) -> None:
    findings = []
    for directory in tfcheck.module_directories(INFRA):
        findings += tfcheck.check_schema(tfcheck.parse_module(directory), provider_schemas)
    assert _messages(findings) == []


@pytest.mark.parametrize("check", [tfcheck.check_variables, tfcheck.check_outputs])
def test_variables_and_outputs_are_typed_described_and_sensitive_when_secret(
    check: Callable[[tfcheck.Module], list[tfcheck.Finding]],
) -> None:
    findings = []
    for directory in tfcheck.module_directories(INFRA):
        findings += check(tfcheck.parse_module(directory))
    assert _messages(findings) == []


def test_module_calls_pass_declared_inputs_and_reference_existing_outputs() -> None:
    findings = []
    for directory in tfcheck.module_directories(INFRA):
        findings += tfcheck.check_module_calls(tfcheck.parse_module(directory))
    assert _messages(findings) == []


def test_moved_blocks_move_what_is_gone_to_what_exists() -> None:
    findings = []
    for directory in tfcheck.module_directories(INFRA):
        findings += tfcheck.check_moved(tfcheck.parse_module(directory))
    assert _messages(findings) == []


@pytest.mark.parametrize("name", MODULES)
def test_module_has_the_standard_files(name: str) -> None:
    directory = INFRA / "modules" / name
    for file in ("main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"):
        assert (directory / file).is_file(), f"{directory} lacks {file}"


def _called(module: tfcheck.Module) -> set[Path]:
    """Every local module `module` calls, directly or through the modules it calls."""
    found: set[Path] = set()
    for _, _, body in module.blocks("module"):
        directory = (module.directory / body["source"]).resolve()
        if directory not in found:
            found |= {directory} | _called(tfcheck.parse_module(directory))
    return found


@pytest.mark.parametrize(
    "kind_and_name", [*(f"modules/{m}" for m in MODULES), *(f"examples/{e}" for e in EXAMPLES)]
)
def test_versions_require_terraform_1_5_and_a_bounded_google_range(kind_and_name: str) -> None:
    """1.11 where a write-only argument (`*_wo`) keeps a secret out of state, in the module or
    a module it calls; 1.5 everywhere else."""
    module = tfcheck.parse_module(INFRA / kind_and_name)
    (terraform_block,) = [
        block for doc in module.files.values() for block in doc.get("terraform", [])
    ]
    texts = [
        *module.texts.values(),
        *(p.read_text() for d in _called(module) for p in d.glob("*.tf")),
    ]
    write_only = any(re.search(r"^\s*\w+_wo\s*=", text, re.M) for text in texts)
    assert terraform_block["required_version"] == (">= 1.11" if write_only else ">= 1.5")
    (providers,) = terraform_block["required_providers"]
    google = providers["google"]
    assert google["source"] == "hashicorp/google"
    assert re.fullmatch(r">= \d+\.\d+, < \d+\.\d+", google["version"]), google["version"]
    used = {tfcheck.provider_of(body) for _, _, _, body in module.typed_blocks("resource")}
    assert used <= set(providers), f"{kind_and_name} uses providers {used - set(providers)}"


@pytest.mark.parametrize("name", MODULES)
def test_readme_tables_list_every_input_and_output(name: str) -> None:
    directory = INFRA / "modules" / name
    module = tfcheck.parse_module(directory)
    readme = (directory / "README.md").read_text()
    rows = {match.group(1) for match in re.finditer(r"^\|\s*`([\w-]+)`\s*\|", readme, re.M)}
    missing = (set(module.variables()) | set(module.outputs())) - rows
    assert not missing, f"{directory}/README.md has no table row for {sorted(missing)}"


@pytest.mark.parametrize(("name", "prefix"), sorted(STORE_URI_PREFIXES.items()))
def test_store_module_outputs_longterm_memory_in_the_store_uri_grammar(
    name: str, prefix: str
) -> None:
    outputs = tfcheck.parse_module(INFRA / "modules" / name).outputs()
    value = str(outputs["longterm_memory"]["value"])
    if name == "postgres_store":
        # IAM sign-in by default; the password fallback is a Secret Manager reference.
        assert ': "postgresql+cloudsql://' in value
        assert '? "secretmanager://' in value
        return
    assert value.startswith(prefix)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_is_a_root_module_with_a_longterm_memory_output(name: str) -> None:
    module = tfcheck.parse_module(INFRA / "examples" / name)
    assert [label for _, label, _ in module.blocks("provider")] == ["google", "google-beta"]
    assert {"project_id", "region"} <= set(module.variables())
    assert "longterm_memory" in module.outputs()
    assert [label for _, label, _ in module.blocks("module")], "an example composes modules"


def test_every_store_has_a_triage_example() -> None:
    """Each example composes the shared triage_deployment module and exactly one store."""
    assert set(EXAMPLES) == {
        "triage_bigtable",
        "triage_cloudsql",
        "triage_firestore",
        "triage_redis",
    }
    for name in EXAMPLES:
        sources = [
            b["source"]
            for _, _, b in tfcheck.parse_module(INFRA / "examples" / name).blocks("module")
        ]
        assert "../../modules/triage_deployment" in sources, name
        assert sum(s.endswith("_store") for s in sources) == 1, name
    deployment = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    sources = {b["source"] for _, _, b in deployment.blocks("module")}
    assert sources == {"../dataflow_runtime", "../dataflow_job", "../generated_key"}


#: What the Firestore store's cross-entity `find_nearest` filters on (equality), in the
#: order the vector index lists them, and the field it searches.
FIRESTORE_PREFILTER = ["model", "dims"]
FIRESTORE_VECTOR_FIELD = "embedding"


def test_firestore_declares_the_vector_index_recall_across_entities_needs() -> None:
    """find_nearest pre-filtered on the embedder fails in production without this index."""
    module = tfcheck.parse_module(INFRA / "modules" / "firestore_store")
    resources = {(kind, name): body for _, kind, name, body in module.typed_blocks("resource")}
    index = resources[("google_firestore_index", "embedding")]
    assert index["collection"] == "${var.collection}"
    assert index["database"] == "${local.database}"
    assert index["query_scope"] == "COLLECTION"
    assert index["count"] == "${var.embedding_dimensions == null ? 0 : 1}"
    *ordered, vector = index["fields"]
    assert [(f["field_path"], f["order"]) for f in ordered] == [
        *((name, "ASCENDING") for name in FIRESTORE_PREFILTER),
        ("__name__", "ASCENDING"),
    ]
    locals_ = {label: body for _, label, body in module.blocks("locals")}
    assert vector["field_path"] == "${local.vector_field}"
    assert locals_["vector_field"] == FIRESTORE_VECTOR_FIELD
    assert "order" not in vector
    (config,) = vector["vector_config"]
    assert config["dimension"] == "${var.embedding_dimensions}"
    assert config["flat"] == [{"__is_block__": True}]
    dimensions = module.variables()["embedding_dimensions"]
    assert dimensions["type"] == "number"
    assert dimensions["default"] == 384, "the local all-MiniLM-L6-v2 embedder's width"
    outputs = module.outputs()
    assert outputs["embedding_index_id"]["value"] == (
        "${one(google_firestore_index.embedding[*].id)}"
    )
    example = tfcheck.parse_module(INFRA / "examples" / "triage_firestore")
    calls = {label: body for _, label, body in example.blocks("module")}
    assert calls["memory"]["embedding_dimensions"] == "${var.embedding_dimensions}"
    assert example.variables()["embedding_dimensions"]["default"] == 384


def test_streaming_job_is_the_beta_flex_template_resource_and_drains_on_delete() -> None:
    module = tfcheck.parse_module(INFRA / "modules" / "dataflow_job")
    ((_, type_name, _, body),) = module.typed_blocks("resource")
    assert type_name == "google_dataflow_flex_template_job"
    assert tfcheck.provider_of(body) == "google-beta"
    assert body["on_delete"] == "drain"
    assert body["enable_streaming_engine"] is True


def test_launcher_parameters_name_every_stream_and_carry_no_secret() -> None:
    """The job's parameters are readable by job viewers: a credential never reaches them."""
    module = tfcheck.parse_module(INFRA / "modules" / "triage_deployment")
    locals_ = {label: body for _, label, body in module.blocks("locals")}
    parameters = locals_["stream_parameters"]
    streams = {"input_subscription", "answers_subscription", "outputs_topic", "intents_topic"}
    assert streams | {"errors_topic", "lifecycle_topic", "model"} <= set(parameters)
    assert parameters["longterm"] == "${var.longterm_memory}"
    (validation,) = module.variables()["longterm_memory"]["validation"]
    assert "@" in validation["condition"]
    # The OTLP endpoint joins them only when set, and never carries a credential.
    merged = str(locals_["launcher_parameters"])
    assert "local.stream_parameters" in merged
    assert "otlp_endpoint = var.otlp_endpoint" in merged
    (otlp,) = module.variables()["otlp_endpoint"]["validation"]
    allowed = re.compile(re.search(r'regex\("(.+?)", var', otlp["condition"]).group(1))
    assert allowed.fullmatch("http://10.128.0.9:4318/v1/traces")
    assert not allowed.fullmatch("http://user:pw@collector:4318/v1/traces")
    assert not allowed.fullmatch("http://collector:4318/v1/traces?token=x")
    output = module.outputs()["launcher_parameters"]
    assert output["value"] == "${local.launcher_parameters}"
    assert output.get("sensitive") is not True


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_passes_the_store_modules_credential_free_uri(name: str) -> None:
    module = tfcheck.parse_module(INFRA / "examples" / name)
    calls = {label: body for _, label, body in module.blocks("module")}
    assert calls["deployment"]["longterm_memory"] == "${module.memory.longterm_memory}"
    assert "longterm_memory_secret" not in calls["deployment"]
    for output in ("launcher_parameters", "longterm_memory"):
        assert module.outputs()[output].get("sensitive") is not True, output


@pytest.mark.parametrize("name", ["postgres_store", "redis_store"])
def test_a_credential_carrying_uri_is_written_to_its_secret_write_only(name: str) -> None:
    """The URI with its password reaches Secret Manager, never Terraform state or an output."""
    module = tfcheck.parse_module(INFRA / "modules" / name)
    resources = {(t, n): body for _, t, n, body in module.typed_blocks("resource")}
    version = resources[("google_secret_manager_secret_version", "uri")]
    assert "secret_data" not in version
    assert str(version["secret_data_wo"]).startswith(("postgresql+asyncpg://", "rediss://"))
    assert version["secret_data_wo_version"] == "${var.rotation}"
    (grant,) = [
        body
        for (kind, _), body in resources.items()
        if kind == "google_secret_manager_secret_iam_member"
    ]
    assert grant["secret_id"] in (
        "${google_secret_manager_secret.uri.secret_id}",
        "${google_secret_manager_secret.uri[0].secret_id}",
    )


def test_worker_grants_are_scoped_to_its_own_resources() -> None:
    """One project-level role (dataflow.worker); everything else on a named resource."""
    module = tfcheck.parse_module(INFRA / "modules" / "dataflow_runtime")
    project_roles = [
        body["role"]
        for _, type_name, _, body in module.typed_blocks("resource")
        if type_name == "google_project_iam_member" and body["member"] == "${local.worker}"
    ]
    assert project_roles == ["roles/dataflow.worker"]
    kinds = {t for _, t, _, _ in module.typed_blocks("resource") if t.endswith("_iam_member")}
    assert kinds == {
        "google_project_iam_member",
        "google_service_account_iam_member",
        "google_storage_bucket_iam_member",
        "google_artifact_registry_repository_iam_member",
        "google_secret_manager_secret_iam_member",
        "google_pubsub_subscription_iam_member",
        "google_pubsub_topic_iam_member",
    }
    (subscription,) = [
        body
        for _, t, _, body in module.typed_blocks("resource")
        if t == "google_pubsub_subscription"
    ]
    (dead_letter,) = subscription["dynamic"][0]["dead_letter_policy"]["content"]
    assert "dead-letter" in dead_letter["dead_letter_topic"]


# --- the checker bites --------------------------------------------------------------------


def test_misspelled_attribute_is_reported_with_file_resource_and_attribute(
    scratch_infra: Path, provider_schemas: Schemas
) -> None:
    main = scratch_infra / "modules" / "bigtable_store" / "main.tf"
    _edit(main, "  deletion_policy = ", "  deletion_polcy = ")
    (message,) = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert str(main) in message
    assert "google_bigtable_gc_policy.memory" in message
    assert "`deletion_polcy`" in message


def test_missing_required_argument_is_reported_with_file_resource_and_attribute(
    scratch_infra: Path, provider_schemas: Schemas
) -> None:
    main = scratch_infra / "modules" / "redis_store" / "main.tf"
    _edit(main, "  memory_size_gb = var.memory_size_gb\n", "")
    messages = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert len(messages) == 1, messages
    assert str(main) in messages[0]
    assert "google_redis_instance.this" in messages[0]
    assert "missing required argument `memory_size_gb`" in messages[0]


def test_misspelled_argument_in_a_nested_block_names_its_path(
    scratch_infra: Path, provider_schemas: Schemas
) -> None:
    main = scratch_infra / "modules" / "postgres_store" / "main.tf"
    _edit(main, "private_network    =", "privat_network     =")
    (message,) = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert "google_sql_database_instance.this" in message
    assert "`settings.ip_configuration.privat_network`" in message


def test_misspelled_argument_inside_a_dynamic_block_is_reported(
    scratch_infra: Path, provider_schemas: Schemas
) -> None:
    main = scratch_infra / "modules" / "redis_store" / "main.tf"
    _edit(main, "persistence_mode    =", "persistance_mode    =")
    (message,) = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert "`persistence_config.persistance_mode`" in message


def test_computed_only_attribute_cannot_be_set(
    scratch_infra: Path, provider_schemas: Schemas
) -> None:
    main = scratch_infra / "modules" / "redis_store" / "main.tf"
    tier = "  tier           = var.tier\n"
    _edit(main, tier, tier + '  host = "10.0.0.3"\n')
    (message,) = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert "google_redis_instance.this" in message
    assert "`host`" in message


def test_unknown_resource_type_is_reported(scratch_infra: Path, provider_schemas: Schemas) -> None:
    main = scratch_infra / "modules" / "firestore_store" / "main.tf"
    _edit(main, 'resource "google_firestore_index"', 'resource "google_firestore_indexes"')
    outputs = scratch_infra / "modules" / "firestore_store" / "outputs.tf"
    _edit(outputs, "google_firestore_index.entity_key", "google_firestore_indexes.entity_key")
    (message,) = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert "google_firestore_indexes.entity_key: no such resource type" in message


def test_unknown_random_resource_type_is_reported(
    scratch_infra: Path, provider_schemas: Schemas
) -> None:
    main = scratch_infra / "modules" / "postgres_store" / "main.tf"
    main.write_text(main.read_text() + '\nresource "random_pet" "name" {}\n')
    (message,) = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert "random_pet.name: unknown random resource type" in message


def test_misspelled_argument_of_a_google_beta_resource_is_checked_against_the_beta_schema(
    scratch_infra: Path, provider_schemas: Schemas
) -> None:
    main = scratch_infra / "modules" / "dataflow_job" / "main.tf"
    _edit(main, "  on_delete               =", "  on_delet                =")
    (message,) = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert "google_dataflow_flex_template_job.this" in message
    assert "`on_delet`" in message


def test_beta_only_resource_without_the_beta_provider_is_reported(
    scratch_infra: Path, provider_schemas: Schemas
) -> None:
    main = scratch_infra / "modules" / "dataflow_job" / "main.tf"
    _edit(main, "  provider = google-beta\n", "")
    (message,) = _messages(tfcheck.check_tree(scratch_infra, provider_schemas))
    assert (
        "google_dataflow_flex_template_job.this: no such resource type in the google provider"
        in message
    )


def test_undeclared_module_input_is_reported(scratch_infra: Path) -> None:
    main = scratch_infra / "examples" / "triage_bigtable" / "main.tf"
    _edit(main, "  max_age                =", "  max_agee               =")
    module = tfcheck.parse_module(main.parent)
    (message,) = _messages(tfcheck.check_module_calls(module))
    assert str(main) in message
    assert "module.memory" in message
    assert "passes `max_agee`" in message


def test_missing_required_module_input_is_reported(scratch_infra: Path) -> None:
    main = scratch_infra / "examples" / "triage_cloudsql" / "main.tf"
    _edit(main, "  private_network        = module.deployment.network_id\n", "")
    (message,) = _messages(tfcheck.check_module_calls(tfcheck.parse_module(main.parent)))
    assert "module.memory: does not pass required variable `private_network`" in message


def test_reference_to_a_missing_module_output_is_reported(scratch_infra: Path) -> None:
    outputs = scratch_infra / "examples" / "triage_bigtable" / "outputs.tf"
    _edit(outputs, "module.memory.longterm_memory", "module.memory.longterm_memroy")
    (message,) = _messages(tfcheck.check_module_calls(tfcheck.parse_module(outputs.parent)))
    assert str(outputs) in message
    assert "module.memory.longterm_memroy" in message
    assert "has no output `longterm_memroy`" in message


def test_moved_block_to_a_resource_the_module_lacks_is_reported(scratch_infra: Path) -> None:
    """A `to` naming nothing would destroy the key at `from` and draw a new one."""
    main = scratch_infra / "modules" / "triage_deployment" / "main.tf"
    _edit(
        main,
        "to   = module.entity_hash_key.google_secret_manager_secret_version.this",
        "to   = module.entity_hash_key.google_secret_manager_secret_version.key",
    )
    (message,) = _messages(tfcheck.check_moved(tfcheck.parse_module(main.parent)))
    assert str(main) in message
    assert "declares no google_secret_manager_secret_version.key" in message


def test_moved_block_from_a_still_declared_resource_is_reported(scratch_infra: Path) -> None:
    main = scratch_infra / "modules" / "triage_deployment" / "main.tf"
    main.write_text(
        main.read_text()
        + '\nresource "google_secret_manager_secret" "entity_hash" {\n'
        + '  secret_id = "x"\n}\n'
    )
    (message,) = _messages(tfcheck.check_moved(tfcheck.parse_module(main.parent)))
    assert "moved google_secret_manager_secret.entity_hash" in message
    assert "`from` is still declared" in message


def test_undescribed_variable_is_reported(scratch_infra: Path) -> None:
    variables = scratch_infra / "modules" / "redis_store" / "variables.tf"
    _edit(variables, '  description = "Memorystore instance id."\n', "")
    (message,) = _messages(tfcheck.check_variables(tfcheck.parse_module(variables.parent)))
    assert str(variables) in message
    assert "var.name: variable has no `description`" in message


def test_untyped_variable_is_reported(scratch_infra: Path) -> None:
    variables = scratch_infra / "modules" / "redis_store" / "variables.tf"
    _edit(variables, "  type        = number\n", "")
    (message,) = _messages(tfcheck.check_variables(tfcheck.parse_module(variables.parent)))
    assert "var.memory_size_gb: variable has no `type`" in message


def test_secret_output_without_sensitive_is_reported(scratch_infra: Path) -> None:
    outputs = scratch_infra / "modules" / "redis_store" / "outputs.tf"
    _edit(outputs, "  sensitive   = true\n", "")
    (message,) = _messages(tfcheck.check_outputs(tfcheck.parse_module(outputs.parent)))
    assert "output.auth_string: carries a secret (name `auth_string`, `.auth_string`)" in message


def test_secret_passed_through_a_module_output_must_stay_sensitive(scratch_infra: Path) -> None:
    outputs = scratch_infra / "examples" / "triage_redis" / "outputs.tf"
    leak = 'output "auth" {\n  description = "x"\n  value       = module.memory.auth_string\n}\n'
    outputs.write_text(outputs.read_text() + leak)
    (message,) = _messages(tfcheck.check_outputs(tfcheck.parse_module(outputs.parent)))
    assert "output.auth: carries a secret" in message
    assert "`module.memory.auth_string`" in message


# --- schema derivation (no network) -------------------------------------------------------


def _prop(
    name: str, anchor: str, type_ref: dict[str, object], *, optional: bool
) -> dict[str, object]:
    link = f"{{@link https://registry.terraform.io/x#{anchor} Thing#{anchor}}}"
    return {"name": name, "optional": optional, "type": type_ref, "docs": {"remarks": link}}


def test_schema_derivation_uses_registry_names_blocks_and_required_flags() -> None:
    """Names come from the registry anchor (CDKTF renames some), struct types become blocks."""
    pkg = "@cdktf/provider-google.thing"
    assembly = {
        "types": {
            f"{pkg}.Thing": {
                "kind": "class",
                "base": "cdktf.TerraformResource",
                "docs": {
                    "summary": "Represents a {@link https://r/docs/resources/t google_thing}."
                },
                "initializer": {"parameters": [{}, {}, {"type": {"fqn": f"{pkg}.ThingConfig"}}]},
            },
            f"{pkg}.ThingConfig": {
                "kind": "interface",
                "datatype": True,
                "properties": [
                    _prop("instanceName", "instance_name", {"primitive": "string"}, optional=False),
                    _prop("buildAttribute", "build", {"primitive": "string"}, optional=True),
                    _prop(
                        "columnFamily",
                        "column_family",
                        {
                            "union": {
                                "types": [
                                    {"fqn": "cdktf.IResolvable"},
                                    {
                                        "collection": {
                                            "kind": "array",
                                            "elementtype": {"fqn": f"{pkg}.ThingColumnFamily"},
                                        }
                                    },
                                ]
                            }
                        },
                        optional=True,
                    ),
                ],
            },
            f"{pkg}.ThingColumnFamily": {
                "kind": "interface",
                "datatype": True,
                "properties": [_prop("family", "family", {"primitive": "string"}, optional=False)],
            },
        }
    }
    schema = tfschema.ProviderSchema(tfschema.derive(assembly))
    thing = schema.resource("resources", "google_thing")
    assert thing is not None
    assert thing.attributes == {"instance_name": True, "build": False}
    required, family_id = thing.blocks["column_family"]
    assert not required
    assert schema.struct(family_id).attributes == {"family": True}


def test_unreachable_registry_raises_schema_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without network the fixture gets SchemaUnavailable (skip, or fail under REQUIRE)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", "http://127.0.0.1:9")
    with pytest.raises(tfschema.SchemaUnavailable, match="cannot fetch @cdktf/provider-google"):
        tfschema.load("google")
    assert not list((tmp_path / "beam-agents" / "tf-schema").glob("*.json"))
