"""What `provider_from_spec` and `embedder_from_spec` read alike: OPTIONS and the factory.

A hosted model spec is `SCHEME:MODEL[?OPTIONS]` for a provider and for an
embedder alike: the same options are read and refused in the same words,
and the factory handed back builds the class the scheme names on the worker.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Final, Generic, TypeVar
from urllib.parse import unquote

from beam_agents.errors import ConfigurationError
from beam_agents.model import _options

__all__ = [
    "GEMINI_OPTIONS",
    "KEY_VARIABLES",
    "OPENAI_OPTIONS",
    "ClassFactory",
    "Option",
    "check_gemini_credentials",
    "read_int",
    "read_text",
    "split_model",
    "split_options",
]

T = TypeVar("T")

Option = tuple[Callable[[str], object], Callable[[object], object]]
"""How an option's text is read, then the check the constructor applies too."""


def read_float(text: str) -> object:
    try:
        return float(text)
    except ValueError:
        return text  # the validator names the option and the bad value


def read_int(text: str) -> object:
    try:
        return int(text)
    except ValueError:
        return text


def read_text(text: str) -> object:
    return text


def _name(field: str) -> Callable[[object], object]:
    return lambda value: _options.check_name(field, value)


OPENAI_OPTIONS: Final[Mapping[str, Option]] = {
    "base_url": (read_text, _options.check_base_url),
    "api_key_env": (read_text, _options.check_api_key_env),
    "api_key_secret": (read_text, _options.check_api_key_secret),
    "timeout_s": (read_float, _options.check_timeout_s),
    "max_retries": (read_int, _options.check_max_retries),
}
GEMINI_OPTIONS: Final[Mapping[str, Option]] = {
    **OPENAI_OPTIONS,
    "vertex_project": (read_text, _name("vertex_project")),
    "vertex_location": (read_text, _name("vertex_location")),
}


KEY_VARIABLES: Final[Mapping[str, str]] = {"openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}
"""The environment variable each hosted scheme's class reads its key from by default
(its constructor's `api_key_env`)."""


def split_options(scheme: str, query: str, allowed: Mapping[str, Option]) -> dict[str, object]:
    """`key=value&…`, percent-decoded, each key known to `scheme`, given once and checked."""
    options: dict[str, object] = {}
    for part in query.split("&"):
        key, sep, raw = part.partition("=")
        key = unquote(key)
        if not sep or not key:
            raise ConfigurationError(
                "option", f"{part!r} is not key=value (options are key=value joined by &)"
            )
        if key not in allowed:
            raise ConfigurationError(
                f"option {key!r}",
                f"unknown for {scheme}; known options: {', '.join(sorted(allowed))}",
            )
        if key in options:
            raise ConfigurationError(f"option {key!r}", "given twice")
        value = unquote(raw)
        if not value:
            raise ConfigurationError(key, "has an empty value")
        parse, check = allowed[key]
        options[key] = check(parse(value))
    return options


def split_model(
    scheme: str, rest: str, allowed: Mapping[str, Option]
) -> tuple[str, dict[str, object]]:
    """`MODEL[?OPTIONS]`: the model, checked, and its options (MODEL ends at the first `?`)."""
    model_text, has_query, query = rest.partition("?")
    model = _options.check_model(unquote(model_text))
    return model, split_options(scheme, query, allowed) if has_query else {}


def check_gemini_credentials(options: Mapping[str, object]) -> None:
    """A location needs its project, and Vertex AI takes no key: it uses ADC."""
    _options.check_vertex_location(options.get("vertex_project"), options.get("vertex_location"))
    if "vertex_project" in options:
        for key in ("api_key_env", "api_key_secret"):
            if key in options:
                raise ConfigurationError(
                    key, "is not used with vertex_project (Vertex AI uses ADC)"
                )


@dataclass(frozen=True, slots=True)
class ClassFactory(Generic[T]):
    """Builds the class `scheme` names in `classes`, with the model and options of a spec."""

    classes: ClassVar[Mapping[str, tuple[str, str]]]

    scheme: str
    model: str
    options: tuple[tuple[str, object], ...] = ()

    def key_variable(self) -> str | None:
        """The environment variable the built class reads its key from; None if it reads none.

        None for a key in Secret Manager (`api_key_secret`), for Vertex AI
        (`vertex_project`: ADC, no key) and for a scheme without a key (`local`).
        """
        options = dict(self.options)
        default = KEY_VARIABLES.get(self.scheme)
        if default is None or "api_key_secret" in options or "vertex_project" in options:
            return None
        return str(options.get("api_key_env", default))

    def __call__(self) -> T:
        # Imported here: the SDKs (and torch, for local) load only where a model is built.
        module_name, class_name = self.classes[self.scheme]
        built_class = getattr(importlib.import_module(module_name), class_name)
        built: T = built_class(self.model, **dict(self.options))
        return built
