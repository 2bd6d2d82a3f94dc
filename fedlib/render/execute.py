"""Execute a chapter notebook with papermill, its parameters checked first.

Papermill only warns about a parameter the notebook does not declare and then
runs the notebook's defaults, which for a misspelt ``scael=smoke`` means hours
of the default tier. Here every given name must be one the notebook's
``parameters`` cell assigns; otherwise nothing runs and the error lists them.

The notebook runs into ``<output>.partial.ipynb`` beside the output, renamed to
the output once it has finished: a run killed midway never leaves a notebook at
the output that looks complete. A run that fails or is interrupted leaves its
notebook at the output marked as unfinished (papermill's error banner, or one
saying it was interrupted), so that the scorecard sees the failed attempt.

``python -m fedlib.render.execute notebooks/ppsgd.py out.ipynb -p scale smoke -p seed 3``
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedlib.render.notebook import check_parameters, parse_value, plain_parameters
from fedlib.runs.errors import DEBUG_FLAG, DEBUG_HELP, run_command


def partial_path(output: str | Path) -> Path:
    """Where a notebook runs before it is renamed to ``output``."""
    output = Path(output)
    return output.with_name(f"{output.stem}.partial.ipynb")


def execute(source: str | Path, output: str | Path, parameters: Mapping[str, Any],
            *, cwd: str | Path | None = None) -> None:
    """Check ``parameters`` against the notebook, then execute it into ``output``: run
    into :func:`partial_path` and renamed to ``output`` when it has finished; a failed
    or interrupted run is moved to ``output`` marked as unfinished (:func:`unfinished`)."""
    import jupytext
    import papermill

    check_parameters(source, parameters)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    running = partial_path(output)
    running.unlink(missing_ok=True)
    converted = output.with_name(f"{Path(source).stem}.input.ipynb")
    jupytext.write(jupytext.read(source), converted)
    try:
        papermill.execute_notebook(
            str(converted), str(running), parameters=plain_parameters(parameters),
            kernel_name="python3", cwd=str(cwd) if cwd is not None else None,
            log_output=False, progress_bar=False, request_save_on_cell_execute=True)
        fold_code(running)
    except BaseException as error:
        _keep_unfinished(running, output, error)
        raise
    finally:
        converted.unlink(missing_ok=True)
    os.replace(running, output)


UNFINISHED_TAG = "fedlib-unfinished"
"""Tag of the cell that says, at the top of a notebook, that its run did not finish."""


def unfinished(notebook: Any) -> bool:
    """True when an executed notebook (a ``NotebookNode``) says its run did not finish:
    papermill recorded an exception, or :func:`execute` marked it interrupted."""
    if notebook.metadata.get("papermill", {}).get("exception"):
        return True
    return any(UNFINISHED_TAG in c.metadata.get("tags", []) for c in notebook.cells[:1])


def _keep_unfinished(running: Path, output: Path, error: BaseException) -> None:
    """Move the notebook of a run that did not finish from ``running`` to ``output``,
    marked as unfinished; a notebook that cannot be read (its save was cut short, e.g. on
    a full disk) is left where it is, the output untouched, and a line on stderr says so
    (the scorecard refuses to read claims while a build's notebook is in that state:
    :func:`fedlib.verdicts.claims.checked_claims`)."""
    import nbformat

    from fedlib.paths import atomic_path
    from fedlib.render.markdown import markdown_code

    try:
        book = read_executed(running)
    except (OSError, ValueError) as unreadable:
        if running.exists():
            print(f"{unreadable} It cannot be marked as unfinished, and is left as it is.",
                  file=sys.stderr)
        return
    if not unfinished(book):
        book.metadata.setdefault("papermill", {})["exception"] = True
        book.cells.insert(0, nbformat.v4.new_markdown_cell(
            f"**This run did not finish** ({markdown_code(type(error).__name__)}): the "
            "cells below it did not all run, and nothing in it is a result. Rerun the "
            "chapter.", metadata={"tags": [UNFINISHED_TAG]}))
    with atomic_path(output) as tmp:
        nbformat.write(book, str(tmp))
    running.unlink(missing_ok=True)


def read_executed(notebook: str | Path) -> Any:
    """An executed notebook (``NotebookNode``), or a ValueError naming the file when it is
    damaged (cut short while being written, or not a notebook) and saying how to get it
    again."""
    import nbformat

    try:
        return nbformat.read(str(notebook), as_version=4)
    except (ValueError, AttributeError, KeyError, TypeError, nbformat.ValidationError) as error:
        reason = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        raise ValueError(
            f"{notebook} is not a readable notebook ({reason}): it is damaged, or was cut "
            f"short while being written. Rerun the chapter that writes it "
            f"({_rerun_hint(Path(notebook))}); nothing was read from it.") from error


def _rerun_hint(notebook: Path) -> str:
    """The command that writes an executed chapter notebook again."""
    from fedlib.paths import PROJECT_ROOT

    chapter = notebook.name.split(".", 1)[0]
    if (PROJECT_ROOT / "notebooks" / f"{chapter}.py").is_file():
        return (f"make rebuild-all, or .venv/bin/python -m fedlib.render.execute "
                f"notebooks/{chapter}.py {notebook}")
    return "make rebuild-all, or .venv/bin/python -m fedlib.render.execute with its source"


def fold_code(notebook: str | Path) -> None:
    """Fold every code cell of an executed chapter behind the book's "show code"
    toggle (tag ``hide-input``), parameters and imports included, so that a page
    leads with prose, figures and claims; a cell tagged ``show-input`` stays open."""
    import nbformat

    from fedlib.paths import atomic_path

    book = read_executed(notebook)
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
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)
    parser.add_argument("--page", choices=PAGES, default=None,
                        help="label the page as the one leading its chapter (lead: the paper "
                        "tier rendered beside the build's tier, its labels prefixed with the "
                        "tier; the default with --published-only and --note) or as the "
                        "chapter at the build's tier (tier: its title names the tier); "
                        "either way its opening says which tier it is, and every figure and "
                        "table caption carries a tier badge")
    args = parser.parse_args(argv)
    parameters = {name: parse_value(value) for name, value in args.parameter}
    try:
        check_parameters(args.source, parameters)
    except ValueError as error:
        print(str(error), file=sys.stderr)
        return 2
    if args.note is not None:
        from fedlib.render.markdown import markdown_text

        write_tier_note(args.source, args.output, markdown_text(args.note),
                        scale=str(parameters.get("scale", "paper")))
        return 0
    if not args.published_only:
        execute(args.source, args.output, parameters, cwd=args.cwd)
        if args.page is not None:
            label_tier_page(args.output, str(parameters.get("scale", "paper")),
                            lead=args.page == "lead", chapter=args.source.stem)
        return 0
    return execute_published(args.source, args.output, parameters, cwd=args.cwd,
                             lead=args.page != "tier")


PAGES = ("lead", "tier")
"""The two pages of a chapter: ``lead``, the paper tier rendered from stored runs, which
opens the chapter, and ``tier``, the chapter at the build's own tier, after it."""


