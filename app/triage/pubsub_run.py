"""`python -m app.triage run --input_subscription ...`: the triage pipeline on Pub/Sub.

The same `triage()` pipeline as the local run, fed from the alerts (and answers)
subscriptions and publishing outputs, intents, errors and, when a lifecycle topic
is given, lifecycle records (`app.triage.pubsub_io`). It runs on whatever runner
the Beam options name: the streaming DirectRunner against the emulator in tests,
Dataflow from the Flex Template (`app/flex_main.py`, `app/metadata.json`).

The labels below are part of the contract with a running job: `--update` matches
the old and new pipelines by transform name, so they never change
(tests/app/test_dataflow_graph.py pins them).

A store URI with a password is not a launcher parameter: `--longterm_secret` names a
Secret Manager version holding it. The launcher does not read it: the pipeline carries
`secretmanager://VERSION`, and each worker reads the URI in its DoFn's `setup()`, so the
password is in neither the job's parameters nor the graph Dataflow stages.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from app.triage.pipeline import DEFAULT_EMBEDDER, STORM_MAX, triage
from app.triage.pubsub_io import (
    INVALID,
    PublishJson,
    ReadAlerts,
    ReadAnswers,
    error_message,
    id_label_for,
    intent_message,
    lifecycle_message,
    output_message,
)
from beam_agents import TelemetryOptions
from beam_agents.memory.stores import redact_uri
from beam_agents.memory.stores.uri import SECRET_SCHEME

__all__ = [
    "LABELS",
    "SERVICE_NAME",
    "PubSubSettings",
    "add_pubsub_arguments",
    "build_pubsub_pipeline",
    "longterm_uri",
    "run_on_pubsub",
]

READ_ALERTS: Final = "ReadAlerts"
READ_ANSWERS: Final = "ReadAnswers"
ALL_ERRORS: Final = "AllErrors"
PUBLISH: Final = {
    "outputs": "PublishOutputs",
    "intents": "PublishIntents",
    "errors": "PublishErrors",
    "lifecycle": "PublishLifecycle",
}
LABELS: Final = (READ_ALERTS, READ_ANSWERS, ALL_ERRORS, *PUBLISH.values())
"""The Pub/Sub edges' stable transform labels (the pipeline's own are in app.triage.pipeline)."""

SERVICE_NAME: Final = "triage"
"""The `service.name` of the triage job's spans."""

_SUBSCRIPTION = "projects/PROJECT/subscriptions/NAME"
_TOPIC = "projects/PROJECT/topics/NAME"


@dataclass(frozen=True)
class PubSubSettings:
    """Where the pipeline reads and publishes."""

    input_subscription: str
    outputs_topic: str
    intents_topic: str
    errors_topic: str
    answers_subscription: str | None = None
    lifecycle_topic: str | None = None


def add_pubsub_arguments(run: argparse.ArgumentParser) -> None:
    """`run`'s Pub/Sub flags (the Flex Template parameters in app/metadata.json)."""
    group = run.add_argument_group("Pub/Sub (instead of --input/--answers/--out)")
    group.add_argument("--input_subscription", metavar=_SUBSCRIPTION, help="alerts to triage")
    group.add_argument("--answers_subscription", metavar=_SUBSCRIPTION, help="approval answers")
    group.add_argument("--outputs_topic", metavar=_TOPIC, help="where decisions go")
    group.add_argument("--intents_topic", metavar=_TOPIC, help="where tool intents go")
    group.add_argument("--errors_topic", metavar=_TOPIC, help="where dead letters go")
    group.add_argument(
        "--lifecycle_topic", metavar=_TOPIC, help="where lifecycle records go (off if omitted)"
    )
    group.add_argument(
        "--longterm_secret",
        metavar="projects/P/secrets/S/versions/V",
        help="Secret Manager version holding the store URI, instead of --longterm",
    )
    group.add_argument(
        "--answer_signing_secret",
        metavar="projects/P/secrets/S/versions/V",
        help="where the key approval answers must be signed with lives: a Secret Manager "
        "version (or env:NAME), read by each worker (AgentConfig.answer_signing_key); the "
        "console signs with `beam-agents console --answer-signing-key` and the same source. "
        "Without it anyone who can publish answers decides approvals",
    )


def settings_from(args: argparse.Namespace) -> PubSubSettings:
    """The settings from parsed flags; a missing topic is a `ValueError` naming the flag."""
    for flag in ("outputs_topic", "intents_topic", "errors_topic"):
        if not getattr(args, flag):
            raise ValueError(f"--input_subscription needs --{flag} too")
    return PubSubSettings(
        input_subscription=args.input_subscription,
        outputs_topic=args.outputs_topic,
        intents_topic=args.intents_topic,
        errors_topic=args.errors_topic,
        answers_subscription=args.answers_subscription,
        lifecycle_topic=args.lifecycle_topic,
    )


