"""Malformed input leaves on the errors output whole, in a replayable encoding."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

from beam_agents import ActivationError, AgentConfig
from beam_agents.runtime.element_payload import decode_element, encode_element, payload_form
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline


class Opaque:
    """Not a literal: its default repr carries a memory address."""


# (id, element, whether it is an answer, expected form, expected entity key)
SHAPES: list[tuple[str, Any, bool, str, bytes]] = [
    ("bare-bytes", b"raw \xff bytes", False, "bytes", b""),
    ("bare-str", "just text \u00e9", False, "utf-8", b""),
    ("int-event", ("k", 42), False, "json", b"k"),
    ("none-event", (b"k", None), False, "repr", b"k"),
    ("dict-event", ("k", {"b": [1, 2.5], "a": True}), False, "json", b"k"),
    ("three-tuple", ("k", b"v", b"extra"), False, "repr", b""),
    ("one-tuple", ("k",), False, "json", b""),
    ("int-key", (7, b"x"), False, "repr", b"7"),
    ("set-event", ("k", {"z", "a", "m"}), False, "repr", b"k"),
    ("answer-int-intent", ("k", 5, b"yes"), True, "repr", b"k"),
    ("answer-pair", ("k", "intent"), True, "json", b""),
    ("answer-int-value", ("k", "intent", 3), True, "json", b"k"),
]
OPAQUE_ID = "opaque-event"


@pytest.fixture(scope="module")
def run() -> StreamRun:
    script = Script()
    for i, (_, element, is_answer, _, _) in enumerate(SHAPES):
        script.raw((element, 1_000 + i), answers=is_answer)
    script.raw((("k", Opaque()), 5_000))
    script.events(("k", b"good", 6_000))
    return run_script(agents.remember, AgentConfig(), script)


def _error_at(run: StreamRun, time_ms: int) -> ActivationError:
    (error,) = [e for e in run.errors if e.event_time_ms == time_ms]
    return error


@pytest.mark.parametrize(
    ("index", "element", "form", "entity_key"),
    [(i, element, form, key) for i, (_, element, _, form, key) in enumerate(SHAPES)],
    ids=[shape[0] for shape in SHAPES],
)
def test_malformed_element_payload_round_trips(
    run: StreamRun, index: int, element: Any, form: str, entity_key: bytes
) -> None:
    error = _error_at(run, 1_000 + index)

    assert error.reason == "invalid_event"
    assert error.entity_key == entity_key
    assert payload_form(error.detail) == form
    decoded = decode_element(error.payload, form)  # type: ignore[arg-type]
    if form == "json":
        # JSON has arrays, not tuples: the documented reading of a tuple element.
        assert decoded == json.loads(json.dumps(element))
        assert (
            error.payload
            == json.dumps(
                element, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode()
        )
    else:
        assert decoded == element


def test_an_opaque_object_is_carried_as_a_repr_without_its_address(run: StreamRun) -> None:
    error = _error_at(run, 5_000)

    assert payload_form(error.detail) == "repr"
    assert error.payload == b"('k', <tests.runtime.test_dead_letters.Opaque object>)"
    assert encode_element(("k", Opaque())) == (error.payload, "repr")


def test_the_well_formed_event_after_the_malformed_ones_still_runs(run: StreamRun) -> None:
    assert run.outputs == [(b"k", b"1:good")]
    assert run.reasons() == ["invalid_event"] * (len(SHAPES) + 1)


def test_encoding_is_canonical_whatever_the_set_or_dict_order() -> None:
    one = encode_element((b"k", {"b", "a"}, {"y": b"1", "x": 2}))
    other = encode_element((b"k", {"a", "b"}, {"y": b"1", "x": 2}))

    assert one == other == (b"(b'k', {'a', 'b'}, {'y': b'1', 'x': 2})", "repr")
    assert ast.literal_eval(one[0].decode()) == (b"k", {"a", "b"}, {"y": b"1", "x": 2})


def _deep(levels: int) -> dict[str, Any]:
    outer: dict[str, Any] = {}
    inner = outer
    for _ in range(levels):
        inner["a"] = {}
        inner = inner["a"]
    return outer


def test_elements_nested_past_any_recursion_limit_dead_letter_as_invalid_event() -> None:
    """A key, event or answer nested 100,000 deep is a dead letter, never a failed step."""
    deep = _deep(100_000)
    script = Script()
    script.raw(((deep, b"x"), 1_000))
    script.raw((("k", deep), 2_000))
    script.raw(((deep, "intent", b"yes"), 3_000), answers=True)
    script.raw((("k", "intent", deep), 4_000), answers=True)
    script.events(("k", b"good", 5_000))
    run = run_script(agents.remember, AgentConfig(), script)
    assert run.reasons() == ["invalid_event"] * 4
    assert run.outputs == [(b"k", b"1:good")]
    keys = {error.event_time_ms: error.entity_key for error in run.errors}
    assert keys[2_000] == keys[4_000] == b"k"
    assert keys[1_000].startswith(b"{'a': {'a':")
    assert len(keys[1_000]) <= 256
