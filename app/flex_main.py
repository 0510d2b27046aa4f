"""Flex Template entry point: the launcher runs this file with the template's parameters.

A Flex Template passes its parameters (app/metadata.json) and Dataflow's own options as
`--name=value` flags and cannot name a subcommand, so this file supplies `run`.
"""

from __future__ import annotations

import sys

from app.triage.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
