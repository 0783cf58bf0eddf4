"""Load Kubernetes manifests (YAML or JSON) and remember where every field is.

    manifests = load_manifests("01-kubelet/manifests/")   # a file, a dir or "-"
    for m in manifests:
        for err in validate_pod(m.obj):
            print(f"{m.filename}:{m.line_of(err.path)}: {err}")

A file may hold one object or many (YAML documents separated by `---`, or a
`kind: List` whose items are the objects). Each object comes back as a
`Manifest`: the plain dict, exactly as written (unknown fields kept), plus a
map from field paths to line numbers, so a validation error can point at the
line to fix.

Why not `yaml.safe_load_all`? It throws away positions, it silently keeps the
last of two duplicate keys (Kubernetes' strict decoding rejects them), and it
expands aliases without limit, so a 1 KB "billion laughs" file would eat all
memory. We let PyYAML compose the node graph, which is small even for a bomb
because an alias is just a second reference to an existing node, and build
the Python values ourselves, counting every node an alias brings in.

YAML version: PyYAML implements YAML 1.1, Kubernetes' go-yaml a mix of 1.1 and
1.2. We keep PyYAML's safe behaviour for plain scalars: `yes`/`no`/`on`/`off`
are booleans, `0755` is octal, `1e3` (no dot) is the *string* "1e3" while
`1.0e+3` is a float. Like Kubernetes (which turns YAML into JSON), an
unquoted date such as `2024-01-01` stays the string written, and `1:30` is
a string, not YAML 1.1's base-60 number. Validation reports values of the
wrong type and suggests quoting them.
JSON is the exception: there an unquoted `1e3` can only be a number, so it
is read as one.
"""

from __future__ import annotations

import json
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from common.model.nesting import MAX_DEPTH, too_deep_at

try:   # libyaml, PyYAML's parser in C: its wheels ship it
    from yaml._yaml import CParser
except ImportError:   # pragma: no cover (a PyYAML built without libyaml)
    CParser = None

# The API server refuses request bodies over 3 MiB (MaxRequestBodyBytes),
# so a bigger manifest could never be applied anyway.
MAX_BYTES = 3 * 1024 * 1024
# MAX_DEPTH (common/model/nesting.py): real manifests nest a few dozen levels at
# most (CRD schemas are the deepest); the limit keeps PyYAML's recursive
# composer off Python's stack, and is the API server's limit for every body.
# Nodes that aliases may pull in per document, counted each time an alias is
# used. Without aliases a document is bounded by MAX_BYTES already.
MAX_ALIAS_NODES = 100_000
# Values (scalars, lists and mappings) in one document. Reading YAML costs
# about 5 microseconds of CPU per value even with libyaml's parser, and
# 3 MiB of `[1,1,1,...]` is 1.5 million values (once 90 s of CPU): the budget
# bounds one document's parse to about a second. A 3 MiB CRD, the biggest
# real manifest, holds about 100,000 values (some 30 bytes each).
MAX_NODES = 200_000
EXTENSIONS = (".yaml", ".yml", ".json")

_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_NUMBER_TAGS = (_INT_TAG, "tag:yaml.org,2002:float")
# What a JSON value can be; YAML's !!binary, !!set, !!omap... cannot.
_SCALAR_TAGS = (_STR_TAG, *_NUMBER_TAGS, "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null")
_MERGE_TAG = "tag:yaml.org,2002:merge"
_PLAIN_COLLECTION_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


class ManifestError(Exception):
    """A manifest that cannot be loaded. str() is `FILE:LINE: message`.

    line is 1-based; 0 means the problem is with the file as a whole (it is
    missing, unreadable, too big), and str() is then `FILE: message`.
    """

    def __init__(self, filename: str, line: int, message: str):
        super().__init__(filename, line, message)
        self.filename = filename
        self.line = line
        self.message = message

    def __str__(self) -> str:
        if self.line:
            return f"{self.filename}:{self.line}: {self.message}"
        return f"{self.filename}: {self.message}"


