"""Writes protobuf_types.json: the message table protobuf.py decodes with.

Kubernetes' Go types carry their protobuf field numbers in struct tags,
beside the JSON names:

    Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`

That one line says everything a decoder needs to turn field 1 back into the
JSON the same object would have had: the JSON name, whether an empty value is
left out (`omitempty`), and whether the Go field is a pointer (a pointer set
to 0 is sent and kept; a plain int32 0 is sent too, but JSON leaves it out).
k8s.io/api's generated.proto has the numbers but not the pointers, so this
reads the Go sources: the types.go files of k8s.io/api and
k8s.io/apimachinery at one release tag, from git clones of the two
repositories (github.com/kubernetes/api and github.com/kubernetes/apimachinery).

    python 02-apiserver/kubectl_compat/protobuf_gen.py --api ~/src/api --apimachinery ~/src/apimachinery \\
        --ref v0.33.0 > 02-apiserver/kubectl_compat/protobuf_types.json

Only the messages reachable from the kinds registry.py serves are written.
Anything it cannot classify stops it with the type and field, rather than
writing a table that decodes wrongly.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from dataclasses import dataclass

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the chapter's modules, when run as a script
import registry  # noqa: E402



def api_package(group: str, version: str) -> str:
    """The k8s.io/api folder of a group's Go types: "" -> core/v1, "coordination.k8s.io" -> coordination/v1,
    "rbac.authorization.k8s.io" -> rbac/v1 (the group's first word)."""
    return f"{group.split('.')[0] or 'core'}/{version}"


# Where each Go package we read lives: (repository, folder). The k8s.io/api
# folders of the served groups are added to these.
PACKAGES = {"meta/v1": ("apimachinery", "pkg/apis/meta/v1")}
# Types whose Go JSON is not their struct's (a custom MarshalJSON): protobuf.py
# knows each one by name, so the table stops at them.
# (Duration would be one more; no served kind has one yet.)
LEAVES = {"meta/v1.Time", "meta/v1.MicroTime", "meta/v1.FieldsV1", "resource.Quantity", "intstr.IntOrString",
          "runtime.RawExtension"}     # a ControllerRevision's data
NAMED_SCALARS = {"types.UID": "string"}
SCALARS = {"string", "bool", "int32", "int64", "float64"}

STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
EMPTY_STRUCT = re.compile(r"^type (\w+) struct\s*\{\s*\}", re.M)
NAMED_TYPE = re.compile(r"^type (\w+) (?:= )?([\w.\[\]*]+)[ \t]*(?://.*)?$", re.M)
FIELD = re.compile(r"^\s*(?:(\w+)\s+)?([\w.\[\]*]+)\s+`([^`]*)`")
TAG = re.compile(r'(\w+):"([^"]*)"')
IMPORT = re.compile(r'^\s*(?:(\w+)\s+)?"([^"]+)"', re.M)


@dataclass
class GoStruct:
    package: str
    name: str
    body: str
    imports: dict[str, str]          # alias in this file -> our package name


def package_name(import_path: str) -> str:
    """k8s.io/api/core/v1 -> core/v1; k8s.io/apimachinery/pkg/api/resource -> resource."""
    if import_path.startswith("k8s.io/api/"):
        return import_path.removeprefix("k8s.io/api/")
    if import_path == "k8s.io/apimachinery/pkg/apis/meta/v1":
        return "meta/v1"
    return import_path.rsplit("/", 1)[-1]


def file_imports(source: str) -> dict[str, str]:
    block = re.search(r"^import \((.*?)^\)", source, re.M | re.S)
    lines = block.group(1) if block else "\n".join(re.findall(r"^import (.*)$", source, re.M))
    return {alias or path.rsplit("/", 1)[-1]: package_name(path) for alias, path in IMPORT.findall(lines)}


class Sources:
    """The Go files of PACKAGES at one git ref, parsed into structs and named types."""

    def __init__(self, repos: dict[str, str], ref: str):
        self.repos, self.ref = repos, ref
        self.structs: dict[str, GoStruct] = {}
        self.named: dict[str, tuple[str, str, dict]] = {}   # key -> (package, underlying type, imports)
        for package, (repo, folder) in PACKAGES.items():
            for path in self._go_files(repo, folder):
                self._parse(package, self._git(repo, "show", f"{ref}:{path}"))

    def _git(self, repo: str, *args: str) -> str:
        return subprocess.run(["git", "-C", self.repos[repo], *args], check=True,
                              capture_output=True, text=True).stdout

    def _go_files(self, repo: str, folder: str) -> list[str]:
        names = self._git(repo, "ls-tree", "--name-only", self.ref, folder + "/").split()
        return [n for n in names if n.endswith(".go") and not n.endswith("_test.go")
                and not n.rsplit("/", 1)[-1].startswith(("generated.", "zz_generated"))]

    def _parse(self, package: str, source: str) -> None:
        source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)    # block comments (DaemonEndpoint has one)
        imports = file_imports(source)
        for match in STRUCT.finditer(source):
            self.structs[f"{package}.{match.group(1)}"] = GoStruct(package, match.group(1), match.group(2), imports)
        for match in EMPTY_STRUCT.finditer(source):
            self.structs[f"{package}.{match.group(1)}"] = GoStruct(package, match.group(1), "", imports)
        for name, underlying in NAMED_TYPE.findall(source):
            if underlying not in ("struct", "interface"):
                self.named[f"{package}.{name}"] = (package, underlying, imports)


