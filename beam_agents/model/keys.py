"""A model's API key, looked for in this process when the pipeline will run in it.

A provider reads its key where it is built, in the agent DoFn's `setup()`.
On a local runner that is this process, so a key missing here is missing
there too, and the runner would find it only after the pipeline started:
a traceback per retried bundle, hundreds of lines around the one fact that
matters. `check_key_here` finds it first, as the graph is built, for the
factories that name their key's variable (`provider_from_spec` and
`embedder_from_spec` for `openai:` and `gemini:`); a factory of your own is
built, and checked, where it runs.

`MissingModelKeyError` is a `ConfigurationError` for callers and a
`SystemExit` for a script that does not catch it (the README's quickstart, a
notebook cell), which then ends with its one line and exit status 1.
"""

from __future__ import annotations

import os

from beam_agents.errors import MissingSecretError
from beam_agents.model._spec_grammar import ClassFactory

__all__ = ["MissingModelKeyError", "check_key_here"]


class MissingModelKeyError(MissingSecretError, SystemExit):
    """A local run's model key is not in this process's environment; names the variable."""

    def __init__(self, field: str, variable: str, model: str) -> None:
        super().__init__(
            field,
            variable,
            f"environment variable {variable} is not set or empty, and {model} reads its "
            "API key from it in this process, where the local runner runs the pipeline; "
            "set it, or name another variable with ?api_key_env=NAME",
        )
        self.model = model
        self.code = f"error: {self}"
        """What Python prints when the error ends the program (exit status 1)."""

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.field, self.variable, self.model))


def check_key_here(factory: object, field: str) -> None:
    """Raise `MissingModelKeyError` when `factory` would find no key in this process.

    `field` names the setting the factory came from (`AgentConfig.provider_factory`,
    a command's `--model`). Only the variable's presence is read, never shown.
    """
    if not isinstance(factory, ClassFactory):
        return
    variable = factory.key_variable()
    if variable is not None and not os.environ.get(variable, "").strip():
        raise MissingModelKeyError(field, variable, f"{factory.scheme}:{factory.model}")
