"""`make deploy`: from Terraform outputs to a running triage job on Dataflow.

Reads `terraform output -json` of `infra/examples/triage_<STORE>`, then runs, in order:
`gcloud builds submit` (the image of app/Dockerfile, built as the deployment's own build
service account), `gcloud artifacts docker images describe` (the digest the tag now
names), `gcloud dataflow flex-template build` (the template spec, with app/metadata.json)
and `gcloud dataflow flex-template run` (the streaming job on private workers, parameters
from the `launcher_parameters` output). Everything after the build names the image by
digest, so what runs is what was built even if a tag moved. With `--dry-run` it prints
every command with its values resolved and runs none (it still reads the Terraform
outputs, which changes nothing). Standard library only, so it runs from any Python 3.11
without the project's virtualenv.

Every input is validated before anything runs: PROJECT, REGION and TAG against strict
patterns (a `~` in TAG would otherwise add Flex Template parameters), and no command goes
through a shell. Sensitive outputs (a store URI with its password) are never read,
printed or passed on: the job gets Secret Manager names only (see the examples'
`launcher_parameters`).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STORES = ("bigtable", "cloudsql", "firestore", "redis")
JOB_NAME = "triage"
IMAGE_NAME = "triage"
#: Extras the image installs: every store client (one extra holds them all, with Secret
#: Manager for a `secretmanager://` store URI), the model providers, and the
#: OpenTelemetry SDK the workers export spans with when the job has `otlp_endpoint`.
EXTRAS = "memory-stores,providers,telemetry"
#: Outputs every example has.
REQUIRED_OUTPUTS = (
    "project_id",
    "region",
    "launcher_parameters",
    "service_account_email",
    "build_service_account",
    "build_source_location",
    "staging_location",
    "temp_location",
    "template_path",
    "image_repository",
    "subnetwork",
)
#: A Docker tag (at most 128 characters of [A-Za-z0-9_.-], not starting with `.` or `-`).
TAG_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
#: A Google Cloud project id.
PROJECT_PATTERN = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
#: A Google Cloud region, e.g. europe-west1 or us-central1.
REGION_PATTERN = re.compile(r"[a-z]+(-[a-z]+)+[0-9]+")
#: What `gcloud artifacts docker images describe` prints for the pushed image.
DIGEST_PATTERN = re.compile(r"sha256:[0-9a-f]{64}")
#: Stands for the digest in the commands after the build until it is known.
DIGEST = "@{digest}"
#: Where a store's server CA goes in the build context, per store that has one: the Redis
#: URI's ssl_ca_certs names its path in the image (infra/examples/triage_redis), and the
#: image points PGSSLROOTCERT at the Cloud SQL one (app/Dockerfile).
SERVER_CAS = {
    "redis": Path("app/certs/redis-ca.pem"),
    "cloudsql": Path("app/certs/cloudsql-ca.pem"),
}


class DeployError(Exception):
    """A deployment cannot proceed; the message says what to fix."""


@dataclass(frozen=True)
class Plan:
    """What a deployment does: files it writes, then commands it runs, in order.

    `digest` prints the pushed image's digest; `launch` commands name the image as
    `...@{digest}` until it is known.
    """

    writes: tuple[tuple[Path, str], ...]
    build: tuple[str, ...]
    digest: tuple[str, ...]
    launch: tuple[tuple[str, ...], ...]

    @property
    def commands(self) -> tuple[tuple[str, ...], ...]:
        """Every command, in order (the launch ones with the digest still a placeholder)."""
        return (self.build, self.digest, *self.launch)


def check_inputs(*, project: str, region: str, tag: str) -> None:
    """Refuse a PROJECT, REGION or TAG that is not exactly what its name says."""
    for name, value, pattern in (
        ("PROJECT", project, PROJECT_PATTERN),
        ("REGION", region, REGION_PATTERN),
        ("TAG", tag, TAG_PATTERN),
    ):
        if not pattern.fullmatch(value):
            raise DeployError(f"{name}={value!r} is not valid: it must match {pattern.pattern}")


def plan(
    outputs: Mapping[str, Any],
    *,
    store: str,
    project: str,
    region: str,
    tag: str,
    update: bool = False,
) -> Plan:
    """The deployment for one example's `terraform output -json`, or a `DeployError`."""
    check_inputs(project=project, region=region, tag=tag)
    values = _values(outputs, store)
    if values["project_id"] != project:
        raise DeployError(
            f"PROJECT={project} but infra/examples/triage_{store} was applied to project "
            f"{values['project_id']}"
        )
    if values["region"] != region:
        raise DeployError(
            f"REGION={region} but infra/examples/triage_{store} was applied in {values['region']}"
        )
    image = f"{values['image_repository']}/{IMAGE_NAME}:{tag}"
    build = (
        "gcloud", "builds", "submit", ".",
        f"--project={project}",
        f"--region={region}",
        "--config=app/cloudbuild.yaml",
        f"--service-account={values['build_service_account']}",
        f"--gcs-source-staging-dir={values['build_source_location']}",
        f"--substitutions=^~^_IMAGE={image}~_EXTRAS={EXTRAS}",
    )  # fmt: skip
    digest = (
        "gcloud", "artifacts", "docker", "images", "describe", image,
        f"--project={project}",
        "--format=value(image_summary.digest)",
    )  # fmt: skip
    writes: tuple[tuple[Path, str], ...] = ()
    if store in SERVER_CAS:
        writes = ((SERVER_CAS[store], _required(outputs, "server_ca_cert", store)),)
    return Plan(writes, build, digest, _launch(values, image=image + DIGEST, update=update))


