"""A chapter notebook's parameters: those it declares (its parameters cell), their
meanings, the checks of values given on the command line, and its claims folder."""

from __future__ import annotations

import ast
import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedlib.paths import claims_dir as paths_claims_dir
from fedlib.paths import resolve


def declared_parameters(source: str | Path) -> dict[str, Any]:
    """The names the notebook's cell tagged ``parameters`` assigns, with their defaults."""
    import jupytext

    notebook = jupytext.read(source)
    cells = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{source}: a chapter notebook needs exactly one cell tagged "
                         f"'parameters', found {len(cells)}")
    found: dict[str, Any] = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets
                       for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
            values = (node.value.elts if isinstance(node.value, ast.Tuple)
                      and len(node.value.elts) == len(targets) else [node.value] * len(targets))
            for target, value in zip(targets, values, strict=True):
                if isinstance(target, ast.Name):
                    try:
                        found[target.id] = ast.literal_eval(value)
                    except ValueError:
                        found[target.id] = None
    return found


def parameter_notes(source: str | Path) -> list[tuple[str, str, str]]:
    """(name, default, meaning) of every parameter: the meaning is the comment the
    ``parameters`` cell writes after the assignment."""
    import io
    import tokenize

    import jupytext

    notebook = jupytext.read(source)
    cell = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    comments = {tok.start[0]: tok.string.lstrip("# ").strip()
                for tok in tokenize.generate_tokens(io.StringIO(cell.source).readline)
                if tok.type == tokenize.COMMENT}
    notes = []
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign):
            names = [n.id for t in node.targets
                     for n in (t.elts if isinstance(t, ast.Tuple) else [t])
                     if isinstance(n, ast.Name)]
            default = ast.get_source_segment(cell.source, node.value) or ""
            for name in names:
                notes.append((name, default, comments.get(node.lineno, "")))
    return notes


def check_parameters(source: str | Path, given: Mapping[str, Any]) -> None:
    """Raise a ValueError naming every given parameter the notebook does not declare."""
    declared = declared_parameters(source)
    unknown = [name for name in given if name not in declared]
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, declared, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ValueError(
        f"{Path(source).name} has no parameter {', '.join(hints)}; its parameters are "
        f"{', '.join(declared)}. Nothing was run.")


def parse_value(text: str) -> Any:
    """A command-line value as papermill's ``-p`` reads it: int, float, bool, None or str."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(text, text)


def plain_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` with every numpy scalar as the Python value it holds (papermill
    writes a value it does not know, such as ``numpy.int64(3)``, as the string ``'3'``)."""
    return {name: value.item() if type(value).__module__ == "numpy"
            and hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value
            for name, value in parameters.items()}


def writable_claims_folder(claims_dir: object) -> Path:
    """The folder ``claims_dir`` names (empty: the book's claims folder), created and
    checked writable, or a ValueError naming it and what to pass instead."""
    if not isinstance(claims_dir, str | os.PathLike) or isinstance(os.fspath(claims_dir), bytes):
        raise ValueError(
            f"claims_dir={claims_dir!r} is not a folder path (it is of type "
            f"{type(claims_dir).__name__}); pass a string: a folder, relative to the "
            "project root (e.g. -p claims_dir book/generated/claims), or '' for the book's "
            "claims folder. A folder named 0, None or True is written as a path, e.g. ./0, "
            "since -p reads those words as values")
    text = os.fspath(claims_dir)
    folder = resolve(text) if text.strip() else paths_claims_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"claims_dir={text!r} cannot be created ({error}); "
                         "pass a folder this notebook may write to") from error
    _check_writable(folder, text)
    return folder


def _check_writable(folder: Path, given: str) -> None:
    """Write a file into ``folder`` and remove it, or raise a ValueError saying the folder
    cannot be written."""
    import tempfile

    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".write-check-")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise ValueError(f"claims_dir={given!r} ({folder}) cannot be written "
                         f"({error.strerror or error}); pass a folder this notebook may "
                         "write to, or make this one writable") from error
