"""common/ is organised by what it is, in layers a reader can follow.

    common/model/    the object model: manifests, defaults, validation,
                     quantities, selectors, names (no I/O, no clients)
    common/client/   the client side: the API client, kubeconfig, the
                     informer, the work queue, events, leader election
    common/tooling/  what demos, stages, benchmarks and tests use: the
                     local cluster, processes, ports, polling, snippets
    common/*.py      three small helpers every program uses: log, times,
                     addresses

Each layer imports only the ones before it (the top-level helpers, then
model, then client, then tooling), and no module imports itself back in a
circle. Read from the source (ast); nothing is run.
"""
from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMON = ROOT / "common"
LAYERS = ["", "model", "client", "tooling"]      # "" is common/'s own top level
TOP_LEVEL = {"__init__", "log", "times", "addresses"}


def dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


MODULES = {dotted(p): p for p in COMMON.rglob("*.py")}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else ""


def imports_of(path: Path) -> set[str]:
    """The common modules a file imports (a package's module named in
    `from common.model import names` counts as that module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("common"):
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                found.add(inner if inner in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("common.")}
    return {m for m in found if m in MODULES and m != "common"}


def test_every_module_has_its_place():
    """A new helper goes into the layer it belongs to, not beside the three."""
    stray = [dotted(p) for p in COMMON.glob("*.py") if p.stem not in TOP_LEVEL]
    assert not stray, f"put these into common/model, common/client or common/tooling: {stray}"
    folders = {p.name for p in COMMON.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(LAYERS[1:]), f"common/ has folders {sorted(folders)}; the layers are {LAYERS[1:]}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_layer_imports_only_the_layers_before_it(module):
    mine = LAYERS.index(layer_of(module))
    later = sorted(m for m in imports_of(MODULES[module]) if LAYERS.index(layer_of(m)) > mine)
    assert not later, (f"{module} ({layer_of(module) or 'top level'}) imports {later}, "
                       f"from a later layer of {LAYERS}: move the shared piece down, or this module up")


def test_common_has_no_import_cycles():
    graph = {module: imports_of(path) for module, path in MODULES.items()}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f"common/ imports itself in a circle: {' -> '.join(error.args[1])}")


def test_the_readme_lists_every_module_where_it_is():
    """common/README.md is the map: every module appears, at its path."""
    readme = (COMMON / "README.md").read_text()
    missing = [str(p.relative_to(COMMON)) for p in COMMON.rglob("*.py")
               if p.stem != "__init__" and f"]({p.relative_to(COMMON)})" not in readme]
    assert not missing, f"common/README.md does not list: {missing}"
