"""How an `invalid_event` dead letter carries the element it could not run.

"Bad input is reported, never lost": a malformed element (not a pair, a
3-tuple, `("k", 42)`, an answer with a non-str intent id) must leave on the
errors output in a form that can be read back and replayed. The payload is
the element *as it arrived*, in exactly one of four forms, and the form is
named at the end of the record's `detail` as `[payload: <form>]`:

- `bytes`: the element was `bytes`; the payload is those bytes.
- `utf-8`: the element was a `str`; the payload is its UTF-8 encoding.
- `json`: the element is JSON-able (str, int, float, bool, None, and
  lists, tuples and str-keyed dicts of those); the payload is canonical JSON
  (sorted keys, no spaces, UTF-8, tuples as arrays).
- `repr`: anything else (a tuple holding bytes, a set, an object); the
  payload is a canonical `repr`: containers are walked, set members sorted,
  and memory addresses (` at 0x…`) removed, so it does not vary by process.
  For Python literals `ast.literal_eval` reads it back.

Each form is a pure function of the element, so a retried bundle emits
byte-identical dead letters. `decode_element` is the inverse a replay job
uses.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Final, Literal, cast

__all__ = [
    "PAYLOAD_FORMS",
    "PayloadForm",
    "decode_element",
    "describe_with_form",
    "encode_element",
    "payload_form",
]

PayloadForm = Literal["bytes", "utf-8", "json", "repr"]
PAYLOAD_FORMS: Final[tuple[PayloadForm, ...]] = ("bytes", "utf-8", "json", "repr")
"""Every form an `invalid_event` payload can take."""

_FORM_SUFFIX: Final = re.compile(r"\[payload: (bytes|utf-8|json|repr)\]$")
_ADDRESS: Final = re.compile(r" at 0x[0-9A-Fa-f]+")


def encode_element(element: object) -> tuple[bytes, PayloadForm]:
    """The element's payload bytes and the form they are in (see the module docstring)."""
    if type(element) is bytes:
        return element, "bytes"
    if type(element) is str:
        return element.encode("utf-8", "surrogatepass"), "utf-8"
    if _json_able(element):
        text = json.dumps(
            element, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        return text.encode("utf-8", "surrogatepass"), "json"
    return _canonical_repr(element).encode("utf-8", "surrogatepass"), "repr"


def describe_with_form(detail: str, form: PayloadForm) -> str:
    """`detail` with the payload's form appended where `payload_form` finds it."""
    return f"{detail} [payload: {form}]"


def payload_form(detail: str) -> PayloadForm | None:
    """The form an `invalid_event` record's `detail` names, or None if it names none."""
    match = _FORM_SUFFIX.search(detail)
    if match is None:
        return None
    return cast(PayloadForm, match.group(1))


def decode_element(payload: bytes, form: PayloadForm) -> object:
    """The element back from its payload: bytes, str, the JSON value, or the literal.

    A `repr` payload of something that is not a Python literal (an object of
    your own class) cannot be evaluated: its text is returned instead.
    """
    if form == "bytes":
        return payload
    text = payload.decode("utf-8", "surrogatepass")
    if form == "utf-8":
        return text
    if form == "json":
        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError("the payload's JSON is nested too deeply") from None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _json_able(value: object, depth: int = 0) -> bool:
    if depth > 64:
        return False
    if value is None or isinstance(value, str | int):  # bool is an int
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_json_able(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(type(k) is str and _json_able(v, depth + 1) for k, v in value.items())
    return False


def _canonical_repr(value: object, depth: int = 0) -> str:
    if depth > 64:
        return "..."
    if isinstance(value, tuple) and type(value) is tuple:
        items = [_canonical_repr(item, depth + 1) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        return f"[{', '.join(_canonical_repr(item, depth + 1) for item in value)}]"
    if isinstance(value, dict):
        pairs = (
            f"{_canonical_repr(k, depth + 1)}: {_canonical_repr(v, depth + 1)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, set | frozenset):
        members = sorted(_canonical_repr(item, depth + 1) for item in value)
        plain = isinstance(value, set)
        if not members:
            return "set()" if plain else "frozenset()"
        body = "{" + ", ".join(members) + "}"
        return body if plain else f"frozenset({body})"
    return _ADDRESS.sub("", repr(value))
