"""Chapters import only common/: a chapter's module never imports a module
that lives only in another chapter's folder or in tests/, and never puts
such a folder on sys.path. So does dashboard/, which watches them all. What two chapters share lives in common/, and
common/ imports itself in one direction only.

Read from the source (ast), nothing is run: every import statement of
every .py under 0N-*/, including those inside functions; every edit of
sys.path, whose argument must be built from __file__ (a path this test
cannot work out is a failure too, so that a reader can work it out).

Entry scripts find common/ through the virtualenv, whose .pth file
(`make venv`) names this checkout; none touches sys.path for it.
"""
from __future__ import annotations

import ast
import importlib.machinery
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# dashboard/ is held to the same rule: a client of every chapter, as kubectl
# is, it imports only common/ (the informers the controllers use).
CHAPTERS = sorted(p for p in ROOT.glob("0[1-9]-*") if p.is_dir()) + [ROOT / "dashboard"]
TESTS = ROOT / "tests"
SOURCES = sorted(p for chapter in CHAPTERS for p in chapter.rglob("*.py"))


def module_names(folder: Path) -> set[str]:
    """What `import NAME` could find when some directory under folder is on sys.path."""
    names = set()
    for path in folder.rglob("*"):
        if path.suffix == ".py":
            names.add(path.stem)
        elif path.is_dir() and any(path.glob("*.py")):
            names.add(path.name)
    return names


def outside_the_repository(name: str) -> bool:
    """The standard library or an installed package (also when a file of
    ours has the same name: 01-kubelet/streaming/websocket.py)."""
    if name in sys.stdlib_module_names:
        return True
    ours = {ROOT, *CHAPTERS, TESTS}
    installed = [p for p in sys.path if Path(p or ".").resolve() not in ours
                 and not any(Path(p or ".").resolve().is_relative_to(folder) for folder in (*CHAPTERS, TESTS))]
    return importlib.machinery.PathFinder.find_spec(name, installed) is not None


OWN = {chapter: module_names(chapter) for chapter in CHAPTERS}
ELSEWHERE = {chapter: set().union(*(OWN[c] for c in CHAPTERS if c != chapter), module_names(TESTS))
             for chapter in CHAPTERS}


def chapter_of(path: Path) -> Path:
    return ROOT / path.relative_to(ROOT).parts[0]


def imported_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level name) of every absolute import, wherever it stands."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def foreign_imports(path: Path) -> list[str]:
    """Imports that can only mean another chapter's module, or one of tests/."""
    chapter = chapter_of(path)
    problems = []
    for line, name in imported_names(ast.parse(path.read_text(), str(path))):
        if name == "common" or name in OWN[chapter] or name not in ELSEWHERE[chapter]:
            continue
        if outside_the_repository(name):
            continue
        problems.append(f"{path.relative_to(ROOT)}:{line}: imports {name}, which is not in {chapter.name}/ "
                        f"(move what two chapters share into common/)")
    return problems


# ---------------------------------------------------------------- sys.path edits

class Unknown(Exception):
    """An expression this test cannot turn into a path."""


def assignments(tree: ast.AST) -> dict[str, list[ast.expr]]:
    """Every value each plain name is given, and what a for loop runs it over."""
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) \
                and isinstance(node.iter, (ast.Tuple, ast.List)):
            values.setdefault(node.target.id, []).extend(node.iter.elts)
    return values


def paths_of(node: ast.expr, path: Path, names: dict[str, list[ast.expr]], depth: int = 0) -> list[Path]:
    """The directories an expression such as Path(__file__).resolve().parents[1] / "x" names."""
    if depth > 20:
        raise Unknown("too deep")
    again = lambda n: paths_of(n, path, names, depth + 1)  # noqa: E731
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return [path]
        if node.id in names:
            return [p for value in names[node.id] for p in again(value)]
    elif isinstance(node, ast.Attribute) and node.attr == "__file__" and isinstance(node.value, ast.Name) \
            and node.value.id == "common":
        return [ROOT / "common" / "__init__.py"]     # common/ is at the root, wherever the file is kept
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Path", "str") \
            and len(node.args) == 1:
        return again(node.args[0])
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("resolve", "absolute") and not node.args:
        return again(node.func.value)
    elif isinstance(node, ast.Attribute) and node.attr == "parent":
        return [p.parent for p in again(node.value)]
    elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "parents" and isinstance(node.slice, ast.Constant):
        return [p.parents[node.slice.value] for p in again(node.value.value)]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant):
        return [p / node.right.value for p in again(node.left)]
    elif isinstance(node, (ast.List, ast.Tuple)):
        return [p for element in node.elts for p in again(element)]
    raise Unknown(ast.unparse(node))