@dataclass
class Manifest:
    """One object from a manifest file, and where its fields were written."""

    obj: dict
    filename: str
    line: int
    # Field path (a tuple of strings: keys, and list indexes as "0", "1", ...)
    # -> 1-based line. Empty when the text was not YAML-composable.
    lines: dict = field(default_factory=dict, repr=False, compare=False)

    def line_of(self, path: str) -> int:
        """The line of `spec.containers[1].ports[0].containerPort`.

        Falls back to the nearest parent that was written down (a missing
        field is reported where its parent is), then to the object's start.
        """
        keys = _split_path(path)
        while keys:
            if keys in self.lines:
                return self.lines[keys]
            keys = keys[:-1]
        return self.line


_PATH_PART = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


def _split_path(path: str) -> tuple[str, ...]:
    """`a.b[0][app.kubernetes.io/name]` -> ("a", "b", "0", "app.kubernetes.io/name")."""
    parts = []
    for bracketed, plain in _PATH_PART.findall(path):
        part = plain if plain else bracketed
        # Downward API style subscripts are quoted: metadata.labels['app'].
        if len(part) >= 2 and part[0] == part[-1] and part[0] in "'\"":
            part = part[1:-1]
        parts.append(part)
    return tuple(parts)


# [START load-manifests]
def load_manifests(source) -> list[Manifest]:
    """Load every object from a file, from a directory's *.yaml, *.yml and
    *.json files (sorted by name, not recursive, dot-files skipped), or from
    stdin when source is "-". An empty file yields no objects."""
    if str(source) == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise ManifestError("<stdin>", 0, "more than 3 MiB on standard input, the most the "
                                "Kubernetes API server accepts in one request; split it")
        return load_manifest_text(data, "<stdin>")
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.iterdir()
                       if p.suffix.lower() in EXTENSIONS
                       and not p.name.startswith(".") and p.is_file())
        if not files:
            raise ManifestError(str(path), 0, "no manifest files in this directory "
                                "(looked for *.yaml, *.yml and *.json)")
        return [m for f in files for m in _load_file(f)]
    if not path.exists():
        raise ManifestError(str(path), 0, "no such file or directory")
    return _load_file(path)
# [END load-manifests]


def _load_file(path: Path) -> list[Manifest]:
    try:
        # A device or a pipe reports size 0 and may never end (/dev/zero, a
        # FIFO): only regular files, and never more than the limit read.
        if not stat.S_ISREG(path.stat().st_mode):
            raise ManifestError(str(path), 0, "not a regular file (a device, a pipe or a socket?)")
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise _too_big(str(path), path.stat().st_size)
    except OSError as err:
        raise ManifestError(str(path), 0, f"cannot read file: {err.strerror or err}") from None
    return load_manifest_text(data, str(path))


def _too_big(filename: str, size: int) -> ManifestError:
    return ManifestError(filename, 0, f"file is {size} bytes, larger than 3 MiB "
                         f"({MAX_BYTES} bytes), the most the Kubernetes API server "
                         "accepts in one request; split it into several files")


def load_manifest_text(text: str | bytes, filename: str, max_bytes: int = MAX_BYTES) -> list[Manifest]:
    """Load every object from YAML or JSON text (bytes are decoded as UTF-8).

    filename is only used in messages and in the Manifests returned.
    max_bytes bounds what YAML aliases may expand a document to (the API
    server passes its --max-request-bytes).
    """
    if isinstance(text, (bytes, bytearray)):
        text = _decode(bytes(text), filename)
    if len(text) * 4 > MAX_BYTES:  # cheap test first: a character is <= 4 bytes
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_BYTES:
            raise _too_big(filename, size)
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ManifestError(filename, line, "not UTF-8 text: contains NUL bytes "
                            "(is this a binary file?)")
    text = text.removeprefix("\ufeff")
    looks_like_json = text.lstrip()[:1] in ("{", "[")
    if looks_like_json and filename.endswith(".json"):
        _is_json(text, filename)          # a .json file is held to JSON's rules first
    try:
        return _load_yaml(text, filename, looks_like_json, max_bytes)
    except (yaml.MarkedYAMLError, yaml.reader.ReaderError) as err:
        if not (looks_like_json and _is_json(text, filename)):
            raise _yaml_error(err, filename, text) from None
    # YAML refuses some valid JSON (tabs used as indentation, for one).
    # json.loads reads it, without line numbers.
    return _documents_to_manifests(_json_value(text, filename), {}, filename, 1)