def _launch(values: Mapping[str, Any], *, image: str, update: bool) -> tuple[tuple[str, ...], ...]:
    """Template build and job run, on the image by digest, workers without public IPs."""
    template = values["template_path"]
    project = values["project_id"]
    parameters = dict(values["launcher_parameters"])
    # Workers run the launcher's image, so both sides see the same code and SDK.
    parameters["sdk_container_image"] = image
    template_build = (
        "gcloud", "dataflow", "flex-template", "build", template,
        f"--project={project}",
        f"--image={image}",
        "--sdk-language=PYTHON",
        "--metadata-file=app/metadata.json",
    )  # fmt: skip
    run = [
        "gcloud", "dataflow", "flex-template", "run", JOB_NAME,
        f"--project={project}",
        f"--region={values['region']}",
        f"--template-file-gcs-location={template}",
        f"--service-account-email={values['service_account_email']}",
        f"--staging-location={values['staging_location']}",
        f"--temp-location={values['temp_location']}",
        f"--subnetwork={values['subnetwork']}",
        "--disable-public-ips",
        "--enable-streaming-engine",
    ]  # fmt: skip
    # `^~^` makes `~` the separator: model specs and URIs may hold commas.
    run.append("--parameters=^~^" + "~".join(f"{k}={v}" for k, v in sorted(parameters.items())))
    if update:
        run.append("--update")
    return template_build, tuple(run)


def _values(outputs: Mapping[str, Any], store: str) -> dict[str, Any]:
    values = {name: _required(outputs, name, store) for name in REQUIRED_OUTPUTS}
    parameters = values["launcher_parameters"]
    if not isinstance(parameters, dict) or not parameters:
        raise DeployError(f"output `launcher_parameters` of triage_{store} is not a map")
    for name, value in parameters.items():
        if "~" in str(value):
            raise DeployError(f"launcher parameter `{name}` contains `~`, the separator")
    return values


def _required(outputs: Mapping[str, Any], name: str, store: str) -> Any:
    entry = outputs.get(name)
    if not isinstance(entry, dict) or "value" not in entry:
        raise DeployError(
            f"terraform output `{name}` is missing from infra/examples/triage_{store}: run "
            f"`terraform apply` there (with this repository's version of the example) first"
        )
    if entry.get("sensitive"):
        raise DeployError(f"terraform output `{name}` is sensitive; make deploy never reads it")
    return entry["value"]


def terraform_outputs(store: str) -> dict[str, Any]:
    """`terraform output -json` of the store's example (read-only)."""
    directory = REPO / "infra" / "examples" / f"triage_{store}"
    result = subprocess.run(  # noqa: S603 - fixed argv; terraform is looked up on PATH
        ["terraform", f"-chdir={directory}", "output", "-json"],  # noqa: S607
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise DeployError(f"terraform output failed in {directory}: {result.stderr.strip()}")
    outputs: dict[str, Any] = json.loads(result.stdout or "{}")
    if not outputs:
        raise DeployError(f"{directory} has no outputs: run `terraform apply` there first")
    return outputs


def execute(deployment: Plan, *, dry_run: bool) -> None:
    """Write the files and run the commands, or, dry, print what would happen."""
    for path, content in deployment.writes:
        if dry_run:
            print(f"# would write {path} ({len(content.encode())} bytes)")
        else:
            (REPO / path).parent.mkdir(parents=True, exist_ok=True)
            (REPO / path).write_text(content)
    _run(deployment.build, dry_run=dry_run)
    digest = _image_digest(deployment.digest, dry_run=dry_run)
    for command in deployment.launch:
        _run(tuple(arg.replace(DIGEST, f"@{digest}") for arg in command), dry_run=dry_run)


def _run(command: tuple[str, ...], *, dry_run: bool) -> None:
    print(shlex.join(command), flush=True)
    if not dry_run:
        subprocess.run(command, cwd=REPO, check=True)  # noqa: S603 - argv built above


def _image_digest(command: tuple[str, ...], *, dry_run: bool) -> str:
    """The digest the build pushed; dry, a placeholder that says so."""
    print(shlex.join(command), flush=True)
    if dry_run:
        return "sha256:<digest of the image just built>"
    found = subprocess.run(  # noqa: S603 - argv built above
        command, cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.strip()
    if not DIGEST_PATTERN.fullmatch(found):
        raise DeployError(f"`{shlex.join(command)}` printed {found!r}, not a sha256 digest")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make deploy", description=__doc__.split("\n")[0])
    parser.add_argument("--project", required=True, help="Google Cloud project (PROJECT=)")
    parser.add_argument("--region", required=True, help="Dataflow region (REGION=)")
    parser.add_argument("--store", default="bigtable", choices=STORES, help="STORE=")
    parser.add_argument(
        "--tag", required=True, help="image tag (TAG=, default: git HEAD); tags are immutable"
    )
    parser.add_argument("--update", action="store_true", help="update the running job")
    parser.add_argument("--dry-run", action="store_true", help="print commands, run none")
    parser.add_argument(
        "--outputs-json", type=Path, help="read this `terraform output -json` file instead"
    )
    args = parser.parse_args(argv)
    if not args.project or not args.region:
        parser.error("PROJECT and REGION are required: make deploy PROJECT=p REGION=r")
    try:
        check_inputs(project=args.project, region=args.region, tag=args.tag)
        outputs = (
            json.loads(args.outputs_json.read_text())
            if args.outputs_json
            else terraform_outputs(args.store)
        )
        deployment = plan(
            outputs,
            store=args.store,
            project=args.project,
            region=args.region,
            tag=args.tag,
            update=args.update,
        )
        execute(deployment, dry_run=args.dry_run)
    except DeployError as exc:
        print(f"make deploy: {exc}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(
            f"make deploy: `{shlex.join(exc.cmd)}` failed (exit {exc.returncode})", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
