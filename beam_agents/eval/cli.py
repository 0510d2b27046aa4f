"""`beam-agents eval EVENTS ...`: the command line of `run_eval`, for people and CI jobs.

Exit codes: 0 every gate passed, 1 a gate failed, 2 a usage error (a bad
flag, file or recording line, a candidate that does not import or whose
config function raises, a scorer missing what it needs, a bad gate), each
one line on stderr, found before anything runs. Building the parser imports
nothing heavy; Apache Beam is imported only once the command runs.

A typed agent's candidates name its result type with `--output-type
module:Type` (every candidate) or `--output-type NAME=module:Type` (one).
Scorers are written `field:NAME`, `trajectory:MODE` or
`trajectory:MODE:tool_calls`, `judge:SPEC:RUBRIC_FILE` or
`py:module:attribute` (a `Scorer`, or a zero-argument callable making one).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from beam_agents.eval.api import EvalResult
    from beam_agents.eval.candidates import Candidate

__all__ = ["add_arguments", "run"]

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE = 0, 1, 2
_DEAD_LETTER_LOGGER: Final = "beam_agents.runtime.dead_letters"
"""The logger the runtime warns of each dead letter on (docs/errors.md)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `eval` subcommand's arguments."""
    parser.add_argument("events", metavar="EVENTS", help="events JSONL (local path or gs://)")
    _add_candidate_arguments(parser)
    parser.add_argument("--labels", metavar="LABELS", help="labels JSONL, by event id")
    parser.add_argument(
        "--recording", required=True, metavar="FILE", help="recording file (created if missing)"
    )
    parser.add_argument(
        "--scorer",
        action="append",
        default=[],
        metavar="SPEC",
        help="field:NAME | trajectory:MODE[:intents|tool_calls] | judge:MODEL_SPEC:RUBRIC_FILE "
        "| py:module:attribute (repeat)",
    )
    parser.add_argument(
        "--gate", action="append", default=[], metavar="EXPR", help='e.g. "priority>=0.9" (repeat)'
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="where the outputs go")
    parser.add_argument("--baseline", metavar="NAME", help="baseline candidate (default: first)")
    parser.add_argument(
        "--tools",
        choices=("record", "stub", "fail"),
        default="record",
        help="what a tool call answers (no tool ever runs): record, the recording's tool line "
        "for that tool and args, else its --stub, else the call fails (default); stub, its "
        "--stub only; fail, every call fails (dead letter tool_error)",
    )
    parser.add_argument(
        "--stub", action="append", default=[], metavar="TOOL=TEXT", help="a tool's stub answer"
    )
    parser.add_argument(
        "--prices", metavar="FILE", help='JSON {"MODEL_ID": [USD per 1M input, per 1M output]}'
    )
    parser.add_argument("--step-ms", type=int, default=60_000, help="replay step (default 60000)")
    parser.add_argument(
        "--drain-ms",
        type=int,
        default=0,
        help="how long the replay's event time runs on after the last event, at least (default: "
        "the longest of the TTL and approval timeout, plus a step); a follow-up due later is "
        "not run, and is listed under follow_ups_not_run",
    )
    parser.add_argument("--json", action="store_true", help="print summary.json to stdout")
    parser.add_argument(
        "--decision-field",
        action="append",
        default=None,
        metavar="FIELD",
        help="an output field that is part of the decision (repeat); a change elsewhere in an "
        "output is shown but not counted as a changed decision (default: the fields that "
        "field: scorers compare; without either, any change counts)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines and no dead-letter warnings on stderr (the summary counts them)",
    )


def _add_candidate_arguments(parser: argparse.ArgumentParser) -> None:
    """What is evaluated: each candidate, and the type of its results."""
    parser.add_argument(
        "--candidate",
        action="append",
        required=True,
        metavar="NAME=module:function[?module:config]",
        help="a candidate agent and its AgentConfig (repeat; the first is the baseline)",
    )
    parser.add_argument(
        "--output-type",
        action="append",
        default=[],
        metavar="[NAME=]module:Type",
        help="the result type of every candidate's agent, or of candidate NAME's (repeat): a "
        "pydantic model, dataclass or NamedTuple, as its RunAgent's output_type (default: bytes)",
    )


