"""`beam-agents`: provision, migrate, inspect and recall from long-term stores; serve the console.

These are operator tasks that must never happen inside a pipeline: creating
tables (nothing is auto-created at runtime), copying rows between backends,
and looking at what an entity has stored. Every message names stores by
their redacted URI and problems by the argument that caused them (`URI`,
`FROM`, `TO`); exit codes are 0 for success, 2 for a usage or configuration
error, 1 for a store error.

The command never builds a pipeline, so it never imports Apache Beam, and it
imports asyncio and the store modules only once a command is chosen:
`beam-agents --help` answers in a fraction of a second
(`benchmarks/bench_cli.py`). `console` imports its web framework only when
it runs (`beam_agents.console`).

One module per command (`_provision`, `_migrate`, `_inspect`, `_recall`);
`_main` builds the parser and imports a command's module once it is chosen.
"""

from beam_agents.cli._main import main

__all__ = ["main"]
