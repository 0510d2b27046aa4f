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
TEMPLATE = "gs://acme-prod-triage-staging/templates/triage.json"


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


def test_dry_run_prints_build_template_and_run_with_values_from_the_outputs() -> None:
    result = _make_deploy(FIXTURES / "terraform_output_cloudsql.json", store="cloudsql")
    assert result.returncode == 0, result.stderr
    build, template, run = _commands(result.stdout)
    assert build == [
        "gcloud", "builds", "submit", ".", "--project=acme-prod",
        "--config=app/cloudbuild.yaml",
        f"--substitutions=^~^_IMAGE={IMAGE}~_EXTRAS=memory-stores,providers",
    ]  # fmt: skip
    assert template == [
        "gcloud", "dataflow", "flex-template", "build", TEMPLATE, "--project=acme-prod",
        f"--image={IMAGE}", "--sdk-language=PYTHON", "--metadata-file=app/metadata.json",
    ]  # fmt: skip
    assert run[:5] == ["gcloud", "dataflow", "flex-template", "run", "triage"]
    assert f"--template-file-gcs-location={TEMPLATE}" in run
    assert "--service-account-email=triage-worker@acme-prod.iam.gserviceaccount.com" in run
    assert "--temp-location=gs://acme-prod-triage-temp/tmp" in run
    assert "--staging-location=gs://acme-prod-triage-staging/staging" in run
    assert "--disable-public-ips" in run
    assert any(arg.endswith("/subnetworks/triage-workers") for arg in run)
    assert "--update" not in run
    fixture = json.loads((FIXTURES / "terraform_output_cloudsql.json").read_text())
    expected = fixture["launcher_parameters"]["value"] | {"sdk_container_image": IMAGE}
    assert _parameters(run) == expected


def test_dry_run_never_prints_a_sensitive_output() -> None:
    result = _make_deploy(FIXTURES / "terraform_output_cloudsql.json", store="cloudsql")
    assert result.returncode == 0, result.stderr
    assert "S3cr3t-pw" not in result.stdout + result.stderr
    assert "longterm_secret=projects/acme-prod/secrets/triage-longterm/versions/1" in result.stdout


def test_store_on_google_apis_runs_without_a_subnetwork_and_update_adds_the_flag() -> None:
    result = _make_deploy(FIXTURES / "terraform_output_bigtable.json", store="bigtable", UPDATE="1")
    assert result.returncode == 0, result.stderr
    *_, run = _commands(result.stdout)
    assert not any(arg.startswith(("--subnetwork", "--disable-public-ips")) for arg in run)
    assert run[-1] == "--update"
    assert _parameters(run)["longterm"] == "bigtable://acme-prod/triage-memory/beam-agents-longterm"


def test_redis_dry_run_says_it_would_write_the_ca_for_the_image(tmp_path: Path) -> None:
    outputs = json.loads((FIXTURES / "terraform_output_cloudsql.json").read_text())
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    outputs["server_ca_cert"] = {"sensitive": False, "type": "string", "value": pem}
    path = tmp_path / "redis.json"
    path.write_text(json.dumps(outputs))
    result = _make_deploy(path, store="redis")
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.splitlines()[0] == f"# would write app/certs/redis-ca.pem ({len(pem)} bytes)"
    )
    assert not (REPO / "app" / "certs" / "redis-ca.pem").exists()


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