def _is_json(text: str, filename: str) -> bool:
    """Is text that looks like JSON JSON? If not it may still be YAML's
    flow style (`{name: web}`), except in a .json file, where JSON's rules
    hold: a trailing comma, which YAML allows, is an error there."""
    try:
        json.loads(text)
        return True
    except (ValueError, RecursionError) as err:
        if filename.endswith(".json"):
            raise _json_error(err, filename) from None
        return False


def _json_value(text: str, filename: str):
    try:
        value = json.loads(text, object_pairs_hook=_reject_duplicate_json_keys)
    except (ValueError, RecursionError) as err:
        raise _json_error(err, filename) from None
    _check_json_depth(value, filename)
    return value


def _decode(data: bytes, filename: str) -> str:
    if len(data) > MAX_BYTES:
        raise _too_big(filename, len(data))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ManifestError(filename, line, f"not UTF-8 text: byte 0x{data[err.start]:02x} "
                            "cannot be decoded (is this a binary file?)") from None


def _load_yaml(text: str, filename: str, json_numbers: bool, max_bytes: int) -> list[Manifest]:
    manifests = []
    loader = GuardedLoader(text)
    loader.max_bytes = max_bytes
    while True:
        try:
            root = loader.get_node() if loader.check_node() else None
        except Refused as err:
            raise ManifestError(filename, err.line, err.message) from None
        except (OverflowError, ValueError) as err:
            # PyYAML's own reader (without libyaml) turns an escape like
            # "\UFFFFFFFF" into a character with chr(), which refuses it
            # with a bare exception.
            raise ManifestError(filename, loader.get_mark().line + 1,
                                f"invalid character escape in a quoted string ({err})") from None
        if root is None:
            break
        builder = _Builder(filename, json_numbers)
        value = builder.build(root, (), 0)
        if value is None:  # an empty document: only comments, or `---` alone
            continue
        manifests += _documents_to_manifests(value, builder.lines, filename, _line(root))
    return manifests


class Refused(Exception):
    """Raised inside PyYAML's composer; _load_yaml adds the file name."""

    def __init__(self, line: int, message: str):
        super().__init__(line, message)
        self.line, self.message = line, message


if CParser is not None:
    class _FastSafeLoader(Composer, CParser, SafeConstructor, Resolver):
        """PyYAML's SafeLoader with libyaml's parser: its events come from C,
        about twenty times faster, while composing nodes stays in Python,
        where GuardedLoader can count them (libyaml's own composer would
        recurse in C with no limit, and crash on `[[[[...]]]]`)."""

        def __init__(self, stream):
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
else:   # pragma: no cover
    _FastSafeLoader = yaml.SafeLoader


