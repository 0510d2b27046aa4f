"""Static checks of Terraform modules: provider schema, variables, outputs, module wiring.

A stand-in for `terraform validate`, which needs the provider binary this machine cannot
download. Every `.tf` file is parsed with python-hcl2 (v8: blocks carry `__is_block__`);
a directory is a module. Each check returns `Finding`s, printed as
`path:line: subject: message` so a failure names the file, the resource and the argument.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hcl2

from tests.infra import tfschema

#: Arguments Terraform itself understands on every resource and data source.
META_ARGUMENTS = frozenset(
    {"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection"}
)
#: Arguments of a `module` block that are not the module's input variables.
MODULE_META_ARGUMENTS = frozenset(
    {"source", "version", "count", "for_each", "depends_on", "providers"}
)
#: Resources of the hashicorp/random provider we use; its schema is not in the google package.
KNOWN_RANDOM_TYPES = frozenset({"random_password", "random_id"})
#: Names whose values are secrets, for variables and outputs alike (`*_id` names a secret,
#: e.g. `password_secret_id`, without carrying it).
SECRET_NAME = re.compile(
    r"^(?!.*_id$).*(password|auth_string|secret|token|credential|private_key)", re.I
)
#: Expressions that evaluate to a secret.
SECRET_EXPRESSION = re.compile(
    r"random_password\.[\w-]+\.(result|bcrypt_hash)|\.auth_string\b|\.secret_data\b"
)
_REFERENCE = re.compile(r"\b(var|module)\.([A-Za-z_][\w-]*)(?:\.([A-Za-z_][\w-]*))?")
# `provider = google-beta` parses as a bare name (`${google-beta}` in older parsers);
# an alias (`google-beta.eu`) selects the same provider's schema.
_PROVIDER_REF = re.compile(r"^(?:\$\{)?([\w-]+)(?:\.[\w-]+)?\}?$")
_OPTIONS = hcl2.SerializationOptions(with_comments=False, strip_string_quotes=True)


@dataclass(frozen=True)
class Finding:
    """One problem, located well enough to fix without searching."""

    path: Path
    line: int
    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.subject}: {self.message}"


@dataclass
class Module:
    """The parsed `.tf` files of one directory."""

    directory: Path
    files: dict[Path, dict[str, Any]] = field(default_factory=dict)
    texts: dict[Path, str] = field(default_factory=dict)

    def blocks(self, kind: str) -> Iterator[tuple[Path, str, dict[str, Any]]]:
        """`(file, label, body)` of every top-level block of one kind with one label."""
        for path, document in self.files.items():
            for entry in document.get(kind, []):
                for label, body in entry.items():
                    if label != "__is_block__":
                        yield path, label, body

    def typed_blocks(self, kind: str) -> Iterator[tuple[Path, str, str, dict[str, Any]]]:
        """`(file, type, name, body)` of every `resource` or `data` block."""
        for path, type_name, by_name in self.blocks(kind):
            for name, body in by_name.items():
                if name != "__is_block__":
                    yield path, type_name, name, body

    def line_of(self, path: Path, *labels: str) -> int:
        """The line where a block with these labels starts (1 when not found)."""
        pattern = r"^\s*" + r"\s+".join(rf'"?{re.escape(label)}"?' for label in labels) + r"\s*\{"
        match = re.search(pattern, self.texts[path], re.M)
        return self.texts[path].count("\n", 0, match.start()) + 1 if match else 1

    def variables(self) -> dict[str, dict[str, Any]]:
        """Variable name -> body."""
        return {name: body for _, name, body in self.blocks("variable")}

    def outputs(self) -> dict[str, dict[str, Any]]:
        """Output name -> body."""
        return {name: body for _, name, body in self.blocks("output")}


def parse_module(directory: Path) -> Module:
    """Parse every `.tf` file directly inside `directory`."""
    module = Module(directory)
    for path in sorted(directory.glob("*.tf")):
        text = path.read_text()
        module.texts[path] = text
        module.files[path] = copy.deepcopy(_parsed(text))
    return module


@functools.lru_cache(maxsize=2048)
def _parsed(text: str) -> dict[str, Any]:
    """One file's parse, by its text: python-hcl2's parser is slow (the infra/ tree takes
    seconds), and the checks read the same files, and byte-identical copies of them, many
    times. Callers get a deep copy, so what one of them changes no other sees."""
    parsed: dict[str, Any] = hcl2.loads(text, serialization_options=_OPTIONS)
    return parsed


def module_directories(root: Path) -> list[Path]:
    """Every directory under `root` (inclusive) that holds `.tf` files."""
    return sorted({path.parent for path in root.rglob("*.tf") if ".terraform" not in path.parts})


def check_tree(root: Path, schemas: Callable[[str], tfschema.ProviderSchema]) -> list[Finding]:
    """Run every check on every module under `root`."""
    findings: list[Finding] = []
    for directory in module_directories(root):
        module = parse_module(directory)
        findings += check_schema(module, schemas)
        findings += check_variables(module)
        findings += check_outputs(module)
        findings += check_module_calls(module)
        findings += check_moved(module)
    return findings


# --- provider schema ---------------------------------------------------------------------


def check_schema(
    module: Module, schemas: Callable[[str], tfschema.ProviderSchema]
) -> list[Finding]:
    """Every google resource, data source and provider block matches the provider schema."""
    findings: list[Finding] = []
    for kind, schema_kind in (("resource", "resources"), ("data", "data-sources")):
        for path, type_name, name, body in module.typed_blocks(kind):
            prefix = "data." if kind == "data" else ""
            subject = f"{prefix}{type_name}.{name}"
            line = module.line_of(path, kind, type_name, name)
            if type_name.startswith("random_"):
                if type_name not in KNOWN_RANDOM_TYPES:
                    message = f"unknown random resource type (known: {sorted(KNOWN_RANDOM_TYPES)})"
                    findings.append(Finding(path, line, subject, message))
                continue
            if not type_name.startswith("google_"):
                findings.append(Finding(path, line, subject, "not a google or random type"))
                continue
            schema = schemas(provider_of(body))
            struct = schema.resource(schema_kind, type_name)
            if struct is None:
                message = f"no such {schema_kind[:-1]} type in the {provider_of(body)} provider"
                findings.append(Finding(path, line, subject, message))
                continue
            for problem in _check_body(body, struct, schema, top_level=True):
                findings.append(Finding(path, line, subject, problem))
    for path, provider, body in module.blocks("provider"):
        if provider not in tfschema.PACKAGES:
            continue
        schema = schemas(provider)
        line = module.line_of(path, "provider", provider)
        for problem in _check_body(body, schema.provider(), schema, top_level=False):
            findings.append(Finding(path, line, f"provider.{provider}", problem))
    return findings


def provider_of(body: dict[str, Any]) -> str:
    """The provider a resource uses: its `provider` argument, else `google`."""
    match = _PROVIDER_REF.match(str(body.get("provider", "")))
    return match.group(1) if match else "google"


def _is_block(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, dict) and item.get("__is_block__") for item in value
    )


def _check_body(
    body: dict[str, Any],
    struct: tfschema.Struct,
    schema: tfschema.ProviderSchema,
    *,
    top_level: bool,
    where: str = "",
) -> Iterator[str]:
    dynamic: set[str] = set()
    for key, value in body.items():
        if key == "__is_block__" or (top_level and key in META_ARGUMENTS):
            continue
        if key == "dynamic" and isinstance(value, list):
            for entry in value:
                for label, spec in entry.items():
                    if label == "__is_block__":
                        continue
                    dynamic.add(label)
                    yield from _check_nested(label, spec.get("content", []), struct, schema, where)
        elif key in struct.attributes:
            if _is_block(value):
                yield f"`{where}{key}` is an argument: write `{key} = ...`, not a block"
        elif key in struct.blocks:
            blocks = value if isinstance(value, list) else [value]
            yield from _check_nested(key, blocks, struct, schema, where)
        else:
            yield (
                f"unknown argument or block `{where}{key}` (not in the provider schema;"
                " computed-only attributes cannot be set)"
            )
    for name, required in struct.attributes.items():
        if required and name not in body and name != "id":
            yield f"missing required argument `{where}{name}`"
    for name, (required, _) in struct.blocks.items():
        if required and name not in body and name not in dynamic:
            yield f"missing required block `{where}{name}`"


def _check_nested(
    key: str,
    blocks: list[Any],
    struct: tfschema.Struct,
    schema: tfschema.ProviderSchema,
    where: str,
) -> Iterator[str]:
    if key not in struct.blocks:
        yield f"unknown block `{where}{key}` (not in the provider schema)"
        return
    nested = schema.struct(struct.blocks[key][1])
    for block in blocks:
        if isinstance(block, dict):  # an expression (`x = var.y`) cannot be checked statically
            yield from _check_body(block, nested, schema, top_level=False, where=f"{where}{key}.")


# --- variables and outputs ---------------------------------------------------------------


def check_variables(module: Module) -> list[Finding]:
    """Every variable has a type and a description; secret-named ones are sensitive."""
    findings: list[Finding] = []
    for path, name, body in module.blocks("variable"):
        line = module.line_of(path, "variable", name)
        subject = f"var.{name}"
        if "type" not in body:
            findings.append(Finding(path, line, subject, "variable has no `type`"))
        if not _described(body):
            findings.append(Finding(path, line, subject, "variable has no `description`"))
        if SECRET_NAME.search(name) and body.get("sensitive") is not True:
            findings.append(Finding(path, line, subject, "carries a secret: set `sensitive`"))
    return findings


def check_outputs(module: Module) -> list[Finding]:
    """Every output has a description; an output carrying a secret is `sensitive`.

    An output carries a secret when its name says so, or its value references a secret
    expression, a sensitive variable, or a sensitive output of a called module.
    """
    sensitive_vars = {n for n, b in module.variables().items() if b.get("sensitive") is True}
    sensitive_outputs = _called_module_sensitive_outputs(module)
    findings: list[Finding] = []
    for path, name, body in module.blocks("output"):
        line = module.line_of(path, "output", name)
        subject = f"output.{name}"
        if not _described(body):
            findings.append(Finding(path, line, subject, "output has no `description`"))
        reasons = _secret_reasons(name, body.get("value"), sensitive_vars, sensitive_outputs)
        if reasons and body.get("sensitive") is not True:
            message = f"carries a secret ({', '.join(reasons)}): set `sensitive = true`"
            findings.append(Finding(path, line, subject, message))
    return findings


def _described(body: dict[str, Any]) -> bool:
    description = body.get("description")
    return isinstance(description, str) and bool(description.strip())


def _secret_reasons(
    name: str, value: Any, sensitive_vars: set[str], sensitive_outputs: dict[str, set[str]]
) -> list[str]:
    reasons = [f"name `{name}`"] if SECRET_NAME.search(name) else []
    for text in _strings(value):
        reasons += [f"`{m.group(0)}`" for m in SECRET_EXPRESSION.finditer(text)]
        for kind, first, second in _references(text):
            if kind == "var" and first in sensitive_vars:
                reasons.append(f"`var.{first}`")
            elif kind == "module" and second in sensitive_outputs.get(first, set()):
                reasons.append(f"`module.{first}.{second}`")
    return reasons


def _called_module_sensitive_outputs(module: Module) -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for _, call, body in module.blocks("module"):
        target = _local_source(module, body)
        if target is not None:
            outputs = parse_module(target).outputs()
            result[call] = {n for n, b in outputs.items() if b.get("sensitive") is True}
    return result


# --- module wiring -----------------------------------------------------------------------


def check_module_calls(module: Module) -> list[Finding]:
    """Module inputs are declared and complete; `var.` and `module.` references resolve."""
    findings: list[Finding] = []
    called: dict[str, Module | None] = {}
    for path, call, body in module.blocks("module"):
        line = module.line_of(path, "module", call)
        subject = f"module.{call}"
        target = _local_source(module, body)
        if target is None:
            called[call] = None
            if str(body.get("source", "")).startswith("."):
                message = f"source `{body['source']}` is not a directory with .tf files"
                findings.append(Finding(path, line, subject, message))
            continue
        callee = called[call] = parse_module(target)
        declared = callee.variables()
        for argument in sorted(set(body) - MODULE_META_ARGUMENTS - {"__is_block__"}):
            if argument not in declared:
                message = f"passes `{argument}`, which {target} does not declare as a variable"
                findings.append(Finding(path, line, subject, message))
        for variable, spec in declared.items():
            if "default" not in spec and variable not in body:
                message = f"does not pass required variable `{variable}` of {target}"
                findings.append(Finding(path, line, subject, message))
    declared_vars = module.variables()
    for path, document in module.files.items():
        text = module.texts[path]
        # A `moved` block names addresses, not values: check_moved checks those.
        expressions = {key: value for key, value in document.items() if key != "moved"}
        for expression in _strings(expressions):
            for kind, first, second in _references(expression):
                subject = f"{kind}.{first}" + (f".{second}" if second else "")
                message = _unresolved(kind, first, second, declared_vars, called)
                if message:
                    line = text.count("\n", 0, max(text.find(subject), 0)) + 1
                    findings.append(Finding(path, line, subject, message))
    return findings


def _unresolved(
    kind: str,
    first: str,
    second: str,
    declared_vars: dict[str, Any],
    called: dict[str, Module | None],
) -> str | None:
    if kind == "var":
        return None if first in declared_vars else "references an undeclared variable"
    if first not in called:
        return "references an undeclared module"
    callee = called[first]
    if callee is not None and second and second not in callee.outputs():
        return f"{callee.directory} has no output `{second}`"
    return None


def _local_source(module: Module, body: dict[str, Any]) -> Path | None:
    source = str(body.get("source", ""))
    if not source.startswith(("./", "../")):
        return None
    target = (module.directory / source).resolve()
    return target if target.is_dir() and any(target.glob("*.tf")) else None


def _references(text: str) -> list[tuple[str, str, str]]:
    """`(var|module, name, attribute)` referenced by the expressions in one parsed string."""
    start = text.find("${")
    return _REFERENCE.findall(text[start:]) if start >= 0 else []


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a parsed value, keys included (they can hold expressions)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# --- moved blocks -------------------------------------------------------------------------

_ADDRESS = re.compile(r"^((?:module\.[\w-]+\.)*)([\w-]+)\.([\w-]+)$")


def check_moved(module: Module) -> list[Finding]:
    """Every `moved` block leaves an address nothing declares for one that exists.

    A `to` that names no resource would make Terraform destroy what stood at `from`
    and create it anew; a `from` still declared is a refactoring left half done.
    """
    findings: list[Finding] = []
    declared = {(kind, name) for _, kind, name, _ in module.typed_blocks("resource")}
    for path, document in module.files.items():
        for block in document.get("moved", []):
            source, target = (_bare(block.get(end)) for end in ("from", "to"))
            subject = f"moved {source} -> {target}"
            line = module.texts[path].count("\n", 0, module.texts[path].find(source)) + 1
            origin = _ADDRESS.match(source)
            if origin is None or origin.group(1):
                findings.append(Finding(path, line, subject, "`from` is not a resource here"))
            elif (origin.group(2), origin.group(3)) in declared:
                findings.append(Finding(path, line, subject, "`from` is still declared"))
            message = _unresolved_address(module, target)
            if message:
                findings.append(Finding(path, line, subject, message))
    return findings


def _bare(address: Any) -> str:
    """An address as written: the parser wraps a bare reference in `${...}`."""
    text = str(address)
    return text[2:-1] if text.startswith("${") and text.endswith("}") else text


def _unresolved_address(module: Module, address: str) -> str | None:
    """Why a resource address (through module calls) names nothing, or None."""
    match = _ADDRESS.match(address)
    if match is None:
        return f"`{address}` is not a resource address"
    current = module
    for call in [part for part in match.group(1).split(".") if part and part != "module"]:
        calls = {label: body for _, label, body in current.blocks("module")}
        if call not in calls:
            return f"{current.directory} calls no module `{call}`"
        target = _local_source(current, calls[call])
        if target is None:
            return None  # a remote module: not checked offline
        current = parse_module(target)
    resources = {(kind, name) for _, kind, name, _ in current.typed_blocks("resource")}
    if (match.group(2), match.group(3)) not in resources:
        return f"{current.directory} declares no {match.group(2)}.{match.group(3)}"
    return None
