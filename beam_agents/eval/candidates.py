"""Candidates: an agent and its configuration, and how an evaluation makes them hermetic.

An evaluated candidate runs its own agent under its own `AgentConfig`, with
what production shares swapped out, so an evaluation touches nothing
another job uses: its provider and embedder answer from the recording
first; its tools answer from the recording or stubs
(`beam_agents.eval.replayed_tools`); its long-term tier and tool ledger
are in-process `memory://` stores private to the run, so a production
store is never read or written; its rate limit holds only the requests
the recording cannot answer, on a schedule of the run's own, so a fleet
limiter's Redis is never reached and a recorded answer waits for no
slot; and answers are taken unsigned, as a recorded log carries them.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, cast

from beam_agents._scrub import scrub_secrets
from beam_agents.config import AgentConfig
from beam_agents.errors import exception_text
from beam_agents.eval.errors import EvalInputError
from beam_agents.eval.recording import RecordingEmbedder, RecordingProvider
from beam_agents.eval.replayed_tools import replayed_tools
from beam_agents.model.flow import RateLimit

__all__ = [
    "Candidate",
    "call_user",
    "eval_config",
    "parse_candidate",
    "private_rate_limit",
    "resolve",
]

AgentFunction = Callable[[Any], Coroutine[Any, Any, Any]]
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*")
_MAX_QUOTED = 300


def resolve(target: str, what: str) -> object:
    """Import `module:attribute`; raises EvalInputError naming what is missing."""
    if not _TARGET.fullmatch(target):
        raise EvalInputError(f"{what} {target!r} is not module:attribute")
    module_name, _, attribute = target.partition(":")
    try:
        value: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise EvalInputError(f"{what} {target!r}: cannot import {module_name!r}: {exc}") from None
    except Exception as exc:  # the module's own code failed as it was imported
        raise EvalInputError(
            f"{what} {target!r}: importing {module_name!r} raised {_one_line(exc)}"
        ) from None
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise EvalInputError(f"{what} {target!r}: {module_name!r} has no {attribute!r}")
        value = getattr(value, part)
    return value


@dataclass(frozen=True)
class Candidate:
    """One agent to evaluate: a name, the agent (or `"module:function"`) and its config.

    `output_type` (a pydantic model, dataclass or NamedTuple, or
    `"module:Type"`) is the agent's result type, as its production
    `RunAgent(..., output_type=...)` declares it; None for a bytes result.
    """

    name: str
    agent: AgentFunction | str
    config: AgentConfig = dataclasses.field(default_factory=AgentConfig)
    output_type: type | str | None = None

    def __post_init__(self) -> None:
        if type(self.name) is not str or not _NAME.fullmatch(self.name):
            raise EvalInputError(
                f"candidate name {self.name!r} must be letters, digits, '_', '.' or '-'"
            )
        if isinstance(self.agent, str):
            object.__setattr__(self, "agent", resolve(self.agent, f"candidate {self.name}: agent"))
        if not callable(self.agent):
            raise EvalInputError(f"candidate {self.name}: the agent is not callable")
        if not isinstance(self.config, AgentConfig):
            raise EvalInputError(
                f"candidate {self.name}: config must be an AgentConfig, "
                f"got {type(self.config).__name__}"
            )
        if isinstance(self.output_type, str):
            resolved = resolve(self.output_type, f"candidate {self.name}: output type")
            object.__setattr__(self, "output_type", resolved)
        if self.output_type is not None and not isinstance(self.output_type, type):
            raise EvalInputError(
                f"candidate {self.name}: output_type must be a pydantic model, dataclass or "
                f"NamedTuple class, got {type(self.output_type).__name__}"
            )

    @property
    def function(self) -> AgentFunction:
        """The agent, resolved."""
        return cast(AgentFunction, self.agent)

    @property
    def result_type(self) -> type | None:
        """The output type, resolved; None for a bytes result."""
        return cast("type | None", self.output_type)


def parse_candidate(text: str) -> Candidate:
    """`NAME=module:function[?module:config]`: the CLI's form of a candidate.

    The config is an `AgentConfig` or a zero-argument callable returning one.
    """
    name, sep, rest = text.partition("=")
    if not sep:
        raise EvalInputError(f"--candidate {text!r}: expected NAME=module:function[?module:config]")
    agent, has_config, config_target = rest.partition("?")
    config: object = AgentConfig()
    if has_config:
        config = resolve(config_target, f"candidate {name}: config")
        if not isinstance(config, AgentConfig) and callable(config):
            config = call_user(config, f"candidate {name}: config {config_target!r}")
    if not isinstance(config, AgentConfig):
        raise EvalInputError(
            f"candidate {name}: {config_target!r} is a {type(config).__name__}, not an "
            "AgentConfig (or a function returning one)"
        )
    return Candidate(name, agent, config)


def _one_line(exc: BaseException) -> str:
    """`Type: message` on one bounded line, scrubbed: a user's exception as an error quotes it.

    No traceback: the frames are the user's own code, which they can run
    themselves, while CI needs the one line that says which input was wrong.
    """
    text = " ".join(scrub_secrets(exception_text(exc)).split())
    if len(text) > _MAX_QUOTED:
        text = text[: _MAX_QUOTED - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def call_user(function: Callable[[], object], what: str) -> object:
    """`function()` of the user's (a config or scorer maker): its failure is a usage error.

    It runs before the replay, so whatever it raises is the command's input
    being wrong, reported as one line naming `what` (exit 2), never as a
    traceback a CI job would read as the candidate failing.
    """
    try:
        return function()
    except EvalInputError:
        raise  # says already what is wrong
    except Exception as exc:
        raise EvalInputError(f"{what} raised {_one_line(exc)}") from None


def eval_config(
    config: AgentConfig,
    *,
    token: str,
    recording: str,
    tools: str,
    stubs: Mapping[str, bytes],
) -> AgentConfig:
    """`config` with the recording, replayed tools and private in-process stores put in."""
    store = f"memory://eval-{token}"
    handlers = replayed_tools(config.tools, tools, recording, stubs)
    provider = config.provider_factory
    embedder = config.embedder
    return dataclasses.replace(
        config,
        provider_factory=None
        if provider is None
        else RecordingProvider(
            recording,
            provider,
            token,
            private_rate_limit(config.rate_limit),
            config.activation_timeout_s,
        ),
        rate_limit=None,
        embedder=None if embedder is None else RecordingEmbedder(recording, embedder, token),
        longterm_memory=None if config.longterm_memory is None else store,
        tools=handlers,
        tool_ledger=f"{store}-ledger" if handlers else None,
        answer_signing_key=None,
    )


def private_rate_limit(limit: RateLimit | None) -> RateLimit | None:
    """`limit` on a schedule of this process's own: what an evaluation paces new requests by.

    A shared limit becomes the share its `fallback_share` gives one process
    that cannot reach the Redis: an evaluation is such a process by choice,
    and still spends the quota production spends.
    """
    if limit is None or not limit.shared:
        return limit
    return limit.scaled(limit.fallback_share)
