"""A starter with some of its TODO places filled from a solution file.

The starter marks each place the learner fills with `TODO(stage N)` inside
a function. splice() replaces the functions of the chosen stages by the
solution's functions of the same qualified name ("Store.get", "pick"
inside `class Scheduler` is "Scheduler.pick"), re-indented, so the tests
can build "the starter, solved up to stage N" without a second copy of
the starter's machinery.
"""
from __future__ import annotations

import ast
import re
import textwrap

TODO = re.compile(r"TODO\(stage (\d+)\)")


def functions(source: str) -> dict[str, ast.FunctionDef]:
    """Every function and method in source, by qualified name."""
    found: dict[str, ast.FunctionDef] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if isinstance(child, ast.FunctionDef):
                    found[name] = child
                visit(child, f"{name}.")
    visit(ast.parse(source), "")
    return found


def todo_stages(starter: str) -> dict[str, int]:
    """function name -> the stage its TODO belongs to."""
    lines = starter.splitlines()
    found = {}
    for name, node in functions(starter).items():
        marks = TODO.findall("\n".join(lines[node.lineno - 1:node.end_lineno]))
        if marks:
            found[name] = int(marks[0])
    return found


def splice(starter: str, solution: str, stages: set[int], instead: dict[str, str] | None = None) -> str:
    """starter, with the functions of `stages` taken from solution.
    instead: {starter's name: solution's name} to take a differently named
    function (such as a deliberately naive one) in a function's place."""
    instead = instead or {}
    lines = starter.splitlines()
    solved = functions(solution)
    solution_lines = solution.splitlines()
    mine = functions(starter)
    chosen = [name for name, stage in todo_stages(starter).items() if stage in stages]
    for name in sorted(chosen, key=lambda n: mine[n].lineno, reverse=True):   # bottom up: line numbers hold
        node, theirs_name = mine[name], instead.get(name, name)
        if theirs_name not in solved:
            raise KeyError(f"the solution has no {theirs_name}()")
        theirs = solved[theirs_name]
        body = textwrap.dedent("\n".join(solution_lines[theirs.lineno - 1:theirs.end_lineno]))
        body = body.replace(f"def {theirs.name}(", f"def {node.name}(", 1)
        lines[node.lineno - 1:node.end_lineno] = textwrap.indent(body, " " * node.col_offset).splitlines()
    return "\n".join(lines) + "\n"
