"""`make deploy` against fixtures of `terraform output -json`: dry-run commands and failures."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).with_name("fixtures")
PROJECT = "acme-prod"
IMAGE = "europe-west1-docker.pkg.dev/acme-prod/triage/triage:v1"
#: Dry, the commands after the build name the image by a digest placeholder.
BY_DIGEST = (
    "europe-west1-docker.pkg.dev/acme-prod/triage/triage:v1@sha256:<digest of the image just built>"
)
TEMPLATE = "gs://acme-prod-triage-templates/templates/triage.json"
BUILD_ACCOUNT = "projects/acme-prod/serviceAccounts/triage-build@acme-prod.iam.gserviceaccount.com"


def _make_deploy(
    outputs: Path, *, store: str, **variables: str
) -> subprocess.CompletedProcess[str]:
    settings = {"PROJECT": PROJECT, "REGION": "europe-west1", "TAG": "v1", "DRY_RUN": "1"}
    settings |= variables
    argv = ["make", "-s", "-C", str(REPO), "deploy", f"STORE={store}", f"TF_OUTPUTS={outputs}"]
    argv += [f"{k}={v}" for k, v in settings.items() if v]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)


def _commands(stdout: str) -> list[list[str]]:
    return [shlex.split(line) for line in stdout.splitlines() if not line.startswith("#")]


def _parameters(run: list[str]) -> dict[str, str]:
    (flag,) = [arg for arg in run if arg.startswith("--parameters=")]
    assert flag.startswith("--parameters=^~^")
    return dict(item.split("=", 1) for item in flag.removeprefix("--parameters=^~^").split("~"))


def test_dry_run_prints_build_digest_template_and_run_with_values_from_the_outputs() -> None:
    result = _make_deploy(FIXTURES / "terraform_output_cloudsql.json", store="cloudsql")
    assert result.returncode == 0, result.stderr
    build, digest, template, run = _commands(result.stdout)
    assert build == [
        "gcloud", "builds", "submit", ".", "--project=acme-prod", "--region=europe-west1",
        "--config=app/cloudbuild.yaml",
        f"--service-account={BUILD_ACCOUNT}",
        "--gcs-source-staging-dir=gs://acme-prod-triage-templates/source",
        f"--substitutions=^~^_IMAGE={IMAGE}~_EXTRAS=memory-stores,providers,telemetry",
    ]  # fmt: skip
    assert digest == [
        "gcloud", "artifacts", "docker", "images", "describe", IMAGE, "--project=acme-prod",
        "--format=value(image_summary.digest)",
    ]  # fmt: skip
    assert template == [
        "gcloud", "dataflow", "flex-template", "build", TEMPLATE, "--project=acme-prod",
        f"--image={BY_DIGEST}", "--sdk-language=PYTHON", "--metadata-file=app/metadata.json",
    ]  # fmt: skip
    assert run[:5] == ["gcloud", "dataflow", "flex-template", "run", "triage"]
    assert f"--template-file-gcs-location={TEMPLATE}" in run
    assert "--service-account-email=triage-worker@acme-prod.iam.gserviceaccount.com" in run
    assert "--temp-location=gs://acme-prod-triage-temp/tmp" in run
    assert "--staging-location=gs://acme-prod-triage-staging/staging" in run
    assert "--update" not in run
    fixture = json.loads((FIXTURES / "terraform_output_cloudsql.json").read_text())
    expected = fixture["launcher_parameters"]["value"] | {"sdk_container_image": BY_DIGEST}
    assert _parameters(run) == expected


@pytest.mark.parametrize("store", ["bigtable", "cloudsql"])
def test_every_store_runs_private_workers_in_the_deployments_subnetwork(store: str) -> None:
    result = _make_deploy(FIXTURES / f"terraform_output_{store}.json", store=store)
    assert result.returncode == 0, result.stderr
    *_, run = _commands(result.stdout)
    assert "--disable-public-ips" in run
    (subnetwork,) = [arg for arg in run if arg.startswith("--subnetwork=")]
    assert subnetwork.endswith("/subnetworks/triage-workers")


def test_dry_run_never_prints_a_sensitive_output(tmp_path: Path) -> None:
    outputs = json.loads((FIXTURES / "terraform_output_cloudsql.json").read_text())
    outputs["auth_string"] = {"sensitive": True, "type": "string", "value": "S3cr3t-pw"}
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    result = _make_deploy(path, store="cloudsql")
    assert result.returncode == 0, result.stderr
    assert "S3cr3t-pw" not in result.stdout + result.stderr
    assert "longterm=secretmanager://projects/acme-prod/secrets/" in result.stdout


def test_a_required_output_marked_sensitive_is_refused(tmp_path: Path) -> None:
    outputs = json.loads((FIXTURES / "terraform_output_cloudsql.json").read_text())
    outputs["launcher_parameters"]["sensitive"] = True
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    result = _make_deploy(path, store="cloudsql")
    assert result.returncode == 2
    assert "`launcher_parameters` is sensitive; make deploy never reads it" in result.stderr
    assert "gcloud" not in result.stdout


def test_update_adds_the_flag_and_a_bigtable_store_goes_by_its_uri() -> None:
    result = _make_deploy(FIXTURES / "terraform_output_bigtable.json", store="bigtable", UPDATE="1")
    assert result.returncode == 0, result.stderr
    *_, run = _commands(result.stdout)
    assert run[-1] == "--update"
    assert _parameters(run)["longterm"] == "bigtable://acme-prod/triage-memory/beam-agents-longterm"


@pytest.mark.parametrize("store", ["cloudsql", "redis"])
def test_dry_run_says_it_would_write_the_server_ca_for_the_image(
    store: str, tmp_path: Path
) -> None:
    outputs = json.loads((FIXTURES / "terraform_output_cloudsql.json").read_text())
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    outputs["server_ca_cert"] = {"sensitive": False, "type": "string", "value": pem}
    path = tmp_path / f"{store}.json"
    path.write_text(json.dumps(outputs))
    result = _make_deploy(path, store=store)
    assert result.returncode == 0, result.stderr
    written = f"app/certs/{'redis' if store == 'redis' else 'cloudsql'}-ca.pem"
    assert result.stdout.splitlines()[0] == f"# would write {written} ({len(pem)} bytes)"
    assert not (REPO / written).exists()


@pytest.mark.parametrize("missing", ["launcher_parameters", "image_repository", "template_path"])
def test_missing_output_fails_naming_the_output_and_the_example(
    missing: str, tmp_path: Path
) -> None:
    outputs = json.loads((FIXTURES / "terraform_output_cloudsql.json").read_text())
    del outputs[missing]
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    result = _make_deploy(path, store="cloudsql")
    assert result.returncode != 0
    assert f"terraform output `{missing}` is missing from infra/examples/triage_cloudsql" in (
        result.stderr
    )
    assert "gcloud" not in result.stdout


def test_project_other_than_the_applied_one_is_refused() -> None:
    result = _make_deploy(
        FIXTURES / "terraform_output_cloudsql.json", store="cloudsql", PROJECT="acme-dev"
    )
    assert result.returncode != 0
    assert (
        "PROJECT=acme-dev but infra/examples/triage_cloudsql was applied to project acme-prod"
        in (result.stderr)
    )


# --- hostile input: nothing runs that was not meant to -----------------------------------


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("REGION", 'r"; touch {marker}; "'),
        ("REGION", "europe-west1$(touch {marker})"),
        ("PROJECT", "acme-prod`touch {marker}`"),
        ("TAG", "v1~input_subscription=projects/evil/subscriptions/x"),
        ("TAG", "v1;touch {marker}"),
        ("TAG", "$(shell touch {marker})"),
        ("TAG", "~/x"),
        ("STORE", "bigtable; touch {marker}"),
        ("TF_OUTPUTS", "$(shell touch {marker})"),
        ("UPDATE", "$(shell touch {marker})"),
    ],
)
def test_a_hostile_variable_runs_nothing_and_is_refused(
    variable: str, value: str, tmp_path: Path
) -> None:
    """Values reach deploy.py unexpanded and unspliced; it refuses them before any command."""
    marker = tmp_path / "ran"
    hostile = value.format(marker=marker)
    settings = {"STORE": "bigtable", "TF_OUTPUTS": str(FIXTURES / "terraform_output_bigtable.json")}
    settings |= {"PROJECT": PROJECT, "REGION": "europe-west1", "TAG": "v1", "DRY_RUN": "1"}
    settings[variable] = hostile
    argv = ["make", "-s", "-C", str(REPO), "deploy", *(f"{k}={v}" for k, v in settings.items())]
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert not marker.exists(), f"{variable}={hostile!r} ran a command"
    if variable != "UPDATE":
        assert result.returncode != 0
        assert "gcloud" not in result.stdout


@pytest.mark.parametrize("tag", ["v1", "2026-12-01.rc_1", "a" * 128])
def test_a_docker_tag_is_accepted(tag: str) -> None:
    result = _make_deploy(FIXTURES / "terraform_output_bigtable.json", store="bigtable", TAG=tag)
    assert result.returncode == 0, result.stderr
    assert (
        f"--substitutions=^~^_IMAGE=europe-west1-docker.pkg.dev/acme-prod/triage/triage:{tag}~"
        in (result.stdout)
    )


def test_a_bad_tag_is_named_in_the_error() -> None:
    result = _make_deploy(
        FIXTURES / "terraform_output_bigtable.json", store="bigtable", TAG="v1~model=py:evil:x"
    )
    assert result.returncode == 2
    assert "make deploy: TAG='v1~model=py:evil:x' is not valid" in result.stderr


def test_project_and_region_are_required() -> None:
    result = _make_deploy(FIXTURES / "terraform_output_cloudsql.json", store="cloudsql", PROJECT="")
    assert result.returncode != 0
    assert "PROJECT and REGION are required" in result.stderr


DOCKERFILE = (REPO / "app" / "Dockerfile").read_text()


def test_image_bases_are_pinned_and_beam_matches_the_sdk_that_builds_the_graph() -> None:
    """Launcher and workers run one image; its Beam must be the one tests build graphs with."""
    import apache_beam

    bases = dict(re.findall(r"^ARG (\w+_IMAGE)=(\S+)$", DOCKERFILE, re.M))
    assert set(bases) == {"BEAM_IMAGE", "LAUNCHER_IMAGE"}
    for image in bases.values():
        assert re.search(r":[\w.-]*\d[\w.-]*$|@sha256:[0-9a-f]{64}$", image), image
        assert not image.endswith(":latest")
    assert bases["BEAM_IMAGE"] == f"apache/beam_python3.11_sdk:{apache_beam.__version__}"


def test_image_runs_as_a_non_root_user_and_launches_the_flex_entry() -> None:
    instructions = [line.split()[0] for line in DOCKERFILE.splitlines() if line[:1].isupper()]
    user = re.findall(r"^USER (\S+)$", DOCKERFILE, re.M)
    assert user == ["10001"]
    assert instructions.index("USER") > max(i for i, op in enumerate(instructions) if op == "RUN")
    (entry,) = re.findall(r"FLEX_TEMPLATE_PYTHON_PY_FILE=(\S+)", DOCKERFILE)
    assert (REPO / entry.removeprefix("/opt/triage/")).is_file()
    assert "--file=app/Dockerfile" in (REPO / "app" / "cloudbuild.yaml").read_text()


def test_the_build_runs_as_its_own_account_and_logs_to_cloud_logging() -> None:
    """Cloud Build refuses a user-specified account whose logs would go to the default bucket."""
    cloudbuild = (REPO / "app" / "cloudbuild.yaml").read_text()
    assert re.search(r"^options:\n  logging: CLOUD_LOGGING_ONLY$", cloudbuild, re.M)
    result = _make_deploy(FIXTURES / "terraform_output_bigtable.json", store="bigtable")
    build, *_ = _commands(result.stdout)
    assert f"--service-account={BUILD_ACCOUNT}" in build
