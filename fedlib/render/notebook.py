"""A chapter notebook's parameters: those it declares (its parameters cell), their
meanings, the checks of values given on the command line, and its claims folder."""

from __future__ import annotations

import ast
import difflib
import os
from collections.abc import Mapping
from decimal import Decimal
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
    """Raise a ValueError naming every given parameter the notebook does not declare, or
    the first given value the notebook cannot take (:func:`value_problem`)."""
    declared = declared_parameters(source)
    unknown = [name for name in given if name not in declared]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, declared, n=1)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ValueError(
            f"{Path(source).name} has no parameter {', '.join(hints)}; its parameters are "
            f"{', '.join(declared)}. Nothing was run.")
    for name, value in plain_parameters(given).items():
        problem = value_problem(name, value, declared[name])
        if problem:
            raise ValueError(f"{Path(source).name}: {problem}. Nothing was run.")


PASSED_AS_THEY_ARE = (type(None), str, bool, int, float, list, dict)
"""The values papermill writes into a notebook as they are (:func:`plain_parameters`
turns numpy scalars and paths into these first); it writes any other value (a tuple, a
:class:`~decimal.Decimal`, a date) as text, or fails on it."""


def value_problem(name: str, value: Any, default: Any) -> str:
    """What is wrong with ``value`` for the notebook parameter ``name`` whose default is
    ``default`` (empty when nothing is), with the fix: a value papermill cannot hand to
    the notebook as it is (not one of :data:`PASSED_AS_THEY_ARE`, in a list or dict
    too), or text or a boolean where the notebook takes a number (its default is one)."""
    example = f"-p {name} {default!r}" if isinstance(default, int | float | str) \
        and not isinstance(default, bool) else f"{name}={default!r}"
    odd = _not_passed(value)
    if odd is not None:
        inside = "" if odd is value else f" (in {name}={value!r})"
        said = f"{name}={odd!r}{inside} is"
        if isinstance(odd, Decimal) and odd.is_snan():
            return (f"{said} a signalling NaN (a decimal.Decimal), not a number, and no "
                    f"notebook parameter takes it; pass a plain int or float, e.g. {example}")
        kind = type(odd)
        module = "" if kind.__module__ == "builtins" else f"{kind.__module__}."
        return (f"{said} a {module}{kind.__qualname__}, which papermill does not hand to a "
                "notebook as it is (it writes it as text); pass a plain int or float (or a "
                f"str, bool, None, list or dict), e.g. {example}")
    if isinstance(default, int | float) and not isinstance(default, bool):
        if isinstance(value, str):
            return (f"{name}={value!r} is text, but the notebook's {name} is a number "
                    f"(default {default!r}): pass a number, e.g. {example} (-p reads 10, "
                    "0.5, 1e-5 and inf as numbers)")
        if isinstance(value, bool):
            return (f"{name}={value!r} is a boolean, but the notebook's {name} is a number "
                    f"(default {default!r}): pass a number, e.g. {example}")
    return ""


def _not_passed(value: Any) -> Any:
    """The first part of ``value`` papermill does not pass as it is, or None."""
    if not isinstance(value, PASSED_AS_THEY_ARE):
        return value
    parts = value.values() if isinstance(value, dict) else value if isinstance(value, list) \
        else ()
    return next((odd for part in parts if (odd := _not_passed(part)) is not None), None)


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
    writes a value it does not know, such as ``numpy.int64(3)``, as the string ``'3'``)
    and every path as its text (which papermill quotes as a string)."""
    def plain(value: Any) -> Any:
        if type(value).__module__ == "numpy" and hasattr(value, "item") \
                and getattr(value, "ndim", None) == 0:
            return value.item()
        if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
            return os.fspath(value)
        return value

    return {name: plain(value) for name, value in parameters.items()}


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