RENDER_GAPS = {
    "MissingRunsError": "its runs are not all stored",
    "DatasetUnavailableError": "a dataset it reads is not available where the site was built",
}
"""The errors a render from stored runs reports on the page instead of failing, with what
each means: runs that are neither cached nor published, a dataset (read to describe the
data) that cannot be had offline or downloaded."""


def execute_published(source: str | Path, output: str | Path, parameters: Mapping[str, Any],
                      *, cwd: str | Path | None = None, lead: bool = True) -> int:
    """Render a chapter from stored runs only, and label it (:func:`label_tier_page`: the
    page leading its chapter when ``lead``, else the chapter at the build's tier). When
    some runs are neither cached nor published, the chapter's claims of that tier are not
    run: ``<claims_dir>/<paper>.missing`` says why (and an older claims file of that tier
    is removed), and the page says so in place of the chapter; otherwise that marker is
    removed. Every sweep whose runs could not all be had, a part the page left out, is
    recorded in ``<claims_dir>/<paper>.gaps.jsonl`` (:mod:`fedlib.runs.gaps`), written
    anew by each render. Other failures fail."""
    from papermill.exceptions import PapermillExecutionError

    from fedlib.paths import atomic_path
    from fedlib.render.markdown import markdown_code, markdown_text
    from fedlib.render.notebook import writable_claims_folder
    from fedlib.runs.gaps import GAPS_LOG, GAPS_SUFFIX

    folder = writable_claims_folder(parameters.get("claims_dir", ""))
    paper = Path(source).stem
    marker, claims = folder / f"{paper}.missing", folder / f"{paper}.json"
    gaps = folder / f"{paper}{GAPS_SUFFIX}"
    gaps.write_text("")  # no record: every sweep of the render had its runs
    previous = {name: os.environ.get(name) for name in ("FEDLIB_COMPUTE", GAPS_LOG)}
    os.environ["FEDLIB_COMPUTE"] = "0"  # the kernel inherits it
    os.environ[GAPS_LOG] = str(gaps.resolve())
    try:
        execute(source, output, parameters, cwd=cwd)
    except PapermillExecutionError as error:
        if error.ename not in RENDER_GAPS:
            raise
        claims.unlink(missing_ok=True)
        reason = str(error.evalue).split(". ", 1)[0].strip()
        with atomic_path(marker) as tmp:
            tmp.write_text(reason + "\n")
        scale = str(parameters.get("scale", "paper"))
        command = (f".venv/bin/python -m fedlib.render.execute notebooks/{paper}.py out.ipynb "
                   f"-p scale {scale}")
        if error.ename == "MissingRunsError":
            remedy = (f"Compute them with {markdown_code(command)} (resumable; finished runs "
                      f"are kept), then {markdown_code(f'make publish SCALE={scale}')} to "
                      "keep them in the repository.")
        else:
            remedy = ("Build the site where the dataset is available (see the data "
                      "documentation of the repository), or point `FEDLIB_DATA_MIRROR` at a "
                      "copy of it.")
        write_tier_note(source, output, (
            f"The {markdown_text(scale)} tier of this chapter is not shown: "
            f"{RENDER_GAPS[error.ename]} ({markdown_text(reason)}), and its claims at this "
            f"tier are reported as not run. {remedy}"), scale=scale)
        print(f"{paper}: not rendered from stored runs: {error.evalue}", file=sys.stderr)
        return 0
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    marker.unlink(missing_ok=True)
    label_tier_page(output, str(parameters.get("scale", "paper")), lead=lead, chapter=paper)
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