class GuardedLoader(_FastSafeLoader):
    """A SafeLoader whose composer refuses, while it reads, what would be
    too costly to build: deep nesting, alias bombs, too many values.

    PyYAML composes nodes recursively, so `[[[[...]]]]` 10,000 deep would
    hit Python's recursion limit; we stop at MAX_DEPTH. Every value costs
    CPU; we stop at MAX_NODES. And it keeps track of how many nodes and bytes
    each composed node stands for, so that a document whose aliases would
    expand past MAX_ALIAS_NODES nodes, or past max_bytes of text (one 1 MiB
    string used 50 times would be a 50 MiB object), is refused while it is
    being read, not after PyYAML has read 3 MiB of `*a, *a, *a`.
    (_Builder counts nodes again as it expands; this is the early exit.)
    """

    max_bytes = MAX_BYTES

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def line(self) -> int:
        """The line of the next event: where a refused node starts."""
        return self.peek_event().start_mark.line + 1

    def compose_document(self):
        # Anchors and budgets are per document.
        self._nodes: dict[int, int] = {}       # id(collection) -> nodes it expands to
        self._bytes: dict[int, int] = {}       # id(collection) -> bytes of text it expands to
        self._alias_nodes = self._composed = self._decoded = 0
        return super().compose_document()

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            return self._compose_alias(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:     # the root is at depth 0
                raise Refused(self.line(), _TOO_DEEP_MESSAGE)
            self._composed += 1
            if self._composed > MAX_NODES:
                raise Refused(self.line(), _TOO_MANY_MESSAGE)
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, ScalarNode):        # the most common node: kept quick
            self._add_bytes(len(node.value), node)
            return node
        children = _children(node)
        self._nodes[id(node)] = 1 + sum(self._nodes.get(id(child), 1) for child in children)
        self._bytes[id(node)] = 2 + sum(self._size(child) for child in children)
        self._add_bytes(2, node)
        return node

    def _compose_alias(self, parent, index):
        line = self.line()                      # where the alias is used
        node = super().compose_node(parent, index)  # the anchored node itself
        # A recursive alias has no size yet; _Builder reports it.
        self._alias_nodes += self._nodes.get(id(node), 1)
        if self._alias_nodes > MAX_ALIAS_NODES:
            raise Refused(line, _BOMB_MESSAGE)
        self._add_bytes(self._size(node), node, line)
        return node

    def _size(self, node) -> int:
        """Bytes of text `node` stands for, aliases expanded: what it costs to store."""
        return len(node.value) if isinstance(node, ScalarNode) else self._bytes.get(id(node), 0)

    def _add_bytes(self, size: int, node, line: int = 0) -> None:
        self._decoded += size
        if self._decoded > self.max_bytes:
            raise Refused(line or _line(node), f"aliases expand this document to more than {self.max_bytes} "
                           "bytes, the most one request may hold; refusing to expand them")


def _children(node):
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return ()


_TOO_DEEP_MESSAGE = f"nested more than {MAX_DEPTH} levels deep; a real manifest never is"
_TOO_MANY_MESSAGE = (f"more than {MAX_NODES} values in one document, more than reading it may "
                     "cost; split it")
_BOMB_MESSAGE = (f"aliases expand to more than {MAX_ALIAS_NODES} nodes (a \"billion laughs\" "
                 "YAML bomb?); refusing to expand them")


def _too_deep(filename: str, line: int) -> ManifestError:
    return ManifestError(filename, line, _TOO_DEEP_MESSAGE)


