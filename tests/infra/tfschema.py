"""The google provider's resource schema, derived offline from the CDKTF npm package.

Terraform cannot download the google provider here, so `terraform validate` cannot run.
The CDKTF bindings `@cdktf/provider-google` are generated from the provider's schema and
ship it as a jsii assembly (`package/.jsii`): every resource and data source has a
`...Config` struct whose properties are the arguments a configuration may set (required
unless marked optional; computed-only attributes are absent) and whose struct-typed
properties are nested blocks. This module fetches the tarball from the npm registry,
reduces the assembly to a compact JSON schema and caches that outside the repository.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import tarfile
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Terraform provider name -> (npm package, version). 16.12.1 is generated from google 6.50.
PACKAGES: dict[str, tuple[str, str]] = {
    "google": ("@cdktf/provider-google", "16.12.1"),
    "google-beta": ("@cdktf/provider-google-beta", "16.12.1"),
}
_SCHEMA_FORMAT = 1
_FETCH_TIMEOUT_S = 120
# `Represents a {@link https://.../docs/resources/bigtable_table google_bigtable_table}.`
_KIND_RE = re.compile(r"/docs/(resources|data-sources)/\w+ ([a-z0-9_]+)\}")
_PROVIDER_RE = re.compile(r"/docs ([a-z0-9_-]+)\}")
# `Docs at Terraform Registry: {@link https://...#instance_name BigtableTable#instance_name}`
_ANCHOR_RE = re.compile(r"#([a-z0-9_]+) \w+#[a-z0-9_]+\}")


class SchemaUnavailable(RuntimeError):
    """The provider schema could not be fetched (typically: no network)."""


@dataclass(frozen=True)
class Struct:
    """The settable arguments and nested blocks of one resource or block."""

    attributes: dict[str, bool]  # name -> required
    blocks: dict[str, tuple[bool, str]]  # name -> (required, struct id)


class ProviderSchema:
    """Resource, data source and provider structs of one provider."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self._raw = raw

    def resource(self, kind: str, type_name: str) -> Struct | None:
        """The struct of a resource (`kind="resources"`) or data source (`"data-sources"`)."""
        struct_id = self._raw[kind].get(type_name)
        return None if struct_id is None else self.struct(struct_id)

    def provider(self) -> Struct:
        """The struct of the `provider` block."""
        return self.struct(self._raw["provider"])

    def struct(self, struct_id: str) -> Struct:
        """A struct by id."""
        attributes, blocks = self._raw["structs"][struct_id]
        return Struct(attributes, {k: (bool(v[0]), v[1]) for k, v in blocks.items()})


