"""`make deploy` never passes a store password as a job parameter; metadata.json guards both.

The store URIs of postgres and redis carry a password, and anyone who can view a
Dataflow job reads its parameters. The generated project keeps the URI in a
Secret Manager secret that `infra/` creates and passes only the version's name.
These tests run the generated Makefile's `deploy` as a dry run (`make -n`) against
a Terraform state with the outputs `infra/` declares, the URI among them, then let
the shell expand the printed `gcloud ... flex-template run` command into the exact
arguments gcloud would receive.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import tfcheck
from baking import Bake, combination_answers

PASSWORD = "pw-never-a-parameter"
URIS = {
    "postgres": f"postgresql+asyncpg://memory:{PASSWORD}@10.20.0.3:5432/memory",
    "redis": f"rediss://:{PASSWORD}@10.20.0.4:6378/0",
}
VERSION = "projects/my-gcp-project/secrets/desk-longterm/versions/1"


def _state(infra: Path, uri: str) -> None:
    """A local Terraform state holding a value for every output `infra/` declares."""
    outputs: dict[str, dict[str, object]] = {}
    for name in tfcheck.parse_module(infra).outputs():
        value = f"projects/my-gcp-project/things/{name}"
        outputs[name] = {"value": value, "type": "string"}
    outputs["longterm_memory"] = {"value": uri, "type": "string", "sensitive": True}
    if "longterm_secret_version_id" in outputs:
        outputs["longterm_secret_version_id"]["value"] = VERSION
    state = {
        "version": 4,
        "terraform_version": "1.5.7",
        "serial": 1,
        "lineage": "00000000-0000-4000-8000-000000000000",
        "outputs": outputs,
        "resources": [],
        "check_results": None,
    }
    (infra / "terraform.tfstate").write_text(json.dumps(state), encoding="utf-8")


def _deploy_dry_run(project: Path, terraform: str, *make_args: str) -> tuple[str, list[str]]:
    """`make -n deploy`'s output, and the arguments its flex-template run passes to gcloud."""
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    env = {"PATH": f"{Path(terraform).parent}:/usr/bin:/bin", "HOME": str(project)}
    dry = subprocess.run(
        ["make", "-n", "deploy", *make_args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert dry.returncode == 0, dry.stdout + dry.stderr
    (command,) = re.findall(
        r"^gcloud dataflow flex-template run (.*?)(?<!\\)$", dry.stdout, re.M | re.S
    )
    # The shell expands the printed command (its $(terraform output ...) included) into argv.
    expanded = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {command}"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dry.stdout, expanded.stdout.split("\0")[:-1]


def _parameters(argv: list[str]) -> dict[str, str]:
    """The `--parameters NAME=VALUE` pairs of a gcloud argument list."""
    pairs = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--parameters"]
    return dict(pair.split("=", 1) for pair in pairs)


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_deploy_passes_the_secret_version_and_never_the_store_uri(
    bake: Bake, terraform: str, backend: str
) -> None:
    project = bake(**combination_answers(backend, "fake", "yes"))
    _state(project / "infra", URIS[backend])

    printed, argv = _deploy_dry_run(project, terraform)

    parameters = _parameters(argv)
    assert parameters["longterm_secret"] == VERSION
    assert "longterm" not in parameters
    assert parameters["input_subscription"].endswith("events_subscription")
    for text in (printed, *argv):
        assert PASSWORD not in text
        assert URIS[backend] not in text
    assert "longterm_memory" not in printed


def test_a_sqlite_project_deploys_with_a_secret_version_it_is_given(
    bake: Bake, terraform: str
) -> None:
    project = bake(**combination_answers("sqlite", "fake", "yes"))
    _state(project / "infra", URIS["postgres"])

    printed, argv = _deploy_dry_run(project, terraform, f"DEPLOY_LONGTERM_SECRET={VERSION}")

    parameters = _parameters(argv)
    assert parameters["longterm_secret"] == VERSION
    assert "longterm" not in parameters
    assert PASSWORD not in printed


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_infra_stores_the_uri_in_a_secret_only_the_worker_may_read(
    bake: Bake, backend: str
) -> None:
    project = bake(**combination_answers(backend, "fake", "no"))
    module = tfcheck.parse_module(project / "infra")

    resources = {(kind, name): body for _, kind, name, body in module.typed_blocks("resource")}
    version = resources[("google_secret_manager_secret_version", "longterm")]
    assert "module.memory.longterm_memory" in str(version["secret_data"])
    members = [
        body["member"]
        for (kind, _), body in resources.items()
        if kind.startswith("google_secret_manager_secret_iam")
    ]
    assert members == ["serviceAccount:${module.runtime.service_account_email}"]
    output = module.outputs()["longterm_secret_version_id"]
    assert output["value"] == "${google_secret_manager_secret_version.longterm.name}"
    assert module.outputs()["longterm_memory"]["sensitive"] is True


def _regexes(project: Path) -> dict[str, list[re.Pattern[str]]]:
    metadata = json.loads((project / "metadata.json").read_text(encoding="utf-8"))
    return {
        param["name"]: [re.compile(regex) for regex in param.get("regexes", [])]
        for param in metadata["parameters"]
    }


def _accepts(patterns: list[re.Pattern[str]], value: str) -> bool:
    return all(pattern.search(value) for pattern in patterns)


@pytest.mark.parametrize("backend", ["postgres", "redis", "bigtable"])
def test_metadata_accepts_secret_versions_and_refuses_credentials_in_parameters(
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
    for uri in (*URIS.values(), "redis://10.0.0.1:6379/0?password=x", "rediss://:x@h/0"):
        assert not _accepts(longterm, uri), uri