class _Builder:
    """Turns one composed YAML document into plain Python values.

    Along the way it records the line of every field (`lines`), rejects what
    Kubernetes' strict decoder rejects, and counts the nodes aliases bring
    in, so that a YAML bomb is refused after MAX_ALIAS_NODES steps instead of
    being expanded.
    """

    def __init__(self, filename: str, json_numbers: bool):
        self.filename = filename
        self.json_numbers = json_numbers
        self.scalars = SafeConstructor()
        self.lines: dict[tuple[str, ...], int] = {}
        self.seen: set[int] = set()       # ids of nodes already built once
        self.building: set[int] = set()   # ids of collections being built now
        self.alias_nodes = 0

    def error(self, node, message: str) -> ManifestError:
        return ManifestError(self.filename, _line(node), message)

    def build(self, node, path: tuple[str, ...], depth: int):
        if depth > MAX_DEPTH:
            raise _too_deep(self.filename, _line(node))
        # The composer creates one node per thing written in the text; meeting
        # a node a second time means an alias led here.
        if id(node) in self.seen:
            self.alias_nodes += 1
            if self.alias_nodes > MAX_ALIAS_NODES:
                raise self.error(node, _BOMB_MESSAGE)
        else:
            self.seen.add(id(node))
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if node.tag not in _PLAIN_COLLECTION_TAGS:
            raise self.error(node, f"unsupported YAML tag {node.tag!r}: "
                             "manifests use plain mappings and lists")
        if id(node) in self.building:
            raise self.error(node, "an alias refers to a collection that contains it "
                             "(a recursive alias); manifests must be trees")
        self.building.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return self.sequence(node, path, depth)
            return self.mapping(node, path, depth)
        finally:
            self.building.discard(id(node))

    def scalar(self, node: ScalarNode):
        if self.json_numbers and not node.style and node.tag == _STR_TAG:   # plain: None, or "" from libyaml
            # An unquoted JSON scalar that YAML 1.1 calls a string, like 1e3.
            try:
                number = json.loads(node.value)
            except ValueError:
                number = None
            if isinstance(number, (int, float)):
                return number
        if node.tag == _TIMESTAMP_TAG or (node.tag in _NUMBER_TAGS and ":" in node.value):
            # Kubernetes reads YAML into JSON: an unquoted date stays the
            # text written, and 1:30 is not YAML 1.1's base-60 number 90.
            return node.value
        if node.tag not in _SCALAR_TAGS:
            raise self.error(node, f"unsupported YAML tag {node.tag!r} on {node.value[:40]!r}: "
                             "manifests hold strings, numbers, booleans and null")
        try:
            return self.scalars.construct_object(node)
        except yaml.MarkedYAMLError as err:
            raise self.error(node, f"cannot read value: {err.problem}") from None
        except Exception as err:  # PyYAML's constructors fail in many ways: !!int '', !!bool abc
            if node.tag == _INT_TAG and node.value.lstrip("+-").isdigit():  # Python refuses > 4300 digits
                err = f"an integer of {len(node.value)} digits is too large"
            explained = str(err) or type(err).__name__
            raise self.error(node, f"cannot read value {node.value[:40]!r} as {_SCALAR_KINDS.get(node.tag, node.tag)}: "
                             f"{explained}") from None

    def sequence(self, node: SequenceNode, path, depth) -> list:
        items = []
        for i, item in enumerate(node.value):
            item_path = path + (str(i),)
            self.lines.setdefault(item_path, _line(item))
            items.append(self.build(item, item_path, depth + 1))
        return items

    def mapping(self, node: MappingNode, path, depth) -> dict:
        result: dict = {}
        first_seen: dict[str, int] = {}
        merges = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:  # `<<: *defaults`, applied below
                merges.append(value_node)
                continue
            key = self.key(key_node)
            line = _line(key_node)
            if key in first_seen:
                raise self.error(key_node, f"duplicate key \"{key}\" in one mapping "
                                 f"(first at line {first_seen[key]}, again at line {line}); "
                                 "Kubernetes' strict decoding rejects duplicate fields")
            first_seen[key] = line
            self.lines.setdefault(path + (key,), line)
            result[key] = self.build(value_node, path + (key,), depth + 1)
        # YAML merge keys (go-yaml supports them too): keys written in this
        # mapping win, then earlier merged mappings win over later ones.
        for source in merges:
            sources = source.value if isinstance(source, SequenceNode) else [source]
            for mapping in sources:
                if not isinstance(mapping, MappingNode):
                    raise self.error(mapping, "a merge key (<<) needs a mapping or a "
                                     "list of mappings")
                for key, value in self.build(mapping, path, depth + 1).items():
                    result.setdefault(key, value)
        return result

    def key(self, node) -> str:
        if isinstance(node, ScalarNode) and node.tag == _STR_TAG:
            return node.value
        if isinstance(node, ScalarNode) and node.value == "":
            raise self.error(node, "mapping keys must be strings, found an empty (null) key")
        if isinstance(node, ScalarNode):
            kind = _SCALAR_KINDS.get(node.tag, f"tagged {node.tag}")
            raise self.error(node, f"mapping keys must be strings, but {node.value} is read "
                             f"as {kind}; quote it (\"{node.value}\") if you meant the text")
        kind = "a list" if isinstance(node, SequenceNode) else "a mapping"
        raise self.error(node, f"mapping keys must be strings, found {kind} used as a key")


