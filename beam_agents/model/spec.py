"""`provider_from_spec`: the one grammar that names a model on a command line.

The app, the template and users' own pipelines all take `--model SPEC`:

    fake
    openai:MODEL[?OPTIONS]
    gemini:MODEL[?OPTIONS]
    py:package.module:attribute

OPTIONS is `key=value` pairs joined by `&`, values percent-decoded (so a
`base_url` holding `&` or `?` can be written `%26`, `%3F`). MODEL is
everything between the first `:` and the first `?`, so Ollama-style names
such as `llama3.1:8b` work. Everything is checked here, on the machine that
builds the pipeline; the factory handed back is a small picklable value that
holds names of where secrets live, never a secret, and builds the provider
(reading the key) only when a worker calls it in `setup()`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Final, cast

from beam_agents.errors import ConfigurationError
from beam_agents.model._spec_grammar import (
    GEMINI_OPTIONS,
    OPENAI_OPTIONS,
    ClassFactory,
    Option,
    check_gemini_credentials,
    read_text,
    split_model,
)
from beam_agents.model._structured_wire import check_structured_output
from beam_agents.model.fake import FakeLLM
from beam_agents.model.provider import ModelProvider, ProviderFactory

__all__ = ["FAKE_ANSWER", "ImportedFactory", "SpecFactory", "on_network", "provider_from_spec"]

FAKE_ANSWER: Final = b"fake model answer"
"""What the `fake` spec's FakeLLM answers to every request (model id `fake-1`)."""

_SCHEMES: Final = ("fake", "openai", "gemini", "py")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")

_OPENAI_PROVIDER_OPTIONS: Final[Mapping[str, Option]] = {
    **OPENAI_OPTIONS,
    "structured_output": (read_text, check_structured_output),
}
"""An embedder has no structured output, so this option is the chat provider's alone."""

_PROVIDER_CLASSES: Final = {
    "openai": ("beam_agents.model.openai_compat", "OpenAICompatibleProvider"),
    "gemini": ("beam_agents.model.gemini", "GeminiProvider"),
}


@dataclass(frozen=True, slots=True)
class SpecFactory(ClassFactory[ModelProvider]):
    """A provider factory parsed from a spec: picklable, secret-free, called on the worker."""

    classes: ClassVar[Mapping[str, tuple[str, str]]] = _PROVIDER_CLASSES


def on_network(factory: object) -> bool:
    """Whether every call of the provider `factory` builds waits, as one over the network does.

    A spec's `openai:` and `gemini:` providers do (each call is a round
    trip), and so does any factory that says so with a `calls_wait`
    attribute set to True (a user's own client of a served model, or a
    `FakeLLM` standing for one). Nothing is then learned by running the
    first call in place, which would hold the runner's thread for its whole
    latency.
    """
    return type(factory) is SpecFactory or getattr(factory, "calls_wait", False) is True


@dataclass(frozen=True, slots=True)
class ImportedFactory:
    """A user's zero-argument factory, named `module:attribute` and imported on the worker."""

    module: str
    attribute: str

    def resolve(self) -> Callable[[], ModelProvider]:
        """Import the factory; raises ConfigurationError naming what is missing."""
        try:
            target: object = importlib.import_module(self.module)
        except ImportError as exc:
            raise ConfigurationError("py module", f"cannot import {self.module!r}: {exc}") from None
        for name in self.attribute.split("."):
            if not hasattr(target, name):
                raise ConfigurationError(
                    "py attribute", f"{self.module!r} has no attribute {self.attribute!r}"
                )
            target = getattr(target, name)
        if not callable(target):
            raise ConfigurationError(
                "py attribute",
                f"{self.module}:{self.attribute} is a {type(target).__name__}, "
                "not a zero-argument callable",
            )
        return cast(Callable[[], ModelProvider], target)

    def __call__(self) -> ModelProvider:
        return self.resolve()()


def _parse_model_scheme(scheme: str, rest: str) -> SpecFactory:
    model, options = split_model(
        scheme, rest, _OPENAI_PROVIDER_OPTIONS if scheme == "openai" else GEMINI_OPTIONS
    )
    if scheme == "gemini":
        check_gemini_credentials(options)
    return SpecFactory(scheme, model, tuple(sorted(options.items())))


def _parse_py(rest: str) -> ImportedFactory:
    module, sep, attribute = rest.partition(":")
    if not sep:
        raise ConfigurationError("py", f"expected py:package.module:attribute, got 'py:{rest}'")
    if not _DOTTED.fullmatch(module):
        raise ConfigurationError("py module", f"{module!r} is not a dotted module name")
    if not _DOTTED.fullmatch(attribute):
        raise ConfigurationError("py attribute", f"{attribute!r} is not an attribute name")
    factory = ImportedFactory(module, attribute)
    factory.resolve()  # fail here, on the launching machine, not on a worker
    return factory


def provider_from_spec(spec: str) -> ProviderFactory:
    """Parse a model spec into a picklable provider factory that holds no secret.

    Raises ConfigurationError naming the wrong part: the scheme, the model,
    an unknown option, a bad value, or a `py:` target that does not import.
    """
    if type(spec) is not str:
        raise ConfigurationError("spec", f"must be a str, got {type(spec).__name__}")
    if spec == "fake":
        return FakeLLM(default=FAKE_ANSWER, name="spec:fake", model_id="fake-1", keep_calls=False)
    scheme, sep, rest = spec.partition(":")
    if scheme not in _SCHEMES:
        raise ConfigurationError(
            "scheme",
            f"unknown scheme {scheme!r}; expected one of fake, openai:MODEL, gemini:MODEL, "
            "py:module:attribute",
        )
    if scheme == "fake":
        raise ConfigurationError("fake", "takes no model or options: write just 'fake'")
    if not sep:
        raise ConfigurationError("model", f"{scheme} needs a model: {scheme}:MODEL")
    if scheme == "py":
        return _parse_py(rest)
    return _parse_model_scheme(scheme, rest)
