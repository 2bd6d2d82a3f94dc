"""Execute a chapter notebook with papermill, its parameters checked first.

Papermill only warns about a parameter the notebook does not declare and then
runs the notebook's defaults, which for a misspelt ``scael=smoke`` means hours
of the default tier. Here every given name must be one the notebook's
``parameters`` cell assigns; otherwise nothing runs and the error lists them.

``python -m fedlib.execute notebooks/ppsgd.py out.ipynb -p scale smoke -p seed 3``
"""

from __future__ import annotations

import argparse
import ast
import difflib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


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


def execute(source: str | Path, output: str | Path, parameters: Mapping[str, Any],
            *, cwd: str | Path | None = None) -> None:
    """Check ``parameters`` against the notebook, then execute it into ``output``."""
    import jupytext
    import papermill

    check_parameters(source, parameters)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    converted = output.with_name(f"{Path(source).stem}.input.ipynb")
    jupytext.write(jupytext.read(source), converted)
    try:
        papermill.execute_notebook(
            str(converted), str(output), parameters=dict(parameters), kernel_name="python3",
            cwd=str(cwd) if cwd is not None else None, log_output=False, progress_bar=False,
            request_save_on_cell_execute=True)
    finally:
        converted.unlink(missing_ok=True)
    fold_code(output)


def fold_code(notebook: str | Path) -> None:
    """Fold every code cell of an executed chapter behind the book's "show code"
    toggle (tag ``hide-input``), parameters and imports included, so that a page
    leads with prose, figures and claims; a cell tagged ``show-input`` stays open."""
    import nbformat

    from fedlib.paths import atomic_path

    book = nbformat.read(str(notebook), as_version=4)
    for cell in book.cells:
        if cell.cell_type != "code":
            continue
        tags = list(cell.metadata.get("tags", []))
        if "show-input" not in tags and "hide-input" not in tags:
            cell.metadata["tags"] = [*tags, "hide-input"]
    with atomic_path(notebook) as tmp:
        nbformat.write(book, str(tmp))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="notebook, e.g. notebooks/ppsgd.py")
    parser.add_argument("output", type=Path, help="the executed notebook (.ipynb)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"), help="a notebook parameter")
    parser.add_argument("--cwd", type=Path, default=None, help="working directory of the run")
    parser.add_argument("--note", default=None, metavar="TEXT",
                        help="write a page saying TEXT in place of the stored-runs rendering "
                        "of this chapter (a build that does not render it)")
    parser.add_argument("--published-only", action="store_true",
                        help="use cached and published runs only (FEDLIB_COMPUTE=0); when some "
                        "are missing, write <claims_dir>/<paper>.missing saying so instead "
                        "of failing")
    args = parser.parse_args(argv)
    parameters = {name: parse_value(value) for name, value in args.parameter}
    try:
        check_parameters(args.source, parameters)
    except ValueError as error:
        print(str(error), file=sys.stderr)
        return 2
    if args.note is not None:
        write_tier_note(args.source, args.output, args.note)
        return 0
    if not args.published_only:
        execute(args.source, args.output, parameters, cwd=args.cwd)
        return 0
    return execute_published(args.source, args.output, parameters, cwd=args.cwd)