def write_tier_note(source: str | Path, output: str | Path, text: str, *,
                    scale: str = "paper") -> None:
    """Put a page saying ``text`` (Markdown: a value in it escaped by the caller, e.g.
    with :func:`fedlib.render.markdown.markdown_text`) where a rendering of a chapter would be
    (``output`` with the suffix ``.md``), and remove any older rendering. Its title is the
    chapter's, naming the tier ``scale``, as on a rendered page (:func:`label_tier_page`)."""
    from fedlib.paths import atomic_path
    from fedlib.render.markdown import markdown_text

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)
    page = output.with_suffix(".md")
    with atomic_path(page) as tmp:
        tmp.write_text(f"# {_chapter_title(source)}: the {markdown_text(scale)} tier\n\n"
                       f"{text}\n")


def tier_opening(scale: str, chapter: str, *, lead: bool) -> str:
    """The note (MyST) that opens a chapter's page and says which tier it is: the page
    leading the chapter (``lead``: rendered from stored runs, its other page one folder up)
    or the chapter at the build's tier (its leading page in ``published/``). Every chapter
    computes the numbers its prose quotes at the page's tier (:mod:`fedlib.render.prose`); the
    records of the authors' own code are fixed."""
    from fedlib.render.markdown import tier_meaning
    from fedlib.verdicts.claims import COMPANION_CHAPTERS

    meaning = tier_meaning(scale, chapter)
    if lead:
        quick_page = f"{{doc}}`the quick-tier page <../{chapter}>`"
        prose = (f"The numbers its prose quotes are of the {scale} tier too, except where a "
                 "paragraph names another tier or quotes the authors' own code. ")
        return (f"```{{note}}\n**This page is the {scale} tier**: {meaning}, "
                "rendered from stored runs (published in the repository or cached on the "
                "machine that built the site; the box at the end of the page says where "
                "they come from), with nothing computed. Every figure, table and verdict on "
                f"it is of the {scale} tier. {prose}The chapter's other page is "
                f"{quick_page}, which reruns in minutes.\n```")
    return (f"```{{note}}\n**This page is the {scale} tier**: {meaning}. "
            f"Every figure, table and verdict on it is of the {scale} tier, and so is every "
            f"number its prose quotes, except where a paragraph names another tier or "
            f"quotes the authors' own code. The "
            + ("chapter's larger scale" if chapter in COMPANION_CHAPTERS else "papers' own scale")
            + f" is on the chapter's first page, {{doc}}`the paper tier "
            f"<published/{chapter}>`.\n```")


def label_tier_page(notebook: str | Path, scale: str, *, lead: bool = True,
                    chapter: str | None = None) -> None:
    """Label an executed chapter with its tier ``scale``: a note under its title says which
    tier the page is (:func:`tier_opening`), and every figure and table caption opens with
    a tier badge (:func:`fedlib.render.markdown.badge_captions`).

    ``lead``: the page leads its chapter beside the page at the book's tier, so its
    labels (of figures, tables and sections) and the references to them get a
    ``<tier>-`` prefix (Sphinx labels are book-wide). Otherwise the page is the chapter at
    the build's tier. Either way its title names the tier. ``chapter``: the chapter's id
    (default: the notebook's name up to its first dot). ``scale`` must be a word that can
    prefix a label."""
    import re

    import nbformat

    from fedlib.paths import atomic_path
    from fedlib.render.markdown import badge_captions

    if not isinstance(scale, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", scale):
        raise ValueError(f"scale={scale!r} cannot name a tier page or prefix its labels; "
                         "use a tier name of letters, digits, '-' and '_', e.g. 'paper'")
    chapter = chapter or Path(notebook).name.split(".", 1)[0]
    book = read_executed(notebook)
    markdown = [c for c in book.cells if c.cell_type == "markdown"]
    definition = re.compile(r"^(?::name:\s*(\S+)|\((\S+)\)=)\s*$", re.MULTILINE)
    labels = {figure or section for cell in markdown
              for figure, section in definition.findall(cell.source)} if lead else set()
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(labels))) + r")(?![\w-])")
    for cell in markdown:
        if labels:
            cell.source = pattern.sub(lambda m: f"{scale}-{m.group(1)}", cell.source)
        cell.source = badge_captions(cell.source, scale)
    for cell in markdown:
        if cell.source.lstrip().startswith("# "):
            title, _, rest = cell.source.lstrip().partition("\n")
            title = f"{title}: the {scale} tier"
            cell.source = f"{title}\n\n{tier_opening(scale, chapter, lead=lead)}\n{rest}"
            break
    with atomic_path(notebook) as tmp:
        nbformat.write(book, str(tmp))


if __name__ == "__main__":
    raise SystemExit(run_command(main))
