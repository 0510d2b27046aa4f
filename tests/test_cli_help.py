"""`beam-agents --help` describes the whole command, not one of its parts."""

from __future__ import annotations

import argparse
import re

from beam_agents.cli._main import _parser


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(commands.choices)


def test_the_description_names_every_command_the_parser_offers() -> None:
    parser = _parser()
    description = parser.description or ""

    named = set(re.findall(r"[a-z][a-z-]+", description))
    assert len(_commands(parser)) >= 6
    assert [c for c in _commands(parser) if c not in named] == []
    assert " ".join(description.split()) in " ".join(parser.format_help().split())