def execute_published(source: str | Path, output: str | Path, parameters: Mapping[str, Any],
                      *, cwd: str | Path | None = None) -> int:
    """Render a chapter from stored runs only. When some runs are neither cached nor
    published, the chapter's claims of that tier are not run: ``<claims_dir>/<paper>.missing``
    says why (and an older claims file of that tier is removed); otherwise that marker is
    removed. Other failures fail."""
    import os

    from papermill.exceptions import PapermillExecutionError

    from fedlib.paths import atomic_path, claims_dir, resolve

    folder = (resolve(parameters["claims_dir"]) if str(parameters.get("claims_dir", "")).strip()
              else claims_dir())
    paper = Path(source).stem
    marker, claims = folder / f"{paper}.missing", folder / f"{paper}.json"
    previous = os.environ.get("FEDLIB_COMPUTE")
    os.environ["FEDLIB_COMPUTE"] = "0"  # the kernel inherits it
    try:
        execute(source, output, parameters, cwd=cwd)
    except PapermillExecutionError as error:
        if error.ename != "MissingRunsError":
            raise
        folder.mkdir(parents=True, exist_ok=True)
        claims.unlink(missing_ok=True)
        reason = str(error.evalue).split(". ", 1)[0].strip()
        with atomic_path(marker) as tmp:
            tmp.write_text(reason + "\n")
        write_tier_note(source, output, (
            f"{reason}: its claims at this tier are reported as not run. Compute them with "
            f"`.venv/bin/python -m fedlib.execute notebooks/{paper}.py out.ipynb -p scale "
            f"{parameters.get('scale', 'paper')}` (resumable; finished runs are kept), then "
            "`make publish SCALE=paper` to keep them in the repository."))
        print(f"{paper}: not rendered from stored runs: {error.evalue}", file=sys.stderr)
        return 0
    finally:
        if previous is None:
            os.environ.pop("FEDLIB_COMPUTE", None)
        else:
            os.environ["FEDLIB_COMPUTE"] = previous
    marker.unlink(missing_ok=True)
    label_tier_page(output, str(parameters.get("scale", "paper")))
    Path(output).with_suffix(".md").unlink(missing_ok=True)
    return 0


def _chapter_title(source: str | Path) -> str:
    """The first level-one heading of a chapter notebook."""
    import jupytext

    for cell in jupytext.read(source).cells:
        text = cell.source.lstrip()
        if cell.cell_type == "markdown" and text.startswith("# "):
            return text.partition("\n")[0][2:].strip()
    return Path(source).stem


def write_tier_note(source: str | Path, output: str | Path, text: str) -> None:
    """Put a page saying ``text`` where the stored-runs rendering of a chapter would be
    (``output`` with the suffix ``.md``), and remove any older rendering."""
    from fedlib.paths import atomic_path

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)
    page = output.with_suffix(".md")
    with atomic_path(page) as tmp:
        tmp.write_text(f"# {_chapter_title(source)}: the paper tier\n\n{text}\n")


def label_tier_page(notebook: str | Path, scale: str) -> None:
    """Make an executed chapter a page of its own beside the chapter at the book's tier:
    its title names the tier, a note under it says what the page is, and its labels (of
    figures, tables and sections) and the references to them get a ``<tier>-`` prefix
    (Sphinx labels are book-wide)."""
    import re

    import nbformat

    from fedlib.paths import atomic_path

    book = nbformat.read(str(notebook), as_version=4)
    markdown = [c for c in book.cells if c.cell_type == "markdown"]
    definition = re.compile(r"^(?::name:\s*(\S+)|\((\S+)\)=)\s*$", re.MULTILINE)
    labels = {figure or section for cell in markdown
              for figure, section in definition.findall(cell.source)}
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(labels))) + r")(?![\w-])")
    for cell in markdown:
        if labels:
            cell.source = pattern.sub(lambda m: f"{scale}-{m.group(1)}", cell.source)
    for cell in markdown:
        if cell.source.lstrip().startswith("# "):
            title, _, rest = cell.source.lstrip().partition("\n")
            note = (f"\n\n```{{note}}\nThis page is the chapter executed at the **{scale} "
                    "tier** from stored runs (published in the repository or cached on the "
                    "machine that built the book; see the box at its end for where they "
                    "come from). Its figures, tables and verdicts are of that tier. Its "
                    "prose was written beside the book's own tier: where it quotes a number, "
                    "that number is of the main chapter page.\n```\n")
            cell.source = f"{title}: the {scale} tier{note}{rest}"
            break
    with atomic_path(notebook) as tmp:
        nbformat.write(book, str(tmp))


if __name__ == "__main__":
    raise SystemExit(main())