def is_sys_path(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "path" \
        and isinstance(node.value, ast.Name) and node.value.id == "sys"


def sys_path_edits(tree: ast.AST) -> list[tuple[int, ast.expr]]:
    """(line, what is added) for sys.path.insert/append/extend, sys.path[...] = and sys.path +=."""
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_sys_path(node.func.value):
            if node.func.attr in ("insert", "append", "extend") and node.args:
                edits.append((node.lineno, node.args[-1]))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) and is_sys_path(t.value)
                                                  for t in node.targets):
            edits.append((node.lineno, node.value))
        elif isinstance(node, ast.AugAssign) and is_sys_path(node.target):
            edits.append((node.lineno, node.value))
    return sorted(edits, key=lambda edit: edit[0])


def foreign_sys_path(path: Path) -> list[str]:
    """sys.path edits that reach beyond the file's own chapter (the
    repository's root, where common/ is, is allowed)."""
    tree = ast.parse(path.read_text(), str(path))
    names = assignments(tree)
    chapter = chapter_of(path)
    problems = []
    for line, added in sys_path_edits(tree):
        where = f"{path.relative_to(ROOT)}:{line}"
        try:
            targets = paths_of(added, path, names)
        except Unknown as unknown:
            problems.append(f"{where}: sys.path gets {unknown}, which this test cannot follow; "
                            f"build it from Path(__file__)")
            continue
        for target in targets:
            target = Path(target)
            if target != ROOT and chapter not in (target, *target.parents):
                problems.append(f"{where}: puts {target.relative_to(ROOT)} on sys.path, outside {chapter.name}/")
    return problems


# ---------------------------------------------------------------- modules loaded by path

# A script that loads another chapter's file by its path (a load_module(PATH,
# ...) helper, as two benchmarks once did) imports it all the same: what
# they share belongs in common/ (the benchmarks': common/tooling/bench_tools.py).

