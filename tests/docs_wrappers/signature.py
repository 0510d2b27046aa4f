"""A signature as a page writes it, compared with the code's, so the page cannot drift.

`<!-- fragment: signature beam_agents.ActivationError -->`: the fragment is either
call-shaped, `Name(param: type = default, ...)`, compared with the signature of the
object named after `signature`, or a few `def`s, each compared with that object's
attribute of the same name. Names, kinds, defaults and order must match; an
annotation or a return type the page writes must match the code's text.
"""

from __future__ import annotations
import __future__

import ast
import inspect
import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any

WRITTEN = r"""
# <fragment>
"""


def _all_defs(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:  # call-shaped: `name: type` is no argument of a call
        return False
    return all(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for node in body)


def documented(source: str) -> dict[str, inspect.Signature]:
    """The page's signatures by name, their annotations kept as the text it writes."""
    if not _all_defs(source):
        name, _, parameters = source.strip().partition("(")
        source = f"def {name.strip()}({parameters}: ..."
    namespace: dict[str, Any] = {}
    flags = __future__.annotations.compiler_flag
    exec(compile(source, "<page>", "exec", flags=flags, dont_inherit=True), namespace)
    return {
        name: inspect.signature(value)
        for name, value in namespace.items()
        if inspect.isfunction(value)
    }


def differences(written: inspect.Signature, real: inspect.Signature) -> list[str]:
    found = []
    shape = [(p.name, p.kind, p.default) for p in written.parameters.values()]
    if shape != [(p.name, p.kind, p.default) for p in real.parameters.values()]:
        found.append(f"the page writes {written}, the code has {real}")
    for parameter in written.parameters.values():
        actual = real.parameters.get(parameter.name)
        annotation = parameter.annotation
        written_one = annotation is not inspect.Parameter.empty
        if actual is not None and written_one and annotation != actual.annotation:
            found.append(f"{parameter.name}: {annotation} on the page, {actual.annotation}")
    returns = written.return_annotation
    if returns is not inspect.Signature.empty and returns != real.return_annotation:
        found.append(f"-> {returns} on the page, {real.return_annotation}")
    return found


def real_object(path: str) -> Callable[..., Any]:
    module, _, name = path.rpartition(".")
    value: Callable[..., Any] = getattr(import_module(module), name)
    return value


target = real_object(sys.argv[1])
pages = documented(WRITTEN)
assert pages, "the fragment holds no signature"
for name, written in pages.items():
    code = target if name == target.__name__ else getattr(target, name)
    problems = differences(written, inspect.signature(code))
    where = sys.argv[1] if code is target else f"{sys.argv[1]}.{name}"
    assert not problems, f"{where}: " + "; ".join(problems)