class Table:
    """Walks from the served kinds to every message they contain."""

    def __init__(self, sources: Sources):
        self.sources = sources
        self.messages: dict[str, list[list]] = {}
        self.pending: list[str] = []

    def add_kind(self, key: str) -> None:
        self.pending.append(key)
        while self.pending:
            key = self.pending.pop()
            if key not in self.messages:
                self.messages[key] = self._fields(self.sources.structs[key])

    def _fields(self, struct: GoStruct) -> list[list]:
        fields = []
        for line in struct.body.splitlines():
            if line.strip().startswith("//") or not line.strip():
                continue
            match = FIELD.match(line)
            if not match:
                raise SystemExit(f"{struct.package}.{struct.name}: cannot read the field line {line.strip()!r}")
            go_name, go_type, tags = match.groups()
            tags = dict(TAG.findall(tags))
            if "protobuf" not in tags or tags.get("json") == "-" or tags["protobuf"] == "-":
                continue                   # not on the wire (TypeMeta travels in the envelope)
            where = f"{struct.package}.{struct.name}.{go_name or go_type}"
            fields.append(self._field(where, struct, go_name, go_type, tags))
        return fields

    def _field(self, where: str, struct: GoStruct, go_name: str | None, go_type: str, tags: dict) -> list:
        _, number, *_ = tags["protobuf"].split(",")
        json_name, *json_options = tags.get("json", "").split(",")
        table_type = self._resolve(where, struct.package, go_type, struct.imports)
        if "omitzero" in json_options:     # Go 1.24's; k8s.io/api v0.33 has none
            raise SystemExit(f"{where}: omitzero is not handled by protobuf.py yet")
        options = [o for o in json_options if o == "omitempty"]
        if "inline" in json_options or (go_name is None and not json_name):
            options = ["inline"]
        elif not json_name:
            json_name = go_name            # Go's default JSON name is the field's
        # Only the tag's number is used. Its wire type and `opt`/`rep` label
        # are not always right (PodSpec.priority, an int32, says `bytes`; some
        # slices say `opt`): the generated code follows the Go type, so do we.
        return [int(number), json_name, table_type, ",".join(options)]

    def _resolve(self, where: str, package: str, go_type: str, imports: dict) -> str:
        """A Go type -> the table's type: scalar, bytes, leaf or message key, with *, [] or map[string]."""
        if go_type.startswith("*"):
            return "*" + self._resolve(where, package, go_type[1:], imports)
        if go_type == "[]byte":
            return "bytes"
        if go_type.startswith("[]"):
            return "[]" + self._resolve(where, package, go_type[2:], imports)
        if go_type.startswith("map["):
            key, value = go_type[4:].split("]", 1)
            if self._resolve(where, package, key, imports) != "string":
                raise SystemExit(f"{where}: map keys must be strings, not {key}")
            return "map[string]" + self._resolve(where, package, value, imports)
        if go_type in SCALARS:
            return go_type
        alias, _, name = go_type.rpartition(".")
        key = f"{imports[alias] if alias else package}.{name}"
        if key in LEAVES:
            return key
        if key in NAMED_SCALARS:
            return NAMED_SCALARS[key]
        if key in self.sources.named:
            named_package, underlying, named_imports = self.sources.named[key]
            resolved = self._resolve(where, named_package, underlying, named_imports)
            if resolved.startswith("[]"):
                # A named slice travels wrapped in a message of its own
                # (`message ExtraValue { repeated string items = 1; }`), but
                # its JSON is the plain list: "wrapper" tells the decoder so.
                self.messages[key] = [[1, "items", resolved, "wrapper"]]
                return key
            return resolved
        if key in self.sources.structs:
            self.pending.append(key)
            return key
        raise SystemExit(f"{where}: the type {go_type} ({key}) is in none of the packages read")


