"""fedlib's tree reads as its data flow, checked from the code's own imports (every import
statement, those inside functions included).

Concerns, and what each may import (besides the standard library and other packages):

- base (``fedlib``, ``paths``, ``checks``, ``limits``, ``tiers``): only the base;
- ``data/``: the base;
- mechanics (``nn/``, ``privacy/``, ``checkpoints``): the base, data, mechanics;
- runs (``runs/``, and ``sweeps``, the executor): the base and runs; never a paper or a
  judgement or a page (a runner is imported by the name a manifest records, at run time);
- ``verdicts/``: the base, runs, verdicts and the papers' registry;
- ``render/`` (what a chapter does around its content): the base, runs, verdicts, render
  and the papers' registry (``fedlib.papers``);
- science (``papers/<id>/``, ``frontier/``): the computing roles (algorithms, experiment
  runners) the base, data, mechanics, science and the executor; the presentation roles
  (claims, read-outs, notes, figures, the paper tier) everything above too.

No module is part of an import circle, and no run key covers a module of runs, verdicts
or render (editing how runs are stored, judged or shown never makes a run stale).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fedlib
from fedlib.runs.keys import code_files

PACKAGE = Path(fedlib.__file__).resolve().parent

BASE = {"fedlib", "fedlib.paths", "fedlib.checks", "fedlib.limits", "fedlib.tiers"}
TOP_LEVEL = {"__init__.py", "paths.py", "checks.py", "limits.py", "tiers.py", "sweeps.py",
             "checkpoints.py", "bench.py"}
"""The files the package's top folder may hold: the base, the executor and the checkpoints
that run keys hash under these names (moving them would make every run stale), and the
benchmark tool."""
FOLDERS = {"data", "nn", "privacy", "papers", "frontier", "runs", "verdicts", "render"}

PRESENTATION_ROLES = {"claims", "readouts", "notes", "figures", "paper_tier", "studies", "tuned",
                      "extension", "level_extension", "noise_probe", "tables", "readings"}
"""A paper folder's modules that present results, and the protocols that plan a chapter's
runs from what it reads (``tuned``, ``extension``, ``level_extension``); the rest compute
them."""


def concern(module: str) -> str:
    """The concern a fedlib module belongs to."""
    if module in BASE:
        return "base"
    parts = module.split(".")
    if module == "fedlib.papers":
        return "registry"
    if module == "fedlib.sweeps" or parts[1] == "runs":
        return "runs"
    if module == "fedlib.checkpoints" or parts[1] in ("nn", "privacy"):
        return "mechanics"
    if module == "fedlib.bench":
        return "tool"
    if parts[1] in ("papers", "frontier"):
        return "presentation" if parts[-1] in PRESENTATION_ROLES else "computing"
    return parts[1]  # data, verdicts, render


MAY_IMPORT = {
    "base": {"base"},
    "data": {"base", "data"},
    "mechanics": {"base", "data", "mechanics"},
    "runs": {"base", "runs"},
    "verdicts": {"base", "runs", "verdicts", "registry"},
    "render": {"base", "runs", "verdicts", "render", "registry"},
    "registry": {"base", "registry"},
    "computing": {"base", "data", "mechanics", "computing", "runs", "registry"},
    "presentation": {"base", "data", "mechanics", "computing", "presentation", "runs",
                     "verdicts", "render", "registry"},
    "tool": {"base", "data", "mechanics", "computing", "runs", "registry"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> set[str]:
    """The fedlib modules ``module`` imports (a name imported from a package is the
    submodule of that name where there is one, else the package)."""
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "fedlib"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "fedlib":
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES
                          else base)
    return {name for name in found if name in MODULES and name != module}


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of ``graph`` with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_no_import_circles() -> None:
    assert _circles(GRAPH) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_the_top_folder_holds_the_base_and_one_folder_per_concern() -> None:
    files = {p.name for p in PACKAGE.glob("*.py")}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert files <= TOP_LEVEL, f"not a concern of the top folder: {sorted(files - TOP_LEVEL)}"
    assert folders == FOLDERS


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_what_its_concern_may(module: str) -> None:
    mine = concern(module)
    wrong = sorted(f"{other} ({concern(other)})" for other in GRAPH[module]
                   if concern(other) not in MAY_IMPORT[mine])
    assert not wrong, f"{module} ({mine}) imports {wrong}"


def test_a_paper_imports_no_other_paper() -> None:
    crossing = []
    for module, imported in GRAPH.items():
        parts = module.split(".")
        if parts[:2] != ["fedlib", "papers"] or len(parts) < 4:
            continue
        for other in imported:
            theirs = other.split(".")
            if theirs[:2] == ["fedlib", "papers"] and len(theirs) > 2 and theirs[2] != parts[2]:
                crossing.append(f"{module} -> {other}")
    assert not crossing


RUNNERS = ["fedlib.frontier.experiment"] + [
    f"fedlib.papers.{paper}.experiment" for paper in ("dpditto", "hu2020", "padpfl", "pfa",
                                                     "ppsgd")]


@pytest.mark.parametrize("runner", RUNNERS)
def test_no_run_key_covers_how_runs_are_stored_judged_or_shown(runner: str) -> None:
    hashed = code_files(runner)
    assert hashed and "__init__.py" in hashed
    assert not [f for f in hashed if f.split("/")[0] in ("runs", "verdicts", "render")]