def build_pubsub_pipeline(
    pipeline: beam.Pipeline,
    settings: PubSubSettings,
    *,
    model_spec: str,
    longterm_uri: str,
    answer_signing_key: str | None = None,
    embedder_spec: str = DEFAULT_EMBEDDER,
) -> None:
    """Apply read → triage → publish to `pipeline` (built, not run).

    `answer_signing_key` (`AgentConfig.answer_signing_key`): answers are
    read whole and resume an approval only with a valid signature.
    """
    id_label = id_label_for(pipeline.options)
    alerts = pipeline | READ_ALERTS >> ReadAlerts(settings.input_subscription, id_label=id_label)
    invalid = [alerts[INVALID]]
    answers = None
    if settings.answers_subscription:
        read = pipeline | READ_ANSWERS >> ReadAnswers(
            settings.answers_subscription,
            id_label=id_label,
            signed=answer_signing_key is not None,
        )
        answers = read.answers
        invalid.append(read[INVALID])
    result = triage(
        alerts.alerts,
        answers,
        model_spec=model_spec,
        longterm_uri=longterm_uri,
        lifecycle=settings.lifecycle_topic is not None,
        answer_signing_key=answer_signing_key,
        embedder_spec=embedder_spec,
        coalesce_max=STORM_MAX,
    )
    errors = (result.errors, *invalid) | ALL_ERRORS >> beam.Flatten()
    _ = result.outputs | PUBLISH["outputs"] >> PublishJson(settings.outputs_topic, output_message)
    _ = result.intents | PUBLISH["intents"] >> PublishJson(settings.intents_topic, intent_message)
    _ = errors | PUBLISH["errors"] >> PublishJson(settings.errors_topic, error_message)
    if settings.lifecycle_topic and result.lifecycle is not None:
        _ = result.lifecycle | PUBLISH["lifecycle"] >> PublishJson(
            settings.lifecycle_topic, lifecycle_message
        )


def longterm_uri(args: argparse.Namespace) -> str:
    """The store URI the pipeline carries: `--longterm`, or a reference to `--longterm_secret`."""
    if bool(args.longterm) == bool(args.longterm_secret):
        raise ValueError("give exactly one of --longterm URI and --longterm_secret VERSION")
    if args.longterm:
        return str(args.longterm)
    return f"{SECRET_SCHEME}://{args.longterm_secret}"


def pipeline_options(
    beam_args: Sequence[str],
    *,
    otlp_endpoint: str | None = None,
    entity_hash_secret: str | None = None,
) -> PipelineOptions:
    """Beam options for a streaming run; workers on the launcher's image use its SDK as is.

    `otlp_endpoint` becomes the `--otlp_endpoint` pipeline option: each worker
    (this process, on the DirectRunner) exports the spans it makes, as `triage`
    unless `--otlp_service_name` says otherwise. `entity_hash_secret` becomes the
    `--entity_hash_secret` pipeline option: where the workers read the key they hash
    entity keys under.
    """
    args = list(beam_args)
    if any(a.startswith("--sdk_container_image") for a in args) and not any(
        a.startswith("--sdk_location") for a in args
    ):
        args.append("--sdk_location=container")
    if otlp_endpoint:
        args.append(f"--otlp_endpoint={otlp_endpoint}")
        if not any(a.startswith("--otlp_service_name") for a in args):
            args.append(f"--otlp_service_name={SERVICE_NAME}")
    if entity_hash_secret:
        args.append(f"--entity_hash_secret={entity_hash_secret}")
    return PipelineOptions(args, streaming=True)


def banner(settings: PubSubSettings, longterm_uri: str, options: PipelineOptions) -> str:
    """What a run reads and writes, and how to stop it: printed before it starts."""
    runner = options.view_as(StandardOptions).runner or "DirectRunner"
    lines = [
        f"triage on Pub/Sub ({runner}, streaming)",
        f"  reading alerts  {settings.input_subscription}",
    ]
    if settings.answers_subscription:
        lines.append(f"  reading answers {settings.answers_subscription}")
    lines += [
        f"  outputs   -> {settings.outputs_topic}",
        f"  intents   -> {settings.intents_topic}",
        f"  errors    -> {settings.errors_topic}",
    ]
    if settings.lifecycle_topic:
        lines.append(f"  lifecycle -> {settings.lifecycle_topic}")
    lines.append(f"  long-term memory in {redact_uri(longterm_uri)}")
    otlp_endpoint = options.view_as(TelemetryOptions).otlp_endpoint
    if otlp_endpoint:
        lines.append(f"  spans     -> {redact_uri(otlp_endpoint)} (from each worker)")
    if runner in ("DirectRunner", "BundleBasedDirectRunner"):
        lines.append(
            "It runs until stopped: Ctrl-C (the DirectRunner may take up to 30 s to let go "
            "of its Pub/Sub pull)."
        )
    else:
        lines.append("It runs until drained or cancelled (gcloud dataflow jobs drain JOB_ID).")
    return "\n".join(lines)


def run_on_pubsub(args: argparse.Namespace, beam_args: Sequence[str]) -> int:
    """Build and run the streaming pipeline until it is drained, cancelled or killed."""
    settings = settings_from(args)
    uri = longterm_uri(args)
    options = pipeline_options(
        beam_args, otlp_endpoint=args.otlp_endpoint, entity_hash_secret=args.entity_hash_secret
    )
    pipeline = beam.Pipeline(options=options)
    build_pubsub_pipeline(
        pipeline,
        settings,
        model_spec=args.model,
        longterm_uri=uri,
        answer_signing_key=args.answer_signing_secret,
        embedder_spec=args.embedder,
    )
    print(banner(settings, uri, pipeline.options), file=sys.stderr, flush=True)
    result = pipeline.run()
    result.wait_until_finish()
    return 0
