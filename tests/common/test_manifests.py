"""Loading manifests: YAML and JSON, many documents, line numbers, hostile files."""

import io
import os
import sys
import textwrap
import time

import pytest

from common.model import manifests as manifests_module
from common.model.defaults import apply_pod_defaults
from common.model.manifests import (MAX_BYTES, Manifest, ManifestError, load_manifest_text,
                              load_manifests)
from common.model.validation import validate_pod

# The pod from kubernetes.io, "Communicate Between Containers in the Same Pod
# Using a Shared Volume", plus one field Kubernetes does not know.
TWO_CONTAINER_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: two-containers
spec:

  restartPolicy: Never

  volumes:
  - name: shared-data
    emptyDir: {}

  containers:

  - name: nginx-container
    image: nginx
    volumeMounts:
    - name: shared-data
      mountPath: /usr/share/nginx/html

  - name: debian-container
    image: debian
    workshopNote: not a Kubernetes field
    volumeMounts:
    - name: shared-data
      mountPath: /pod-data
    command: ["/bin/sh"]
    args: ["-c", "echo Hello from the debian container > /pod-data/index.html"]
"""


def dedent(text):
    return textwrap.dedent(text).lstrip("\n")


def test_real_pod_from_the_docs_loads_and_validates():
    [m] = load_manifest_text(TWO_CONTAINER_POD, "two-container-pod.yaml")
    assert (m.filename, m.line) == ("two-container-pod.yaml", 1)
    assert m.obj["spec"]["containers"][1]["workshopNote"] == "not a Kubernetes field"
    assert m.obj["spec"]["volumes"] == [{"name": "shared-data", "emptyDir": {}}]
    assert validate_pod(m.obj) == []
    assert validate_pod(apply_pod_defaults(m.obj)) == []


@pytest.mark.parametrize("path, line", [
    pytest.param("", 1, id="root"),
    pytest.param("metadata.name", 4, id="nested-key"),
    pytest.param("spec.restartPolicy", 7, id="after-blank-line"),
    pytest.param("spec.volumes[0]", 10, id="list-item"),
    pytest.param("spec.containers[1].volumeMounts[0].mountPath", 26, id="deep"),
    pytest.param("spec.containers[1].args[1]", 28, id="flow-list-item"),
    pytest.param("spec.containers[0].image.tag", 16, id="missing-child-uses-parent"),
    pytest.param("spec.containers[0].ports[0].containerPort", 15, id="missing-list-uses-item"),
    pytest.param("status.phase", 1, id="missing-top-level-uses-start"),
    pytest.param("spec.containers.1.name", 21, id="dot-index-spelling"),
])
def test_line_of(path, line):
    [m] = load_manifest_text(TWO_CONTAINER_POD, "pod.yaml")
    assert m.line_of(path) == line


def test_line_of_label_keys_with_dots():
    text = dedent("""
        apiVersion: v1
        kind: Pod
        metadata:
          labels:
            app.kubernetes.io/name: web
    """)
    [m] = load_manifest_text(text, "pod.yaml")
    assert m.line_of("metadata.labels[app.kubernetes.io/name]") == 5
    assert m.line_of("metadata.labels['app.kubernetes.io/name']") == 5


def test_validation_errors_point_at_lines():
    text = TWO_CONTAINER_POD.replace("name: debian-container", "name: debian_container")
    [m] = load_manifest_text(text, "pod.yaml")
    [error] = validate_pod(m.obj)
    assert error.path == "spec.containers[1].name"
    assert m.line_of(error.path) == 21


# (id, text, [(line, apiVersion/kind or name)]) for texts that load.
LOADS = [
    ("empty-file", "", []),
    ("only-comments", "# nothing here\n   \n# still nothing\n", []),
    ("only-separators", "---\n---\n# c\n---\n", []),
    ("null-document", "--- ~\n", []),
    ("single", "apiVersion: v1\nkind: Pod\n", [(1, "Pod")]),
    ("multi-doc", "apiVersion: v1\nkind: Pod\n---\n# a comment\napiVersion: v1\nkind: Service\n",
     [(1, "Pod"), (5, "Service")]),
    ("multi-doc-empty-middle", "apiVersion: v1\nkind: A\n---\n---\napiVersion: v1\nkind: B\n",
     [(1, "A"), (5, "B")]),
    ("list", dedent("""
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: Pod
        - apiVersion: v1
          kind: Service
     """), [(4, "Pod"), (6, "Service")]),
    ("empty-list", "apiVersion: v1\nkind: List\nitems: []\n", []),
    ("json", '{"apiVersion": "v1", "kind": "Pod"}', [(1, "Pod")]),
    ("json-multiline", '{\n  "apiVersion": "v1",\n  "kind": "Pod"\n}\n', [(1, "Pod")]),
    ("json-tabs-fallback", '{\n\t"apiVersion": "v1",\n\t"kind": "Pod"\n}\n', [(1, "Pod")]),
    ("flow-yaml", "{apiVersion: v1, kind: Pod}\n", [(1, "Pod")]),
    ("byte-order-mark", "\ufeffapiVersion: v1\nkind: Pod\n", [(1, "Pod")]),
    ("crlf", "apiVersion: v1\r\nkind: Pod\r\n", [(1, "Pod")]),
]


@pytest.mark.parametrize("text, expected", [pytest.param(t, e, id=i) for i, t, e in LOADS])
def test_loads(text, expected):
    manifests = load_manifest_text(text, "m.yaml")
    assert [(m.line, m.obj["kind"]) for m in manifests] == expected


def test_list_items_have_their_own_line_maps():
    text = dedent("""
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: Pod
          spec:
            nodeName: a
        - apiVersion: v1
          kind: Pod
          spec:
            nodeName: b
    """)
    first, second = load_manifest_text(text, "list.yaml")
    assert (first.line_of("spec.nodeName"), second.line_of("spec.nodeName")) == (7, 11)
    assert second.line_of("metadata.name") == 8


@pytest.mark.parametrize("text, expected", [
    pytest.param("apiVersion: v1\nkind: Pod\nx: yes\n", True, id="yes-is-bool"),
    pytest.param("apiVersion: v1\nkind: Pod\nx: '1e3'\n", "1e3", id="quoted"),
    pytest.param("apiVersion: v1\nkind: Pod\nx: 1e3\n", "1e3", id="yaml11-exponent-string"),
    pytest.param("apiVersion: v1\nkind: Pod\nx: 1.0e+3\n", 1000.0, id="yaml11-float"),
    pytest.param("apiVersion: v1\nkind: Pod\nx: 0755\n", 493, id="octal"),
    pytest.param("apiVersion: v1\nkind: Pod\nx: 2024-01-31\n", "2024-01-31", id="date-stays-text"),
    pytest.param("apiVersion: v1\nkind: Pod\nx: 1:30\n", "1:30", id="no-base-60"),
    pytest.param('{"apiVersion": "v1", "kind": "Pod", "x": 1e3}', 1000.0,
                 id="json-exponent-number"),
    pytest.param('{"apiVersion": "v1", "kind": "Pod", "x": "yes"}', "yes",
                 id="json-quoted-string"),
    pytest.param("b: &b {x: 1, y: 2}\napiVersion: v1\nkind: Pod\nm:\n  <<: *b\n  y: 3\n",
                 None, id="merge-key"),
])
def test_scalar_semantics(text, expected):
    [m] = load_manifest_text(text, "m.yaml")
    if "<<" in text:  # keys written in the mapping win over merged ones
        assert m.obj["m"] == {"x": 1, "y": 3}
    else:
        assert m.obj["x"] == expected


def billion_laughs(levels=9, width=9):
    lines = ['a0: &a0 "lol"']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "apiVersion: v1\nkind: Pod\n" + "\n".join(lines) + "\n"


SECOND_DOC_BAD = ("apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\nmetadata:\n"
                  "  name: a\n   bad: indent\n---\napiVersion: v1\nkind: Pod\n")

# (id, text or bytes, "FILE:LINE: message" expected)
REFUSED = [
    ("list-document", "- a\n- b\n",
     "m.yaml:1: a manifest must be a mapping (an object with apiVersion, kind, metadata), "
     "got a list"),
    ("scalar-document", "hello\n",
     "m.yaml:1: a manifest must be a mapping (an object with apiVersion, kind, metadata), "
     "got a string ('hello')"),
    ("no-kind", "apiVersion: v1\nmetadata: {}\n",
     'm.yaml:1: missing "kind": every manifest needs apiVersion and kind, '
     'e.g. "apiVersion: v1" and "kind: Pod"'),
    ("no-apiVersion", "kind: Pod\n",
     'm.yaml:1: missing "apiVersion": every manifest needs apiVersion and kind, '
     'e.g. "apiVersion: v1" and "kind: Pod"'),
    ("kind-is-number", "apiVersion: v1\nkind: 5\n",
     'm.yaml:2: "kind" must be a string, got a number (5)'),
    ("duplicate-key", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n",
     'm.yaml:5: duplicate key "name" in one mapping (first at line 4, again at line 5); '
     "Kubernetes' strict decoding rejects duplicate fields"),
    ("int-key", "apiVersion: v1\nkind: Pod\n1: x\n",
     'm.yaml:3: mapping keys must be strings, but 1 is read as an integer; '
     'quote it ("1") if you meant the text'),
    ("bool-key", "apiVersion: v1\nkind: Pod\non: x\n",
     'm.yaml:3: mapping keys must be strings, but on is read as a boolean; '
     'quote it ("on") if you meant the text'),
    ("list-key", "apiVersion: v1\nkind: Pod\n? [a]\n: x\n",
     "m.yaml:3: mapping keys must be strings, found a list used as a key"),
    ("syntax-error", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n   bad: indent\n",
     "m.yaml:5: invalid YAML: mapping values are not allowed in this context"),
    ("unclosed-flow", "apiVersion: v1\nkind: [Pod\n",
     "m.yaml:3: invalid YAML: while parsing a flow sequence (started at line 2): "
     "did not find expected ',' or ']'"),
    ("second-document-bad", SECOND_DOC_BAD,
     "m.yaml:8: invalid YAML: mapping values are not allowed in this context"),
    ("second-document-list", "apiVersion: v1\nkind: Pod\n---\n\n- x\n",
     "m.yaml:5: a manifest must be a mapping (an object with apiVersion, kind, metadata), "
     "got a list"),
    ("second-document-duplicate",
     "apiVersion: v1\nkind: A\n---\nkind: B\napiVersion: v1\nkind: C\n",
     'm.yaml:6: duplicate key "kind" in one mapping (first at line 4, again at line 6); '
     "Kubernetes' strict decoding rejects duplicate fields"),
    ("list-item-not-mapping",
     "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: A\n- 5\n",
     "m.yaml:6: items[1]: a manifest must be a mapping (an object with apiVersion, kind, "
     "metadata), got a number (5)"),
    ("list-items-string", "apiVersion: v1\nkind: List\nitems: none\n",
     "m.yaml:3: the items of a List must be a list, got a string ('none')"),
    ("binary-garbage", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8",
     "m.yaml:1: not UTF-8 text: byte 0x89 cannot be decoded (is this a binary file?)"),
    ("nul-bytes", b"apiVersion: v1\nkind: Pod\x00\n",
     "m.yaml:2: not UTF-8 text: contains NUL bytes (is this a binary file?)"),
    ("control-character", "apiVersion: v1\nkind: \x07Pod\n",
     "m.yaml:2: invalid YAML: character #x0007 is not allowed in YAML text "
     "(is this a binary file?)"),
    ("unknown-tag", "apiVersion: v1\nkind: !Pod x\n",
     "m.yaml:2: unsupported YAML tag '!Pod' on 'x': manifests hold strings, numbers, booleans and null"),
    ("bool-tag-on-text", "apiVersion: v1\nkind: Pod\nx: !!bool abc\n",
     "m.yaml:3: cannot read value 'abc' as a boolean: 'abc'"),
    ("int-tag-on-nothing", "apiVersion: v1\nkind: Pod\nx: !!int ''\n",
     "m.yaml:3: cannot read value '' as an integer: string index out of range"),
    ("seq-tag-on-text", "apiVersion: v1\nkind: Pod\nx: !!seq hello\n",
     "m.yaml:3: unsupported YAML tag 'tag:yaml.org,2002:seq' on 'hello': "
     "manifests hold strings, numbers, booleans and null"),
    ("binary", "apiVersion: v1\nkind: Pod\nx: !!binary aGk=\n",
     "m.yaml:3: unsupported YAML tag 'tag:yaml.org,2002:binary' on 'aGk=': "
     "manifests hold strings, numbers, booleans and null"),
    ("escape-out-of-range", 'apiVersion: v1\nkind: Pod\na: "\\UFFFFFFFF"\n',
     "m.yaml:3: invalid YAML: while parsing a quoted scalar: found invalid Unicode character escape code"),
    ("merge-chain", "a0: &a0 {}\n" + "".join(f"a{k}: &a{k} " + "{<<: " * 30 + f"*a{k - 1}" + "}" * 30 + "\n"
                                             for k in range(1, 7)),
     "m.yaml:2: nested more than 100 levels deep; a real manifest never is"),
    ("python-tag", "apiVersion: v1\nkind: Pod\nx: !!python/object/apply:os.system [ls]\n",
     "m.yaml:3: unsupported YAML tag 'tag:yaml.org,2002:python/object/apply:os.system': "
     "manifests use plain mappings and lists"),
    ("recursive-alias", "apiVersion: v1\nkind: Pod\nx: &x [*x]\n",
     "m.yaml:3: an alias refers to a collection that contains it (a recursive alias); "
     "manifests must be trees"),
    ("undefined-alias", "apiVersion: v1\nkind: *nope\n",
     "m.yaml:2: invalid YAML: found undefined alias 'nope'"),
    ("huge-integer", "apiVersion: v1\nkind: Pod\nx: " + "9" * 5000 + "\n",
     "m.yaml:3: cannot read value '9999999999999999999999999999999999999999' as an integer: "
     "an integer of 5000 digits is too large"),
    ("deep-flow-lists", "[" * 10_000 + "]" * 10_000,
     "m.yaml:1: nested more than 100 levels deep; a real manifest never is"),
    ("deep-block-maps", "".join(f"{' ' * i}k:\n" for i in range(200)),
     "m.yaml:101: nested more than 100 levels deep; a real manifest never is"),
    ("deep-through-aliases",
     "apiVersion: v1\nkind: Pod\n" + "".join(
         f"a{i}: &a{i} [{'*a' + str(i - 1) if i else 0}]\n" for i in range(150)),
     "m.yaml:3: nested more than 100 levels deep; a real manifest never is"),
    ("billion-laughs", billion_laughs(),
     'm.yaml:9: aliases expand to more than 100000 nodes (a "billion laughs" YAML bomb?); '
     "refusing to expand them"),
    ("bad-json", '{"apiVersion": "v1" "kind": "Pod"}',
     "m.yaml:1: invalid YAML: while parsing a flow mapping: did not find expected ',' or '}'"),
]


@pytest.mark.parametrize("text, message", [pytest.param(t, m, id=i) for i, t, m in REFUSED])
def test_refused(text, message):
    with pytest.raises(ManifestError) as caught:
        load_manifest_text(text, "m.yaml")
    assert str(caught.value) == message
    assert caught.value.filename == "m.yaml"


def test_billion_laughs_is_refused_quickly():
    started = time.monotonic()
    with pytest.raises(ManifestError, match="billion laughs"):
        load_manifest_text(billion_laughs(), "bomb.yaml")
    # Loose on purpose: this catches a hang or an expansion, not slowness.
    assert time.monotonic() - started < 5


def test_moderate_alias_use_is_fine():
    text = billion_laughs(levels=3, width=9)  # 729 "lol"s
    [m] = load_manifest_text(text, "m.yaml")
    assert len(m.obj["a3"]) == 9 and m.obj["a3"][8][8] == ["lol"] * 9


def test_error_attributes():
    with pytest.raises(ManifestError) as caught:
        load_manifest_text(SECOND_DOC_BAD, "pods.yaml")
    assert (caught.value.filename, caught.value.line) == ("pods.yaml", 8)
    assert caught.value.message.startswith("invalid YAML")


def test_json_file_errors_come_from_json():
    with pytest.raises(ManifestError) as caught:
        load_manifest_text('{\n\t"apiVersion": "v1",\n\t"kind": "Pod",\n}\n', "pod.json")
    assert str(caught.value) == ("pod.json:4: invalid JSON: "
                                 "Expecting property name enclosed in double quotes")


def test_json_duplicate_keys_are_refused_with_lines():
    with pytest.raises(ManifestError) as caught:
        load_manifest_text('{\n"apiVersion": "v1",\n"kind": "Pod",\n"kind": "X"\n}', "p.json")
    assert caught.value.line == 4 and "duplicate key \"kind\"" in caught.value.message


def test_bytes_are_decoded_and_size_is_limited():
    assert load_manifest_text(b"apiVersion: v1\nkind: Pod\n", "m.yaml")[0].obj["kind"] == "Pod"
    with pytest.raises(ManifestError) as caught:
        load_manifest_text("a" * (MAX_BYTES + 1), "big.yaml")
    assert str(caught.value) == (
        f"big.yaml: file is {MAX_BYTES + 1} bytes, larger than 3 MiB ({MAX_BYTES} bytes), "
        "the most the Kubernetes API server accepts in one request; split it into "
        "several files")


# ------------------------------------------------------ files and directories

POD_A = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n"
POD_B = '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}}'


def test_load_file(tmp_path):
    (tmp_path / "pod.yaml").write_text(TWO_CONTAINER_POD)
    [m] = load_manifests(tmp_path / "pod.yaml")
    assert m.filename == str(tmp_path / "pod.yaml")
    assert m.obj["metadata"]["name"] == "two-containers"


def test_load_directory_sorted_not_recursive_no_hidden(tmp_path):
    (tmp_path / "b.json").write_text(POD_B)
    (tmp_path / "a.yml").write_text(POD_A + "---\n" + POD_A.replace("name: a", "name: a2"))
    (tmp_path / ".hidden.yaml").write_text(POD_A.replace("name: a", "name: hidden"))
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yaml").write_text(POD_A.replace("name: a", "name: c"))
    manifests = load_manifests(str(tmp_path))
    assert [m.obj["metadata"]["name"] for m in manifests] == ["a", "a2", "b"]
    assert [(m.filename.rsplit("/", 1)[1], m.line) for m in manifests] == [
        ("a.yml", 1), ("a.yml", 6), ("b.json", 1)]


def test_error_names_the_file_in_a_directory(tmp_path):
    (tmp_path / "a.yaml").write_text(POD_A)
    (tmp_path / "b.yaml").write_text(POD_A + "---\n- oops\n")
    with pytest.raises(ManifestError) as caught:
        load_manifests(tmp_path)
    assert (caught.value.filename, caught.value.line) == (str(tmp_path / "b.yaml"), 6)


@pytest.mark.parametrize("setup, message", [
    pytest.param(lambda d: d / "missing.yaml", "no such file or directory", id="missing-file"),
    pytest.param(lambda d: d, "no manifest files in this directory "
                 "(looked for *.yaml, *.yml and *.json)", id="empty-directory"),
])
def test_load_manifests_refuses(tmp_path, setup, message):
    source = setup(tmp_path)
    with pytest.raises(ManifestError) as caught:
        load_manifests(source)
    assert str(caught.value) == f"{source}: {message}"


def test_too_big_file_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_BYTES + 1))
    with pytest.raises(ManifestError, match="larger than 3 MiB"):
        load_manifests(big)


def test_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "pod.yaml"
    path.write_text(POD_A)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(manifests_module, "open", refuse, raising=False)
    with pytest.raises(ManifestError) as caught:
        load_manifests(path)
    assert str(caught.value) == f"{path}: cannot read file: Permission denied"


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_devices_and_pipes_are_refused_not_read_forever(tmp_path, special):
    if special == "fifo":
        special = tmp_path / "pod.yaml"
        os.mkfifo(special)
    with pytest.raises(ManifestError, match="not a regular file"):
        load_manifests(special)


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(POD_A.encode())))
    [m] = load_manifests("-")
    assert (m.filename, m.obj["metadata"]["name"]) == ("<stdin>", "a")


def test_manifest_is_a_plain_dataclass():
    m = Manifest({"kind": "Pod"}, "x.yaml", 3)
    assert m.line_of("spec.anything") == 3
