"""The evaluation's progress: a bar redrawn in place on a terminal, tenths in a log."""

from __future__ import annotations

import io
import itertools

from beam_agents.eval.progress import EvalProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_bar_is_redrawn_in_place_and_ends_its_line() -> None:
    screen = Terminal()
    ticks = itertools.count(0.0, 1.0)
    progress = EvalProgress(screen, clock=lambda: next(ticks))

    progress("recall", 0, 40)
    progress("recall", 10, 40)
    progress("recall", 40, 40)

    frames = screen.getvalue().split("\r")[1:]
    bar = "[" + "#" * 7 + "." * 21 + "]"
    assert frames[1] == f"recall         {bar} 10/40 events  10.0/s  3 s left"
    assert frames[2].startswith("recall         [############################] 40/40 events")
    assert frames[2].endswith("\n")
    assert screen.getvalue().count("\n") == 1


def test_in_a_log_it_prints_a_line_per_tenth_and_one_at_the_end() -> None:
    log = io.StringIO()
    progress = EvalProgress(log)

    for entered in range(0, 101):
        progress("no-recall", entered, 100)

    lines = log.getvalue().splitlines()
    assert lines[0] == "eval: no-recall: 0/100 events"
    assert lines[-1] == "eval: no-recall: 100/100 events"
    assert len(lines) == 11