def cache_dir() -> Path:
    """Where derived schemas live: `${XDG_CACHE_HOME:-~/.cache}/beam-agents/tf-schema`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "beam-agents" / "tf-schema"


def load(provider: str = "google") -> ProviderSchema:
    """Return the cached schema of `provider`, fetching and deriving it on first use."""
    package, version = PACKAGES[provider]
    target = cache_dir() / f"{package.strip('@').replace('/', '__')}-{version}.json"
    if target.exists():
        raw = json.loads(target.read_text())
        if raw.get("format") == _SCHEMA_FORMAT:
            return ProviderSchema(raw)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        assembly = _fetch_assembly(package, version, Path(scratch))
        raw = derive(assembly)
        del assembly
        partial = Path(scratch) / "schema.json"
        partial.write_text(json.dumps(raw, separators=(",", ":")))
        partial.replace(target)  # atomic: concurrent runs never read half a file
    return ProviderSchema(raw)


def _registry() -> str:
    return (os.environ.get("NPM_CONFIG_REGISTRY") or "https://registry.npmjs.org/").rstrip("/")


def _fetch_assembly(package: str, version: str, scratch: Path) -> dict[str, Any]:
    """Download the package tarball, check its integrity and parse its `.jsii`."""
    meta_url = f"{_registry()}/{urllib.parse.quote(package, safe='@')}/{version}"
    try:
        with urllib.request.urlopen(meta_url, timeout=_FETCH_TIMEOUT_S) as response:
            dist = json.load(response)["dist"]
        tarball = scratch / "package.tgz"
        digest = hashlib.sha512()
        with (
            urllib.request.urlopen(dist["tarball"], timeout=_FETCH_TIMEOUT_S) as response,
            tarball.open("wb") as out,
        ):
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except (OSError, KeyError, ValueError) as exc:
        raise SchemaUnavailable(
            f"cannot fetch {package}@{version} from {_registry()}: {exc}"
        ) from exc
    algorithm, _, expected = dist.get("integrity", "").partition("-")
    if algorithm == "sha512" and base64.b64decode(expected) != digest.digest():
        raise SchemaUnavailable(f"{package}@{version}: tarball integrity mismatch")
    with tarfile.open(tarball, "r:gz") as archive:
        member = archive.extractfile("package/.jsii")
        if member is None:
            raise SchemaUnavailable(f"{package}@{version}: no package/.jsii in the tarball")
        with member:
            assembly: dict[str, Any] = json.load(member)
    tarball.unlink()
    return assembly


def derive(assembly: dict[str, Any]) -> dict[str, Any]:
    """Reduce a jsii assembly to `{resources, data-sources, provider, structs}`."""
    types: dict[str, Any] = assembly["types"]
    out: dict[str, Any] = {"format": _SCHEMA_FORMAT, "resources": {}, "data-sources": {}}
    out["structs"] = structs = {}
    for spec in types.values():
        base = spec.get("base")
        if spec["kind"] != "class" or base not in {
            "cdktf.TerraformResource",
            "cdktf.TerraformDataSource",
            "cdktf.TerraformProvider",
        }:
            continue
        params = spec["initializer"]["parameters"]
        config_fqn = params[-1]["type"]["fqn"]
        summary = spec["docs"].get("summary", "")
        if base == "cdktf.TerraformProvider":
            if _PROVIDER_RE.search(summary):
                out["provider"] = config_fqn
        elif match := _KIND_RE.search(summary):
            out[match.group(1)][match.group(2)] = config_fqn
        else:
            continue
        _collect(config_fqn, types, structs)
    return out


def _collect(fqn: str, types: dict[str, Any], structs: dict[str, Any]) -> None:
    pending = [fqn]
    while pending:
        current = pending.pop()
        if current in structs:
            continue
        attributes: dict[str, bool] = {}
        blocks: dict[str, list[Any]] = {}
        for prop in types[current].get("properties", []):
            name = _terraform_name(prop)
            required = not prop.get("optional", False)
            nested = _struct_of(prop["type"], types)
            if nested is None:
                attributes[name] = required
            else:
                blocks[name] = [int(required), nested]
                pending.append(nested)
        structs[current] = [attributes, blocks]


def _terraform_name(prop: dict[str, Any]) -> str:
    """The snake_case name Terraform uses; the registry anchor in the docs is authoritative.

    Camel-case conversion alone is wrong for names like `detect_md5hash` or for
    arguments CDKTF renamed to dodge reserved words (`build` -> `buildAttribute`).
    """
    docs = prop.get("docs", {})
    match = _ANCHOR_RE.search(docs.get("remarks", "") + " " + docs.get("summary", ""))
    if match:
        return match.group(1)
    return re.sub(r"(?<!^)([A-Z])", r"_\1", prop["name"]).lower()


def _struct_of(type_ref: dict[str, Any], types: dict[str, Any]) -> str | None:
    """The struct a property's type refers to (a nested block), or None for a plain value."""
    if "union" in type_ref:
        for member in type_ref["union"]["types"]:
            if found := _struct_of(member, types):
                return found
        return None
    collection = type_ref.get("collection")
    if collection is not None and collection["kind"] == "array":
        return _struct_of(collection["elementtype"], types)
    if collection is not None:  # a map of values is an attribute, never a block
        return None
    fqn = type_ref.get("fqn")
    if fqn and types.get(fqn, {}).get("datatype") and fqn.startswith("@cdktf/provider-"):
        return str(fqn)
    return None
