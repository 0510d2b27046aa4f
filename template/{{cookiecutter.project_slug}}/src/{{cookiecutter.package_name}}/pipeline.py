{%- set store = cookiecutter.longterm_backend != "none" -%}
{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The command line: `python -m <package>.pipeline --input FILE | --input_subscription SUB`.

`--input FILE` (JSON lines, what `make run` uses) runs the graph (`graph.py`) on
local files (`files.py`) and prints every record; without `--model` it uses the
offline scripted model. `--input_subscription` with the topic flags is what the
Dataflow job uses (Dockerfile, metadata.json, `make deploy`; `pubsub_io.py`),
with the deploy model by default; `--runner DataflowRunner --dry_run=True`
builds that job's graph offline. A local run builds the model provider once
before the pipeline, so a missing API key is one line, not a traceback per event.

`--otlp_endpoint URL` (and `--otlp_service_name`) are Beam pipeline options
(`beam_agents.TelemetryOptions`): every worker, or this process on a local run,
exports its spans to that OTLP/HTTP receiver. Without it nothing is exported.
`--entity_hash_secret projects/P/secrets/S/versions/V` is one too: the key the
workers hash entity keys under in spans and dead-letter logs, read by each
worker, so hashes match across workers (without it each process draws its own).
{%- if hitl %}

`--answer_signing_secret` (a Secret Manager version, or `env:NAME`) becomes
`AgentConfig.answer_signing_key`: the job then resumes an approval only for an
answer signed under that key (`beam-agents console --answer-signing-key`), and
reads each answer message whole so the agent can verify it; unsigned or forged
answers are dead letters. Without it anyone who can publish answers decides.
{%- endif %}
{%- if store %}

A store URI with a password is never a job parameter (anyone who can view the
job reads those) nor part of the job's graph (which is staged in a bucket):
`--longterm_secret` names a Secret Manager version holding it, the pipeline
carries `secretmanager://` and that name, and each worker reads the URI when
it opens the store.
{%- endif %}
"""

from __future__ import annotations

import argparse
import asyncio
{%- if store %}
import re
{%- endif %}
import sys
from collections.abc import Sequence
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from beam_agents import AgentConfig
{%- if cookiecutter.longterm_backend == "sqlite" %}
from beam_agents.memory.stores import open_store
{%- endif %}
{%- if store %}
from beam_agents.memory.stores.preflight import StoreNotReadyError, check_local_store
{%- endif %}
{%- if cookiecutter.longterm_backend == "sqlite" and cookiecutter.framework != "plain" %}
from beam_agents.tools import open_ledger
{%- endif %}

from {{ cookiecutter.package_name }} import files, graph, pubsub_io
{%- if store %}

#: What `--longterm_secret` takes: a Secret Manager version's resource name (V: a number or latest).
SECRET_VERSION = re.compile(
    r"projects/[^/\s]+/secrets/[A-Za-z0-9_-]{1,255}/versions/(latest|[0-9]+)"
)


def longterm_from_secret(version: str) -> str:
    """The store URI naming a Secret Manager version: the workers read it, not the launcher.

    Nothing is read here, so the password stays out of the graph the launcher builds
    and stages; `infra/` lets only the worker service account read the secret.
    """
    return f"secretmanager://{version}"
{%- endif %}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m {{ cookiecutter.package_name }}.pipeline", description=__doc__.splitlines()[0]
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", type=Path, help="local JSON-lines events {key, text, time_ms}")
    source.add_argument("--input_subscription", help="Pub/Sub subscription of JSON events")
{%- if hitl %}
    parser.add_argument("--answers", type=Path, help="local JSON-lines answers (with --input)")
    parser.add_argument("--answers_subscription", help="Pub/Sub subscription of JSON answers")
    parser.add_argument(
        "--answer_signing_secret",
        metavar="projects/P/secrets/S/versions/V",
        help="where the key answers must be signed with lives (or env:NAME); the workers "
        "read it, the console signs with --answer-signing-key and the same source",
    )
{%- endif %}
    parser.add_argument("--outputs_topic", help="Pub/Sub topic for agent outputs")
    parser.add_argument("--intents_topic", help="Pub/Sub topic for tool intents")
    parser.add_argument("--errors_topic", help="Pub/Sub topic for dead letters")
    parser.add_argument(
        "--model",
        help=f"provider spec (default: {graph.SCRIPTED_MODEL} with --input, "
        f"else {graph.DEFAULT_MODEL})",
    )
{%- if store %}
    longterm = parser.add_mutually_exclusive_group()
    longterm.add_argument(
        "--longterm", help=f"long-term store URI (local default: {graph.LOCAL_LONGTERM})"
    )
    longterm.add_argument(
        "--longterm_secret",
        metavar="projects/P/secrets/S/versions/V",
        help="Secret Manager version holding the store URI (for URIs with a password)",
    )
{%- endif %}
    return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse flag combinations the job cannot run with, before anything is built."""
    pubsub = args.input_subscription is not None
    if pubsub and not all((args.outputs_topic, args.intents_topic, args.errors_topic)):
        parser.error(
            "--input_subscription needs --outputs_topic, --intents_topic and --errors_topic"
        )
{%- if hitl %}
    if args.answers is not None and pubsub:
        parser.error("--answers is a local file; use --answers_subscription with Pub/Sub")
    if args.answer_signing_secret is not None and not pubsub:
        parser.error(
            "--answer_signing_secret is for a Pub/Sub run; a local run reads answers "
            "from a file you wrote, unsigned"
        )
{%- endif %}
{%- if store %}
    if args.longterm_secret is not None and not SECRET_VERSION.fullmatch(args.longterm_secret):
        # The value is not echoed: a malformed name may be the URI itself, password and all.
        parser.error(
            "--longterm_secret must name a Secret Manager version: "
            "projects/P/secrets/S/versions/V, V a number or latest"
        )
    if pubsub and args.longterm is None and args.longterm_secret is None:
        parser.error(
{%- if cookiecutter.longterm_backend in ("postgres", "redis") %}
            "--input_subscription needs --longterm or --longterm_secret "
            "(terraform output longterm_memory)"
{%- elif cookiecutter.longterm_backend == "sqlite" %}
            "--input_subscription needs --longterm or --longterm_secret (a shared SQL store)"
{%- else %}
            "--input_subscription needs --longterm or --longterm_secret "
            "(terraform output longterm_memory)"
{%- endif %}
        )
{%- endif %}


def _config(args: argparse.Namespace) -> AgentConfig:
    model = args.model or (graph.SCRIPTED_MODEL if args.input is not None else graph.DEFAULT_MODEL)
{%- if store %}
    if args.longterm_secret is not None:
        longterm = longterm_from_secret(args.longterm_secret)
    else:
        longterm = args.longterm or graph.LOCAL_LONGTERM
{%- else %}
    longterm = None
{%- endif %}
{%- if hitl %}
    return graph.config(model, longterm, args.answer_signing_secret)
{%- else %}
    return graph.config(model, longterm)
{%- endif %}


def check_model(agent_config: AgentConfig) -> None:
    """Build the provider once, as a worker will: a missing API key fails here, in one line."""
    factory = agent_config.provider_factory
    provider = factory() if factory is not None else None
    aclose = getattr(provider, "aclose", None)
    if callable(aclose):
        asyncio.run(aclose())
{%- if cookiecutter.longterm_backend == "sqlite" %}


def provision_local(uri: str | None) -> None:
    """Create the local SQLite default under out/, as `make run` does; never another store.

    Any other store is provisioned once, explicitly: `beam-agents provision URI`.
    """
    if uri != graph.LOCAL_LONGTERM:
        return
    Path("out").mkdir(exist_ok=True)

    async def provision() -> None:
        async with open_store(uri) as store:
            await store.provision()
{%- if cookiecutter.framework != "plain" %}
        async with open_ledger(uri) as ledger:  # the agent's tools' ledger, in the same file
            await ledger.provision()
{%- endif %}

    asyncio.run(provision())
{%- endif %}


{%- if store %}


def check_store(agent_config: AgentConfig) -> None:
    """Check the store is reachable and provisioned before a local run.

    One line naming the store, what is wrong and the fix (`StoreNotReadyError`),
    not a traceback per retried bundle. Workers check it again as they start.
    """
    if agent_config.longterm_memory is not None:
        check_local_store(agent_config.longterm_memory)
{%- endif %}


def _is_local(options: PipelineOptions) -> bool:
    return options.view_as(StandardOptions).runner in (None, "DirectRunner")


def build(argv: Sequence[str] | None = None) -> beam.Pipeline:
    """The pipeline for a command line; unknown flags are Beam's pipeline options."""
    parser = _parser()
    args, beam_args = parser.parse_known_args(argv)
    _check(parser, args)
    agent_config = _config(args)
    if not any(arg.startswith("--otlp_service_name") for arg in beam_args):
        # Exported spans carry the project's name unless the command line names another.
        beam_args.append("--otlp_service_name={{ cookiecutter.project_slug }}")
    options = PipelineOptions(beam_args)
    options.view_as(StandardOptions).streaming = True
    if _is_local(options):
        check_model(agent_config)
{%- if cookiecutter.longterm_backend == "sqlite" %}
        provision_local(agent_config.longterm_memory)
{%- endif %}
{%- if store %}
        check_store(agent_config)
{%- endif %}
    pipeline = beam.Pipeline(options=options)
    if args.input_subscription is not None:
        _pubsub_job(pipeline, args, agent_config)
    else:
        streams = pipeline | "ReadFiles" >> files.local_stream(args.input{% if hitl %}, args.answers{% endif %})
{%- if hitl %}
        records = graph.agent_graph(
            streams[files.EVENTS], agent_config, answers=streams[files.ANSWERS]
        )
{%- else %}
        records = graph.agent_graph(streams[files.EVENTS], agent_config)
{%- endif %}
        for kind, pcoll in records._asdict().items():
            _ = pcoll | f"Print{kind.title()}" >> files.PrintRecords(kind)
    return pipeline


def _pubsub_job(
    pipeline: beam.Pipeline, args: argparse.Namespace, agent_config: AgentConfig
) -> None:
    """Subscriptions in, topics out (the deployed job)."""
    events = pipeline | "ReadEvents" >> pubsub_io.ReadMessages(
        args.input_subscription, pubsub_io.EVENT_FIELDS
    )
    invalid = [events[graph.INVALID]]
{%- if hitl %}
    answers = None
    if args.answers_subscription:
        # Signed answers reach the agent whole: it verifies what the approver signed.
        read = pipeline | "ReadAnswers" >> pubsub_io.ReadMessages(
            args.answers_subscription,
            pubsub_io.ANSWER_FIELDS,
            whole=args.answer_signing_secret is not None,
        )
        answers = read.parsed
        invalid.append(read[graph.INVALID])
    records = graph.agent_graph(
        events.parsed, agent_config, answers=answers, invalid=tuple(invalid)
    )
{%- else %}
    records = graph.agent_graph(events.parsed, agent_config, invalid=tuple(invalid))
{%- endif %}
    topics = {
        "outputs": args.outputs_topic,
        "intents": args.intents_topic,
        "errors": args.errors_topic,
    }
    for kind, pcoll in records._asdict().items():
        _ = pcoll | f"Write{kind.title()}" >> beam.io.WriteToPubSub(topics[kind])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the pipeline; a local run waits for the file to be processed."""
    try:
        pipeline = build(argv)
{%- if store %}
    except StoreNotReadyError as exc:  # a ValueError too, but not a usage error: exit 1
        print(f"error: {exc.problem}", file=sys.stderr)
        return 1
{%- endif %}
    except (files.InvalidInputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    files.reset_tally()
    result = pipeline.run()
    if not _is_local(pipeline.options):
        return 0
    result.wait_until_finish()
    print(files.dead_letter_line(), file=sys.stderr)
    if files.nothing_succeeded():
        print("error: every event was dead-lettered; nothing succeeded", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