def source_commit(sources: Sources, repo: str) -> str:
    return sources._git(repo, "rev-parse", sources.ref + "^{commit}").strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api", required=True, help="a git clone of github.com/kubernetes/api")
    parser.add_argument("--apimachinery", required=True, help="a git clone of github.com/kubernetes/apimachinery")
    parser.add_argument("--ref", default="v0.33.0", help="the release tag to read in both")
    args = parser.parse_args(argv)
    # CustomResourceDefinition's Go type lives in k8s.io/apiextensions-apiserver,
    # not k8s.io/api, and kubectl sends it as JSON: it has no row here.
    resources = [r for r in registry.RESOURCES if r.group != "apiextensions.k8s.io"]
    # Not served kinds, but bodies kubectl sends as protobuf to a subresource:
    # `kubectl create token` POSTs a TokenRequest to serviceaccounts/NAME/token.
    resources += [registry.Resource("authentication.k8s.io", "v1", "TokenRequest", "", True)]
    for resource in resources:
        package = api_package(resource.group, resource.version)
        PACKAGES.setdefault(package, ("api", package))
    sources = Sources({"api": args.api, "apimachinery": args.apimachinery}, args.ref)
    table = Table(sources)
    kinds = {}
    for resource in resources:
        key = f"{api_package(resource.group, resource.version)}.{resource.kind}"
        table.add_kind(key)
        kinds[f"{resource.api_version}/{resource.kind}"] = key
    write(sys.stdout, {
        "about": "Protobuf field numbers, JSON names and Go shapes of the kinds this API server serves. "
                 "Generated by 02-apiserver/kubectl_compat/protobuf_gen.py from the Go struct tags of k8s.io/api and "
                 "k8s.io/apimachinery; do not edit by hand. A field is [number, JSON name, type, options].",
        "source": {"k8s.io/api": f"{args.ref} {source_commit(sources, 'api')}",
                   "k8s.io/apimachinery": f"{args.ref} {source_commit(sources, 'apimachinery')}"},
        "kinds": kinds,
        "messages": dict(sorted(table.messages.items())),
    })


def write(out, document: dict) -> None:
    """JSON with one field per line, so a regenerated table diffs readably."""
    out.write("{\n")
    for key in ("about", "source", "kinds"):
        out.write(f"  {json.dumps(key)}: {json.dumps(document[key], indent=None)},\n")
    out.write('  "messages": {\n')
    for i, (name, fields) in enumerate(document["messages"].items()):
        out.write(f"    {json.dumps(name)}: [\n")
        out.write(",\n".join(f"      {json.dumps(field)}" for field in fields))
        out.write("\n    ]" + ("," if i < len(document["messages"]) - 1 else "") + "\n")
    out.write("  }\n}\n")


if __name__ == "__main__":
    main()
