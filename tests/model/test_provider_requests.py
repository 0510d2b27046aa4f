"""How both real providers read a request, and the canonical tool-call answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beam_agents.errors import ConfigurationError
from beam_agents.model._requests import (
    FunctionDeclaration,
    Sampling,
    function_declarations,
    normalize_messages,
    read_sampling,
    tool_calls_answer,
)


def test_a_string_is_a_user_turn_and_mappings_pass_through() -> None:
    tool = {"role": "tool", "content": "3", "tool_call_id": "c1"}
    assert normalize_messages(["hi", tool]) == [{"role": "user", "content": "hi"}, tool]


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([], "messages"),
        ("hi", "messages"),
        ([42], "messages[0]"),
        (["ok", {"role": "robot", "content": "x"}], "messages[1].role"),
        ([{"role": "user"}], "messages[0]"),
    ],
)
def test_a_malformed_message_is_refused_by_position(messages: Any, field: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        normalize_messages(messages)
    assert raised.value.field == field


def test_the_three_tools_schema_forms_read_the_same() -> None:
    schema = {"type": "object"}
    expected = [FunctionDeclaration("lookup", "Search.", schema)]
    plain = [{"name": "lookup", "description": "Search.", "parameters": schema}]
    wrapped = [{"type": "function", "function": plain[0]}]
    by_name = {"lookup": {"description": "Search.", "parameters": schema}}
    assert function_declarations(plain) == function_declarations(wrapped) == expected
    assert function_declarations(by_name) == expected
    assert function_declarations(None) == []


@pytest.mark.parametrize(
    ("tools", "field"),
    [
        ("lookup", "tools_schema"),
        ([{"description": "no name"}], "tools_schema[0].name"),
        ([{"name": "t", "parameters": "string"}], "tools_schema[0].parameters"),
        ({"t": "not a mapping"}, "tools_schema['t']"),
    ],
)
def test_a_malformed_tool_is_refused_by_position(tools: Any, field: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        function_declarations(tools)
    assert raised.value.field == field


def test_sampling_reads_every_known_key() -> None:
    params = {"temperature": 0, "top_p": 0.5, "max_output_tokens": 10, "stop": "x", "seed": 3}
    assert read_sampling(params) == Sampling(0.0, 0.5, 10, ("x",), 3)
    assert read_sampling(None) == Sampling()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"top_k": 5}, "sampling_params.top_k"),
        ({"temperature": "hot"}, "sampling_params.temperature"),
        ({"temperature": float("nan")}, "sampling_params.temperature"),
        ({"max_output_tokens": 0}, "sampling_params.max_output_tokens"),
        ({"stop": [1]}, "sampling_params.stop"),
        ({"seed": 1.5}, "sampling_params.seed"),
    ],
)
def test_bad_sampling_is_refused_by_key(params: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        read_sampling(params)
    assert raised.value.field == field


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1), st.dictionaries(st.text(), _json, max_size=4)), max_size=3
    )
)
def test_tool_call_answers_are_canonical_whatever_the_key_order(
    calls: list[tuple[str, dict[str, Any]]],
) -> None:
    reordered = [(name, dict(reversed(list(args.items())))) for name, args in calls]
    answer = tool_calls_answer(calls)
    assert answer == tool_calls_answer(reordered)
    assert json.loads(answer) == {
        "tool_calls": [{"name": name, "arguments": args} for name, args in calls]
    }
