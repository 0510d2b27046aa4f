"""The generated `make deploy`: no store password anywhere, private workers, hostile input refused.

The store URIs of postgres and redis carry a password, and anyone who can view a
Dataflow job reads its parameters (and its graph is staged in a bucket). The
generated project's store module keeps the URI in Secret Manager and the job
gets `secretmanager://` and the version's name, which the workers read. These
tests run the generated Makefile's `deploy` with `DRY_RUN=1`, which prints each
command as argv (shlex-quoted) and runs none, against a local Terraform state
holding a value for every output `infra/` declares.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra import tfcheck
from tests.template.baking import Bake, combination_answers

VERSION = "projects/my-gcp-project/secrets/desk-memory-longterm/versions/1"
SECRET_URI = f"secretmanager://{VERSION}"
URIS = {
    "postgres": "postgresql+asyncpg://memory:pw-never-a-parameter@10.20.0.3:5432/memory",
    "redis": "rediss://:pw-never-a-parameter@10.20.0.4:6378/0",
}
REPOSITORY = "europe-west1-docker.pkg.dev/my-gcp-project/desk"
DIGEST = "sha256:<digest of the image just built>"


def _deployable(project: Path) -> None:
    """A local state with every output (the GCS backend dropped: it needs `init`)."""
    infra = project / "infra"
    versions = infra / "versions.tf"
    versions.write_text(re.sub(r'\n  backend "gcs" \{\n[^}]*\}\n', "\n", versions.read_text()))
    outputs: dict[str, dict[str, object]] = {}
    for name in tfcheck.parse_module(infra).outputs():
        outputs[name] = {"value": f"projects/my-gcp-project/things/{name}", "type": "string"}
    outputs["image_repository"]["value"] = REPOSITORY
    if "longterm_memory" in outputs:
        outputs["longterm_memory"]["value"] = SECRET_URI
    state = {
        "version": 4,
        "terraform_version": "1.11.0",
        "serial": 1,
        "lineage": "00000000-0000-4000-8000-000000000000",
        "outputs": outputs,
        "resources": [],
        "check_results": None,
    }
    (infra / "terraform.tfstate").write_text(json.dumps(state), encoding="utf-8")
    # `deploy` depends on `setup`; a venv on the test's interpreter stands in for it.
    bin_dir = project / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    stamp = project / ".venv" / ".installed-stamp"
    stamp.touch()
    newer = (project / "pyproject.toml").stat().st_mtime + 60
    os.utime(stamp, (newer, newer))


def _make_deploy(
    project: Path, terraform: str, *make_args: str
) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """`make deploy DRY_RUN=1 ...`, and the gcloud commands it printed, as argv lists."""
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    env = {
        "PATH": f"{Path(terraform).parent}:/usr/bin:/bin",
        "HOME": str(project),
        "TF_CLI_CONFIG_FILE": "/dev/null",
    }
    done = subprocess.run(
        ["make", "-s", "deploy", "DRY_RUN=1", *make_args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    commands = [shlex.split(line) for line in done.stdout.splitlines() if line.startswith("gcloud")]
    return done, commands


def _parameters(argv: list[str]) -> dict[str, str]:
    pairs = [arg.removeprefix("--parameters=") for arg in argv if arg.startswith("--parameters=")]
    return dict(pair.split("=", 1) for pair in pairs)


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_deploy_passes_a_secret_reference_and_never_the_store_uri(
    bake: Bake, terraform: str, backend: str
) -> None:
    project = bake(**combination_answers(backend, "fake", "yes"))
    _deployable(project)

    done, commands = _make_deploy(project, terraform)

    assert done.returncode == 0, done.stdout + done.stderr
    *_, run = commands
    assert len(commands) == 4, commands
    parameters = _parameters(run)
    assert parameters["longterm"] == SECRET_URI
    assert "longterm_secret" not in parameters
    assert parameters["input_subscription"].endswith("events_subscription")
    # The keys travel as their versions' names (terraform outputs), never as values.
    assert parameters["entity_hash_secret"].endswith("/entity_hash_key_version")
    assert parameters["answer_signing_secret"].endswith("/answer_signing_key_version")
    assert "pw-never-a-parameter" not in done.stdout + done.stderr
    ca = "redis-ca.pem" if backend == "redis" else "cloudsql-ca.pem"
    assert f"# would write certs/{ca}" in done.stdout


@pytest.mark.parametrize(
    ("backend", "provider"), [("bigtable", "gemini"), ("redis", "openai"), ("none", "fake")]
)
def test_deploy_builds_as_the_build_account_and_runs_private_workers_by_digest(
    bake: Bake, terraform: str, backend: str, provider: str
) -> None:
    project = bake(**combination_answers(backend, provider, "no"))
    _deployable(project)

    done, commands = _make_deploy(project, terraform, "IMAGE_TAG=v7")

    assert done.returncode == 0, done.stdout + done.stderr
    build, describe, template, run = commands
    tagged = f"{REPOSITORY}/{project.name}:v7"
    assert build[:4] == ["gcloud", "builds", "submit", "."]
    assert "--service-account=projects/my-gcp-project/things/build_service_account" in build
    assert f"--substitutions=_IMAGE={tagged}" in build
    assert describe[:6] == ["gcloud", "artifacts", "docker", "images", "describe", tagged]
    by_digest = f"{REPOSITORY}/{project.name}@{DIGEST}"
    assert f"--image={by_digest}" in template
    assert "--disable-public-ips" in run
    assert "--subnetwork=projects/my-gcp-project/things/subnetwork" in run
    assert _parameters(run)["sdk_container_image"] == by_digest
    assert _parameters(run)["entity_hash_secret"].endswith("/entity_hash_key_version")
    assert "answer_signing_secret" not in _parameters(run)


def test_a_sqlite_project_deploys_with_a_secret_version_it_is_given(
    bake: Bake, terraform: str
) -> None:
    project = bake(**combination_answers("sqlite", "fake", "yes"))
    _deployable(project)

    done, commands = _make_deploy(project, terraform, f"DEPLOY_LONGTERM_SECRET={VERSION}")

    assert done.returncode == 0, done.stdout + done.stderr
    *_, run = commands
    assert _parameters(run)["longterm"] == SECRET_URI


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("REGION", 'r"; touch {marker}; "'),
        ("PROJECT", "my-gcp-project$(touch {marker})"),
        ("IMAGE_TAG", "v1`touch {marker}`"),
        ("IMAGE_TAG", "$(shell touch {marker})"),
        ("IMAGE_TAG", "v1~model=py:evil:x"),
        ("DEPLOY_LONGTERM_SECRET", "projects/p/secrets/s/versions/1;touch {marker}"),
        ("DRY_RUN", "$(shell touch {marker})"),
    ],
)
def test_a_hostile_variable_runs_nothing(
    bake: Bake, terraform: str, tmp_path: Path, variable: str, value: str
) -> None:
    project = bake(**combination_answers("sqlite", "fake", "no"))
    _deployable(project)
    marker = tmp_path / "ran"
    secret = [] if variable == "DEPLOY_LONGTERM_SECRET" else [f"DEPLOY_LONGTERM_SECRET={VERSION}"]

    done, commands = _make_deploy(
        project, terraform, *secret, f"{variable}={value.format(marker=marker)}"
    )

    assert not marker.exists(), f"{variable} ran a command"
    if variable != "DRY_RUN":
        assert done.returncode != 0
        assert f"make deploy: {variable} is not valid" in done.stderr
        assert commands == []


def _regexes(project: Path) -> dict[str, list[re.Pattern[str]]]:
    metadata = json.loads((project / "metadata.json").read_text(encoding="utf-8"))
    return {
        param["name"]: [re.compile(regex) for regex in param.get("regexes", [])]
        for param in metadata["parameters"]
    }


def _accepts(patterns: list[re.Pattern[str]], value: str) -> bool:
    return all(pattern.search(value) for pattern in patterns)


@pytest.mark.parametrize("backend", ["postgres", "redis", "bigtable"])
def test_metadata_accepts_secret_references_and_refuses_credentials_in_parameters(
    bake: Bake, backend: str
) -> None:
    regexes = _regexes(bake(**combination_answers(backend, "fake", "no")))
    secret, longterm = regexes["longterm_secret"], regexes["longterm"]

    assert secret
    assert longterm
    for good in (VERSION, "projects/p-1/secrets/a_b-c/versions/latest"):
        assert _accepts(secret, good), good
    for bad in (
        URIS["redis"],
        "projects/p/secrets/s",
        "projects/p/secrets/s/versions/v1",
        "projects/p/secrets/s/versions/1 ",
        "projects/p/secrets/s/t/versions/1",
    ):
        assert not _accepts(secret, bad), bad
    assert _accepts(longterm, "bigtable://my-gcp-project/memory/beam-agents-longterm")
    assert _accepts(longterm, "firestore://my-gcp-project/beam_agents_longterm?database=m")
    assert _accepts(longterm, SECRET_URI)
    for uri in (*URIS.values(), "redis://10.0.0.1:6379/0?password=x", "rediss://:x@h/0"):
        assert not _accepts(longterm, uri), uri


@pytest.mark.parametrize("provider", ["fake", "openai", "gemini"])
def test_the_model_parameter_refuses_a_key_like_the_apps(bake: Bake, provider: str) -> None:
    project = bake(**combination_answers("none", provider, "no"))
    (model,) = _regexes(project)["model"]
    package = project.name.replace("-", "_")
    for good in (
        "fake",
        "openai:gpt-4o-mini?api_key_secret=projects/p/secrets/k/versions/latest",
        "gemini:gemini-2.5-flash?api_key_env=GEMINI_API_KEY",
        f"py:{package}.agent:scripted_model",
    ):
        assert model.search(good), good
    for bad in ("openai:gpt-4o-mini?api_key=sk-live-1", "gemini:m?token=t", "rules; rm", ""):
        assert not model.search(bad), bad
    app = json.loads((Path(__file__).parents[2] / "app" / "metadata.json").read_text())
    (app_model,) = [p["regexes"][0] for p in app["parameters"] if p["name"] == "model"]
    assert model.pattern == app_model.replace("rules|", "")


def test_the_otlp_endpoint_parameter_is_the_apps(bake: Bake) -> None:
    """No credential in the endpoint: a job's parameters are readable by its viewers."""
    (endpoint,) = _regexes(bake(**combination_answers("none", "fake", "no")))["otlp_endpoint"]
    for good in ("http://10.128.0.9:4318/v1/traces", "https://otel.example.com"):
        assert endpoint.search(good), good
    for bad in ("https://u:pw@otel.example.com/v1/traces", "http://h/v1/traces?token=t", ""):
        assert not endpoint.search(bad), bad
    app = json.loads((Path(__file__).parents[2] / "app" / "metadata.json").read_text())
    (app_endpoint,) = [p["regexes"][0] for p in app["parameters"] if p["name"] == "otlp_endpoint"]
    assert endpoint.pattern == app_endpoint
