"""`--otlp_endpoint`: a pipeline option that has every worker export its own spans.

Activations run, and make their spans, in the worker processes of the
runner (Dataflow's SDK harness, a Flink task manager's Python worker), not
in the process that launched the job. `RunAgent` reads these options from
its pipeline when it is applied and hands the agent DoFn a `WorkerExport`;
each worker process then installs the OTLP/HTTP exporter once, as its first
agent DoFn instance is set up and before any activation, and flushes it at
the DoFn's teardown and at exit. Without the option nothing is installed
and the runtime keeps to the OpenTelemetry API alone.

On a local runner the launching process is the worker: the exporter is
installed there, once, however many DoFn instances ask for it.

`--entity_hash_secret` names where the deployment's key for hashing entity
keys lives (`beam_agents.entity_hash`); the DoFn carries that reference and
each worker reads the key itself.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from typing import Final

from apache_beam.options.pipeline_options import PipelineOptions

from beam_agents._connections.url_credentials import redact_uri
from beam_agents.entity_hash import OPTION as ENTITY_HASH_OPTION
from beam_agents.entity_hash import EntityHashKey
from beam_agents.errors import ConfigurationError
from beam_agents.telemetry import (
    TRACES_PATH,
    ensure_otlp_export,
    flush_otlp_exports,
    traces_endpoint,
)

__all__ = ["DEFAULT_SERVICE_NAME", "TelemetryOptions", "WorkerExport", "entity_hash_key"]

DEFAULT_SERVICE_NAME: Final = "beam-agents"
_TEARDOWN_FLUSH_MS: Final = 5_000

_log = logging.getLogger(__name__)


class TelemetryOptions(PipelineOptions):
    """Where the workers export their spans (`--otlp_endpoint`, `--otlp_service_name`), and
    where the key they hash entity keys under lives (`--entity_hash_secret`)."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--otlp_endpoint",
            default=None,
            help="OTLP/HTTP endpoint every worker exports its activation spans to, e.g. "
            f"http://otel-collector:4318{TRACES_PATH} (a bare http://host:4318 gets "
            f"{TRACES_PATH}); needs the telemetry extra on the workers. Off when omitted.",
        )
        parser.add_argument(
            "--otlp_service_name",
            default=DEFAULT_SERVICE_NAME,
            help=f"service.name of the exported spans' resource (default {DEFAULT_SERVICE_NAME})",
        )
        parser.add_argument(
            f"--{ENTITY_HASH_OPTION}",
            default=None,
            help="where this deployment's key for hashing entity keys in spans and dead-letter "
            "logs lives: env:NAME or projects/P/secrets/S/versions/V, read by each worker "
            "(never the key itself). Without it each worker process uses a random key, so "
            "hashes do not match across workers.",
        )


def entity_hash_key(options: PipelineOptions) -> EntityHashKey | None:
    """The key reference `options` name, validated; None without `--entity_hash_secret`."""
    source: str | None = options.view_as(TelemetryOptions).entity_hash_secret
    return None if source is None else EntityHashKey(source)


@dataclass(frozen=True, slots=True, repr=False)
class WorkerExport:
    """What the agent DoFn carries to the workers: where to export, under which name.

    The endpoint may hold a credential (userinfo, a `token=` parameter), so
    `repr` and the log show it redacted.
    """

    endpoint: str
    service_name: str = DEFAULT_SERVICE_NAME

    def __post_init__(self) -> None:
        # Validated here, so a bad endpoint fails where the pipeline is built, not on workers.
        object.__setattr__(self, "endpoint", traces_endpoint(self.endpoint))
        if not self.service_name.strip():
            raise ConfigurationError("otlp_service_name", "must not be empty")

    @classmethod
    def from_options(cls, options: PipelineOptions) -> WorkerExport | None:
        """The export `options` ask for, validated; None without `--otlp_endpoint`."""
        telemetry = options.view_as(TelemetryOptions)
        endpoint: str | None = telemetry.otlp_endpoint
        if endpoint is None:
            return None
        name: str | None = telemetry.otlp_service_name
        return cls(endpoint, name if name is not None else DEFAULT_SERVICE_NAME)

    def start(self) -> None:
        """Install the exporter in this worker process unless it is there already."""
        if ensure_otlp_export(self.endpoint, service_name=self.service_name):
            _log.info("exporting spans to %s as %s", redact_uri(self.endpoint), self.service_name)

    def flush(self) -> None:
        """Send the spans batched so far: a DoFn instance going away may be the last one."""
        flush_otlp_exports(_TEARDOWN_FLUSH_MS)

    def __repr__(self) -> str:
        endpoint = redact_uri(self.endpoint)
        return f"WorkerExport(endpoint={endpoint!r}, service_name={self.service_name!r})"