def _scorer(spec: str) -> Any:
    from beam_agents.eval.candidates import call_user, resolve
    from beam_agents.eval.errors import EvalInputError
    from beam_agents.eval.scorers import FieldMatch, LlmJudge, Scorer, TrajectoryMatch

    kind, _, rest = spec.partition(":")
    if kind == "field" and rest:
        return FieldMatch(rest)
    if kind == "trajectory" and rest:
        mode, _, what = rest.partition(":")
        return TrajectoryMatch(mode.upper(), what or "intents")  # type: ignore[arg-type]
    if kind == "judge" and rest:
        model, sep, rubric_file = rest.rpartition(":")
        if not sep or not model:
            raise EvalInputError(f"--scorer {spec!r}: expected judge:MODEL_SPEC:RUBRIC_FILE")
        try:
            rubric = Path(rubric_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise EvalInputError(f"--scorer {spec!r}: cannot read the rubric: {exc}") from None
        return LlmJudge(model, rubric)
    if kind == "py" and rest:
        value = resolve(rest, "--scorer")
        if not isinstance(value, Scorer) and callable(value):
            value = call_user(value, f"--scorer {spec!r}")
        if not isinstance(value, Scorer):
            raise EvalInputError(f"--scorer {spec!r} is not a Scorer")
        return value
    raise EvalInputError(
        f"--scorer {spec!r}: expected field:NAME, trajectory:MODE[:KIND], "
        "judge:MODEL_SPEC:RUBRIC_FILE or py:module:attribute"
    )


def _typed(candidates: list[Candidate], specs: list[str]) -> list[Candidate]:
    """`candidates` with the `--output-type` each is given: by name, else the unnamed one."""
    import dataclasses

    from beam_agents.eval.errors import EvalInputError

    names = [c.name for c in candidates]
    chosen: dict[str | None, str] = {}
    for spec in specs:
        name, sep, target = spec.rpartition("=")
        key = name if sep else None
        if key is not None and key not in names:
            raise EvalInputError(
                f"--output-type {spec!r}: no candidate is named {key!r} ({', '.join(names)})"
            )
        if key in chosen:
            raise EvalInputError(f"--output-type {spec!r}: a second type for the same candidates")
        chosen[key] = target
    return [
        dataclasses.replace(c, output_type=chosen.get(c.name, chosen.get(None, c.output_type)))
        for c in candidates
    ]


def _prices(path: str | None) -> dict[str, tuple[float, float]]:
    from beam_agents.eval.errors import EvalInputError

    if path is None:
        return {}
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalInputError(f"--prices {path}: {exc}") from None
    prices: dict[str, tuple[float, float]] = {}
    if not isinstance(table, dict):
        raise EvalInputError(f"--prices {path}: expected an object of model id -> [in, out]")
    for model, pair in table.items():
        ok = isinstance(pair, list) and len(pair) == 2
        if not ok or not all(isinstance(p, int | float) and p >= 0 for p in pair):
            raise EvalInputError(f"--prices {path}: {model!r} must be [USD/1M in, USD/1M out]")
        prices[model] = (float(pair[0]), float(pair[1]))
    return prices


def _stubs(pairs: list[str]) -> dict[str, bytes]:
    from beam_agents.eval.errors import EvalInputError

    stubs: dict[str, bytes] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise EvalInputError(f"--stub {pair!r}: expected TOOL=TEXT")
        stubs[name] = text.encode("utf-8")
    return stubs


def run(args: argparse.Namespace) -> int:
    """Run the evaluation the arguments describe; returns the exit code."""
    from beam_agents.errors import BeamAgentsError
    from beam_agents.eval.candidates import parse_candidate
    from beam_agents.eval.errors import EvalInputError

    try:
        candidates = _typed([parse_candidate(text) for text in args.candidate], args.output_type)
        with _dead_letters_unlogged(args.quiet):
            result = _run(args, candidates)
    except (EvalInputError, BeamAgentsError, ValueError) as exc:
        print(f"beam-agents eval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result.summary, sort_keys=True, indent=2))
    _say_follow_ups_not_run(result.summary)
    for gate in result.summary["gates"]:
        verdict = "pass" if gate["passed"] else "FAIL"
        print(f"gate {gate['expr']}: {verdict} (value {gate['value']})", file=sys.stderr)
    print(f"eval: wrote {result.results_path.parent}", file=sys.stderr)
    return EXIT_OK if result.passed else EXIT_GATE_FAILED


def _run(args: argparse.Namespace, candidates: list[Candidate]) -> EvalResult:
    from beam_agents.eval.api import run_eval
    from beam_agents.eval.progress import EvalProgress

    return run_eval(
        args.events,
        candidates,
        labels=args.labels,
        scorers=[_scorer(spec) for spec in args.scorer],
        recording=args.recording,
        tools=args.tools,
        stubs=_stubs(args.stub),
        prices=_prices(args.prices),
        gates=args.gate,
        out_dir=args.out,
        baseline=args.baseline,
        step_ms=args.step_ms,
        progress=None if args.quiet else EvalProgress(),
        decision_fields=args.decision_field,
        drain_ms=args.drain_ms,
    )


def _say_follow_ups_not_run(summary: dict[str, Any]) -> None:
    """One line per candidate with follow-ups the replay did not run: a result, easy to miss."""
    for candidate in summary["candidates"]:
        follow_ups = candidate.get("follow_ups") or {}
        if follow_ups.get("not_run"):
            print(
                f"eval: candidate {candidate['name']}: {follow_ups['not_run']} follow-up(s) did "
                f"not run (due after the replay ended at {follow_ups['replay_end_ms']} ms, "
                f"{follow_ups['drain_ms']} ms after the last event's step, or never reached); "
                "see follow_ups_not_run in results.jsonl, and --drain-ms",
                file=sys.stderr,
            )


@contextlib.contextmanager
def _dead_letters_unlogged(quiet: bool) -> Iterator[None]:
    """Under --quiet, the runtime's dead-letter warnings are dropped while the replay runs.

    An evaluation's dead letters are results, not incidents: the summary
    counts them by reason and results.jsonl holds each, so a quiet run (a
    CI log, `make eval`) prints the gates and nothing else.
    """
    if not quiet:
        yield
        return
    logger = logging.getLogger(_DEAD_LETTER_LOGGER)
    logger.addFilter(_drop)
    try:
        yield
    finally:
        logger.removeFilter(_drop)


def _drop(record: logging.LogRecord) -> bool:
    return False