def path_loads(path: Path) -> set[tuple[str, str]]:
    """(this file, the other chapter's file) for each load_module(PATH, ...) reaching outside the chapter."""
    tree = ast.parse(path.read_text(), str(path))
    names = assignments(tree)
    chapter = chapter_of(path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and \
                getattr(node.func, "id", getattr(node.func, "attr", None)) == "load_module":
            for target in paths_of(node.args[0], path, names):
                if chapter not in Path(target).parents:
                    found.add((str(path.relative_to(ROOT)), str(Path(target).relative_to(ROOT))))
    return found


# ---------------------------------------------------------------- the tests

def test_a_chapter_imports_only_its_own_modules_and_common():
    problems = [problem for path in SOURCES for problem in foreign_imports(path)]
    assert not problems, "\n".join(problems)


def test_a_chapter_puts_only_its_own_folders_on_sys_path():
    problems = [problem for path in SOURCES for problem in foreign_sys_path(path)]
    assert not problems, "\n".join(problems)


def test_no_chapter_loads_another_chapters_file_by_its_path():
    loads = sorted(load for path in SOURCES for load in path_loads(path))
    assert not loads, f"{loads}: move what they share into common/"


def test_the_checks_see_what_they_look_for():
    """The checks are not vacuous: a file doing both things is caught."""
    bad = ROOT / "04-controllers" / "_probe_for_test_imports.py"
    source = ("import sys\nfrom pathlib import Path\n"
              "HERE = Path(__file__).resolve().parent\n"
              "sys.path.append(str(HERE.parent / '03-scheduler'))\n"
              "for p in (HERE.parent, HERE.parent / 'tests'):\n    sys.path.insert(0, str(p))\n"
              "sys.path.insert(0, sys.argv[1])\n"
              "def f():\n    from framework import Plugin\n    import apiserver_harness\n")
    tree = ast.parse(source)
    chapter = ROOT / "04-controllers"
    imports = [name for _, name in imported_names(tree)
               if name not in OWN[chapter] and name in ELSEWHERE[chapter]]
    assert imports == ["framework", "apiserver_harness"]
    names = assignments(tree)
    edits = sys_path_edits(tree)
    assert len(edits) == 3
    assert paths_of(edits[0][1], bad, names) == [ROOT / "03-scheduler"]
    assert paths_of(edits[1][1], bad, names) == [ROOT, ROOT / "tests"]
    with pytest.raises(Unknown):
        paths_of(edits[2][1], bad, names)


def test_the_virtualenv_finds_this_checkouts_common():
    """Entry scripts import common without touching sys.path: the venv's
    .pth file (`make venv`) puts the checkout on its path. Run from another
    folder, this interpreter must find *this* checkout's common/, or every
    component a test starts would run another copy's."""
    found = subprocess.run([sys.executable, "-c", "import common; print(common.__file__)"], cwd="/",
                           capture_output=True, text=True)
    assert found.returncode == 0, f"{sys.executable} cannot import common (run `make venv`):\n{found.stderr}"
    assert Path(found.stdout.strip()).resolve().parent == ROOT / "common", (
        f"{sys.executable} imports {found.stdout.strip()}, not this checkout's common/ "
        f"(its .pth names another checkout: run `make venv` here, or use this checkout's .venv)")


# ---------------------------------------------------------------- chapter 02's core stands alone

APISERVER = ROOT / "02-apiserver"
PLUGGED_IN = ("kubectl_compat", "extensions")     # register into hooks.py; only apiserver.py imports them


def plugged_in(path: Path) -> bool:
    return path.is_relative_to(APISERVER) and path.relative_to(APISERVER).parts[0] in PLUGGED_IN


CORE_FOR_CERTAIN = {"app.py", "writes.py", "rest.py", "decode.py"}


def core_modules() -> list[Path]:
    """The files of the first table of chapter 02's Build it: the core path.
    Found by position, so a paragraph added above it would hand every check
    here an empty list, which passes them all: it must hold the four the
    core cannot be without."""
    text = (APISERVER / "README.md").read_text()
    table = text.split("\n## Build it\n", 1)[1].split("\n\n", 2)[1]
    modules = [APISERVER / name for name in re.findall(r"^\| `([\w/.]+\.py)` \|", table, re.M)]
    assert CORE_FOR_CERTAIN <= {m.name for m in modules}, (
        f"the core table of 02-apiserver/README.md's Build it was not found where core_modules() looks: {modules}")
    return modules


def test_the_core_table_is_found():
    assert len(core_modules()) >= len(CORE_FOR_CERTAIN)


def _module_file(folder: Path, dotted: str) -> Path | None:
    path = folder.joinpath(*dotted.split("."))
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return path / "__init__.py" if (path / "__init__.py").is_file() else None


def imported_files(path: Path) -> set[Path]:
    """The repository's files that `path` imports, wherever the import stands
    (in a function too: it runs when called). A name found in none of the
    folders an API server module sees (its chapter's, the root with common/)
    is the standard library's or an installed package's, and is left out."""
    def found(folders, dotted: str) -> set[Path]:
        parts = dotted.split(".")
        return {f for i in range(1, len(parts) + 1) for folder in folders
                if (f := _module_file(folder, ".".join(parts[:i])))}
    files: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            files |= {f for alias in node.names for f in found((APISERVER, ROOT), alias.name)}
        elif isinstance(node, ast.ImportFrom):
            folders = (path.parents[node.level - 1],) if node.level else (APISERVER, ROOT)
            module = node.module or ""
            files |= found(folders, module) if module else set()
            files |= {f for alias in node.names
                      for f in found(folders, f"{module}.{alias.name}" if module else alias.name)}
    return files


def import_closure(start: Path) -> set[Path]:
    """start and every repository file it reaches through imports."""
    seen, pending = set(), [start]
    while pending:
        path = pending.pop()
        if path not in seen:
            seen.add(path)
            pending += imported_files(path) - seen
    return seen


def test_chapter_02s_core_never_reaches_what_plugs_into_it():
    """Registration, not imports: kubectl_compat/ and extensions/ register
    into hooks.py, and no core module reaches them, however indirectly."""
    problems = []
    for module in core_modules():
        reached = [p for p in import_closure(module) if plugged_in(p)]
        problems += [f"{module.name} reaches {p.relative_to(ROOT)}" for p in sorted(reached)]
    assert not problems, "\n".join(problems)


PLUGGED_IN_BY_NAME = re.compile(r"^(%s)(\.\w+)*$" % "|".join(PLUGGED_IN))


def imports_by_name(path: Path) -> list[str]:
    """String literals that name what plugs in, as importlib.import_module("kubectl_compat")
    or __import__ would take them: an import the statements above do not show."""
    return [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and PLUGGED_IN_BY_NAME.match(node.value)]


def test_chapter_02s_core_names_nothing_that_plugs_in_by_string():
    closure = set().union(*(import_closure(module) for module in core_modules()))
    problems = [found for path in sorted(closure) for found in imports_by_name(path)]
    assert not problems, "\n".join(problems)


def test_only_chapter_02s_entry_point_imports_what_plugs_in():
    importers = set()
    for path in APISERVER.rglob("*.py"):
        if plugged_in(path):
            continue                               # a package's own modules
        if any(plugged_in(f) for f in imported_files(path)):
            importers.add(path.relative_to(ROOT).as_posix())
    assert importers == {"02-apiserver/apiserver.py"}


def test_one_plug_in_never_imports_another():
    """kubectl_compat/ and extensions/ meet at hooks.py: OpenAPI publishes
    custom kinds' schemas through hooks.schema_sources, not by importing
    extensions/custom_resources.py (each must load without the other)."""
    crossing = [f"{path.relative_to(ROOT)} imports {other.relative_to(ROOT)}"
                for path in APISERVER.rglob("*.py") if plugged_in(path)
                for other in imported_files(path)
                if plugged_in(other) and other.relative_to(APISERVER).parts[0] != path.relative_to(APISERVER).parts[0]]
    assert not crossing, "\n".join(crossing)


def test_chapter_02s_core_with_what_it_imports_is_the_size_its_readme_states():
    """The README states the closure's ceiling ("at most N lines in M files"):
    what a learner who follows every import of the core ends up reading."""
    closure = set().union(*(import_closure(module) for module in core_modules()))
    lines = sum(len(p.read_text().splitlines()) for p in closure)
    text = " ".join((APISERVER / "README.md").read_text().split())
    stated = re.search(r"at most ([\d,]+) lines in (\d+) files \(tests/test_imports\.py\)", text)
    assert stated, "02-apiserver/README.md no longer states the core's import closure"
    ceiling, files = int(stated[1].replace(",", "")), int(stated[2])
    assert lines <= ceiling and len(closure) <= files, (
        f"the core and what it imports are {lines:,} lines in {len(closure)} files; the README says at most "
        f"{ceiling:,} in {files}: {sorted(str(p.relative_to(ROOT)) for p in closure)}")


def test_the_closure_follows_every_kind_of_import():
    probe = APISERVER / "kubectl_compat" / "__init__.py"
    reached = {p.relative_to(ROOT).as_posix() for p in imported_files(probe)}
    assert {"02-apiserver/kubectl_compat/patches.py", "02-apiserver/kubectl_compat/printers.py"} <= reached
    closure = {p.relative_to(ROOT).as_posix() for p in import_closure(probe)}
    assert "02-apiserver/api_errors.py" in closure                                    # import x, followed
    entry = {p.relative_to(ROOT).as_posix() for p in import_closure(APISERVER / "apiserver.py")}
    assert "02-apiserver/extensions/custom_resources.py" in entry                     # from package import x
    assert "common/model/field_errors.py" in closure                                  # from common.x import y
