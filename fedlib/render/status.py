"""The book's environment/status page: package versions, notebook execution times and
the published runs; every value from a notebook or a manifest is shown as written."""

from __future__ import annotations

import argparse
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from fedlib.runs.environment import environment_description
from fedlib.runs.errors import DEBUG_FLAG, DEBUG_HELP, run_command
from fedlib.runs.machine import machine_description

PACKAGES = (
    "fedlib", "torch", "numpy", "scipy", "pandas", "pyarrow", "opacus", "dp-accounting",
    "pooch", "ray", "matplotlib", "seaborn", "jupyter-book", "myst-nb", "papermill", "jupytext",
)


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def notebook_runs(folder: Path) -> list[dict[str, str]]:
    """Tier, start time and duration of each papermill-executed notebook in ``folder``; a
    run marked unfinished (:func:`fedlib.render.execute.unfinished`) has no duration but says it
    did not finish, and a damaged notebook is a ValueError naming it and how to run it
    again (:func:`fedlib.render.execute.read_executed`)."""
    from fedlib.render.execute import read_executed, unfinished

    rows = []
    for path in sorted(Path(folder).glob("*.ipynb")):
        book = read_executed(path)
        meta = _mapping(book.metadata.get("papermill"))
        duration = meta.get("duration")
        if unfinished(book):
            shown = "did not finish"
        elif isinstance(duration, int | float) and not isinstance(duration, bool):
            shown = f"{duration:.0f} s"
        else:
            shown = "?"
        rows.append({
            "notebook": path.stem,
            "tier": str(_mapping(meta.get("parameters")).get("scale", "?")),
            "started": str(meta.get("start_time", "?"))[:19].replace("T", " "),
            "duration": shown,
        })
    return rows


def _mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping (notebook metadata as papermill writes it), else an
    empty one (metadata written by something else)."""
    return value if isinstance(value, Mapping) else {}


def _cell(value: object) -> str:
    """``value`` as the text of a Markdown table cell or list item, shown as written: no
    ``|`` ends the cell, no line break the row or item, nothing in it becomes markup."""
    from fedlib.render.markdown import markdown_text

    return markdown_text(value)


def status_markdown(folder: Path) -> str:
    lines = [
        "# Environment and status",
        "",
        "The machine and software that executed the notebooks of this build, and how long "
        "each took (a run that failed or was interrupted says it did not finish).",
        "",
        "## Notebook execution",
        "",
        "| notebook | tier | started (UTC) | duration |",
        "|---|---|---|---|",
    ]
    for row in notebook_runs(folder):
        lines.append("| " + " | ".join(_cell(row[c]) for c in
                                        ("notebook", "tier", "started", "duration")) + " |")
    torch_threads = ""
    try:
        import torch

        torch_threads = f", torch threads {torch.get_num_threads()}"
    except ImportError:
        pass
    lines += ["", *gaps_section(folder / "claims")]
    lines += ["", *published_section()]
    lines += [
        "",
        "## Machine",
        "",
        f"{_cell(machine_description())}{torch_threads}.",
        "",
        "## Packages",
        "",
        f"This site was built in the environment of {_cell(environment_description())} "
        "(`requirements/<platform>/`, which `make install` installs; the digest is of its "
        "two files). Its main packages:",
        "",
        "| package | version |",
        "|---|---|",
    ]
    lines += [f"| {_cell(name)} | {_cell(version)} |"
              for name, version in package_versions().items()]
    return "\n".join(lines) + "\n"


def gaps_section(claims: Path) -> list[str]:
    """The sweeps the pages rendered from stored runs could not have
    (:mod:`fedlib.runs.gaps`, the records beside each render's claims), as Markdown lines:
    one row per sweep, with its chapter, tier and counts."""
    from fedlib.runs.gaps import GAPS_SUFFIX, read_gaps

    lines = ["## Runs the pages could not find", "",
             "A page rendered from stored runs leaves out a part whose runs are not all "
             "stored, and says so where the part would be. Each such part, as the render "
             "recorded it:", ""]
    renders = sorted(claims.rglob(f"*{GAPS_SUFFIX}")) if claims.is_dir() else []
    if not renders:
        return [*lines[:2], "No page of this build was rendered from stored runs alone."]
    rows = [(path.name.split(".", 1)[0], record) for path in renders
            for record in read_gaps(path)]
    # A page the render could not draw at all says why in a marker beside its claims.
    unshown = [f"- {_cell(path.stem)}: not shown ({_cell(path.read_text().strip())})"
               for path in sorted(claims.rglob("*.missing"))]
    if not rows and not unshown:
        return [*lines[:2], f"Every page rendered from stored runs ({len(renders)} renders) "
                "found every run it reads."]
    if rows:
        lines += ["| chapter | tier | experiment | runs | absent | damaged |",
                  "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(_cell(v) for v in (
            chapter, r["tier"] or "-", r["experiment"], r["runs"], r["absent"], r["damaged"]))
            + " |" for chapter, r in rows]
    if unshown:
        lines += ["", "Pages whose tier was not drawn at all:", "", *unshown]
    return lines


def published_section() -> list[str]:
    """The published runs (:mod:`fedlib.runs.published`) as Markdown lines: per experiment and
    tier, how many are current, stale and damaged, which files made the stale ones stale,
    and the files an interrupted export left behind (their folders' and files' names
    shown as written)."""
    from fedlib.runs.published import leftover_lines, status_table

    lines = ["## Published runs", "",
             "Runs computed once and committed with the project (`data/published/`); a "
             "build uses a run only while the code it ran with is unchanged. Stale runs "
             "are listed with the files changed since, and computed again when needed; "
             "damaged runs (a table that cannot be read or does not match its digest) are "
             "computed again too, until the files are restored from git. Confirmed runs "
             "were computed with earlier code and carried over an edit meant to change no "
             "result (`python -m fedlib.runs confirm`): the edited code computed again one "
             "group of some strata of the experiment (a stratum: one value of each config "
             "field that chooses a code path, such as the method, model or dataset), and "
             "the tables agreed; the column says how many strata, never more.", ""]
    table = status_table()
    leftovers = [f"- {_cell(line)}" for line in leftover_lines()]
    if leftovers:
        leftovers = ["", "Left by an interrupted write:", "", *leftovers]
    if table.empty:
        return [*lines, "Nothing is published in this checkout.", *leftovers]
    for columns in PUBLISHED_TABLES:
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for _, row in table.iterrows():
            lines.append("| " + " | ".join(_cell(row[c]) if row[c] != "" else "-"
                                            for c in columns) + " |")
        lines.append("")
    return [*lines[:-1], *leftovers]


PUBLISHED_TABLES = (
    ("experiment", "tier", "runs", "current", "stale", "damaged", "CPU hours", "size (kB)"),
    ("experiment", "tier", "machines", "finished", "commits", "confirmed", "changed since"),
    ("experiment", "tier", "environments"),
)
"""The columns of the published runs' tables, what they hold and where they come from:
tables of a few columns each fit the page's width, where one of thirteen did not."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the environment/status page.")
    parser.add_argument("folder", type=Path, help="folder of executed notebooks")
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    args.output.write_text(status_markdown(args.folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_command(main))