_SCALAR_KINDS = {
    "tag:yaml.org,2002:int": "an integer", "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "a boolean", "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a date", "tag:yaml.org,2002:binary": "binary data",
}


def _line(node) -> int:
    return node.start_mark.line + 1


# [START documents-to-manifests]
def _documents_to_manifests(value, lines: dict, filename: str, line: int,
                            where: str = "") -> list[Manifest]:
    """Check that one document is an object (or a List of them) and wrap it.

    lines holds the paths of this value only; where names it in messages
    (items[3] inside a List).
    """
    if not isinstance(value, dict):
        raise ManifestError(filename, line, (f"{where}: " if where else "") +
                            "a manifest must be a mapping (an object with apiVersion, "
                            f"kind, metadata), got {_describe(value)}")
    for name in ("apiVersion", "kind"):
        if name not in value or value[name] in (None, ""):
            raise ManifestError(filename, line, f"missing \"{name}\": every manifest "
                                "needs apiVersion and kind, e.g. \"apiVersion: v1\" "
                                "and \"kind: Pod\"")
        if not isinstance(value[name], str):
            raise ManifestError(filename, lines.get((name,), line),
                                f"\"{name}\" must be a string, got {_describe(value[name])}")
    if value["kind"] != "List":
        return [Manifest(value, filename, line, lines)]
    # kubectl's `kind: List` (apiVersion v1) is a client-side wrapper: the
    # objects inside are what gets created, one by one.
    items = value.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        raise ManifestError(filename, lines.get(("items",), line),
                            f"the items of a List must be a list, got {_describe(items)}")
    # One pass to split the line map by item; filtering it once per item
    # would be quadratic in a List of thousands.
    item_lines: dict[str, dict] = {}
    for path, n in lines.items():
        if len(path) >= 3 and path[0] == "items":
            item_lines.setdefault(path[1], {})[path[2:]] = n
    manifests = []
    for i, item in enumerate(items):
        item_line = lines.get(("items", str(i)), line)
        manifests += _documents_to_manifests(item, item_lines.get(str(i), {}), filename,
                                             item_line, f"{where}.items[{i}]" if where else f"items[{i}]")
    return manifests
# [END documents-to-manifests]


def _describe(value) -> str:
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})" if abs(value) < 10**20 else "a number"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _reject_duplicate_json_keys(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key \"{key}\" in one object; Kubernetes' "
                             "strict decoding rejects duplicate fields")
        obj[key] = value
    return obj


def _check_json_depth(value, filename: str) -> None:
    """The YAML path's depth limit, for what json.loads read (common/model/nesting.py)."""
    where = too_deep_at(value)
    if where is not None:
        raise ManifestError(filename, 0, f"nested more than {MAX_DEPTH} levels deep at {where}; "
                            "a real manifest never is")


def _json_error(err: Exception, filename: str) -> ManifestError:
    if isinstance(err, RecursionError):
        return _too_deep(filename, 0)
    line = getattr(err, "lineno", 0)
    message = getattr(err, "msg", str(err))
    return ManifestError(filename, line, f"invalid JSON: {message}")


def _char(character) -> str:
    code = character if isinstance(character, int) else ord(character)
    return f"#x{code:04x}"


def _yaml_error(err, filename: str, text: str) -> ManifestError:
    if isinstance(err, yaml.reader.ReaderError):
        line = text.count("\n", 0, err.position) + 1
        return ManifestError(filename, line, f"invalid YAML: character {_char(err.character)} "
                             "is not allowed in YAML text (is this a binary file?)")
    mark = err.problem_mark or err.context_mark
    message = err.problem or "syntax error"
    if err.context:
        started = ""
        if err.context_mark and mark and err.context_mark.line != mark.line:
            started = f" (started at line {err.context_mark.line + 1})"
        message = f"{err.context}{started}: {message}"
    return ManifestError(filename, mark.line + 1 if mark else 0, f"invalid YAML: {message}")
