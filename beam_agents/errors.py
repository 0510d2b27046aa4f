"""The root of every error beam-agents raises.

One root lets a pipeline author catch "anything the runtime decided to
refuse" without catching Beam's or a client library's own failures.
"""

from __future__ import annotations

__all__ = [
    "BeamAgentsError",
    "ConfigurationError",
    "MissingSecretError",
    "StateDecodeError",
    "describe_briefly",
    "exception_text",
]


class BeamAgentsError(Exception):
    """Base class of all errors raised by beam-agents."""


class ConfigurationError(BeamAgentsError, ValueError):
    """Invalid configuration, raised at construction before any pipeline exists.

    It is a `ValueError` so code that validates its own inputs the ordinary
    way keeps working; `field` names what was wrong.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.problem = message
        """The message without the field, for callers that name the input their own way
        (the CLI names its argument, not `AgentConfig.longterm_memory`)."""


class MissingSecretError(ConfigurationError):
    """A secret's environment variable is not set, or is empty, where it is read.

    Its own type because, unlike a secret that could not be fetched, it will
    not appear on a retry: a worker started without it stays without it, so
    the runtime reports it once instead of failing every bundle
    (docs/providers.md, Secrets). `variable` names it; the value never
    appears anywhere.
    """

    def __init__(self, field: str, variable: str, message: str) -> None:
        super().__init__(field, message)
        self.variable = variable

    def __reduce__(self) -> tuple[object, ...]:
        # Three arguments: the default exception pickling would pass back only the message.
        return (type(self), (self.field, self.variable, self.problem))


class StateDecodeError(BeamAgentsError, ValueError):
    """Persisted bytes that this version cannot read.

    The runtime reports it as `state_decode_error` and leaves the state
    untouched: wiping unreadable state would turn a deploy mistake into data
    loss.
    """


def exception_text(exc: BaseException) -> str:
    """`str(exc)` of an exception that may come from user code.

    An agent's, provider's or store's exception class may have a `__str__`
    that raises: the failure it stands for must still be reported (a dead
    letter, a wrapped error), not replaced by a second one.
    """
    try:
        return str(exc)
    except Exception as failure:
        return f"<str() of the exception raised {type(failure).__name__}>"


def describe_briefly(exc: BaseException) -> str:
    """`Type: message` of an exception that may come from user code."""
    text = exception_text(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
