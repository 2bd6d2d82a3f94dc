"""What every chapter notebook does around its own content.

A notebook opens with :func:`open_chapter` (its parameters checked before any
compute, the claims folder created), shows claims with :func:`show_claims`, and
closes with :meth:`Chapter.write_claims` (the claims file for the scorecard and
the table for the page) and :meth:`Chapter.close` (the run time).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedlib.checks import check_device, check_seed, check_workers
from fedlib.papers import paper
from fedlib.paths import compute_allowed
from fedlib.render.markdown import markdown_code, markdown_text, with_tier_caption
from fedlib.render.notebook import writable_claims_folder
from fedlib.runs.cache import record_swept_runs, set_tier_label
from fedlib.tiers import check_scale
from fedlib.verdicts.claims import (
    COMPANION_CHAPTERS,
    STORED_FOLDER,
    Claim,
    stored_tier_claims,
    tier_comparison,
    write_claims,
)

SEED_LIMIT = 2**31
"""A chapter's seed lies in ``[0, SEED_LIMIT)``. The experiments add small offsets to
it (a run's repeat, PFA's authors' seed 10, a second stream: tens at most today) and
hand it to numpy's ``RandomState`` (seeds below 2**32), to ``torch.manual_seed``
(below 2**64, after DP-Ditto multiplies it by about 10**6) and to Parquet columns of
64-bit integers: below 2**31 every one of them has room to spare."""


@dataclass
class Chapter:
    """A chapter's checked parameters, and when it started."""

    paper: str
    scale: str
    seed: int
    device: str
    workers: int
    ray_address: str
    claims_dir: Path
    started: float = field(default_factory=time.perf_counter)
    swept: dict[str, list[str]] = field(default_factory=record_swept_runs)

    @property
    def sweep_args(self) -> dict[str, Any]:
        """Keyword arguments of a paper's ``run``: where the sweep runs, no progress bar."""
        return {"workers": self.workers or None, "ray_address": self.ray_address or None,
                "progress": False}

    def write_claims(self, claims: Sequence[Claim]) -> None:
        """Write the paper's claims file for the scorecard and glue the claims table, with
        the paper tier's verdicts beside this build's when the build rendered them from
        published runs."""
        from fedlib.render.glue import glue_claims_table

        write_claims(self.claims_dir / f"{self.paper}.json", list(claims))
        glue_claims_table(f"{self.paper}_claims_table", claims,
                          stored_tier_claims(self.claims_dir, list(claims)))

    def compare_tiers(self, claims: Sequence[Claim], notes: dict[str, str] | None = None
                      ) -> None:
        """Show how this build's verdicts compare with the paper tier's (rendered from
        stored runs), with the chapter's explanation of every claim that flips
        (:func:`fedlib.verdicts.claims.tier_comparison`); nothing when there is no other tier."""
        from IPython.display import Markdown, display

        text = tier_comparison(claims, stored_tier_claims(self.claims_dir, list(claims)),
                               notes)
        display(Markdown(text or f"This page is the {self.scale} tier; no other tier is "
                                 "compared with it here."))

    def close(self) -> None:
        """Record how long the chapter took, and show the "rerun this chapter" box: the
        commands, the parameters with their meaning, the run times measured here."""
        from IPython.display import HTML, display

        elapsed = time.perf_counter() - self.started
        times = None
        if compute_allowed():  # a render from stored runs says nothing of the tier's time
            times = record_run_time(self.claims_dir.parent / "run_times.json", self.paper,
                                    self.scale, elapsed)
        display(HTML(provenance_box(self.scale, self.swept)))
        display(HTML(rerun_box(self.paper, self.scale, times)))


def provenance_box(scale: str, swept: dict[str, list[str]]) -> str:
    """HTML of the box that says where the runs behind a page come from: per experiment,
    how many were published (tier, machine, dates, fedlib commit, CPU hours) and how many
    this build computed."""
    from html import escape

    from fedlib.runs.published import provenance_line

    items = "".join(f"<li><code>{escape(name)}</code>: {escape(provenance_line(name, keys))}"
                    "</li>" for name, keys in swept.items() if keys)
    body = f"<ul>{items}</ul>" if items else "<p>No runs were swept on this page.</p>"
    return ('<div class="admonition provenance"><p class="admonition-title">Where the runs '
            f"on this page come from</p><p>Tier of this page: <b>{escape(scale)}</b>.</p>"
            f"{body}</div>")


def record_run_time(path: Path, paper_id: str, scale: str, seconds: float) -> dict[str, float]:
    """Add this run's time to the run-time record beside the claims; return the paper's
    times by tier."""
    import json

    from fedlib.paths import atomic_path

    record = read_run_times(path)
    record.setdefault(paper_id, {})[scale] = round(float(seconds), 1)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    return record[paper_id]


def read_run_times(path: Path) -> dict[str, dict[str, float]]:
    """The run-time record (paper -> tier -> seconds); a missing or damaged file, and any
    entry that is not a number of seconds, count as not recorded (the record is rewritten
    by the next run)."""
    import json
    import math

    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict):
        return {}
    return {str(paper_id): {str(tier): float(value) for tier, value in times.items()
                            if isinstance(value, int | float) and not isinstance(value, bool)
                            and math.isfinite(value)}
            for paper_id, times in record.items() if isinstance(times, dict)}


def rerun_box(paper_id: str, scale: str, times: dict[str, float] | None) -> str:
    """HTML of the box that closes a chapter: how to rerun it, its parameters, and the run
    times measured by this machine's builds (None: this page was rendered from stored
    runs, with nothing computed)."""
    from html import escape

    from fedlib.paths import PROJECT_ROOT
    from fedlib.render.notebook import parameter_notes
    from fedlib.tiers import SCALES

    notebook = f"notebooks/{paper_id}.py"
    command = (f".venv/bin/python -m fedlib.render.execute {notebook} out.ipynb -p scale {scale} "
               "-p seed 0")
    rows = "".join(
        f"<tr><td><code>{escape(name)}</code></td><td><code>{escape(default)}</code></td>"
        f"<td>{escape(meaning)}</td></tr>"
        for name, default, meaning in parameter_notes(PROJECT_ROOT / notebook))
    if times is None:
        timing = ("This page was rendered from stored runs, with nothing computed; the CPU "
                  "time of its runs is given with their provenance above.")
    else:
        timing = "Run time measured on the machine that built this page: " + ", ".join(
            f"{tier}: {times[tier]:.0f} s" + (" (this build)" if tier == scale else "")
            for tier in SCALES if tier in times) + "."
    return (
        '<div class="admonition rerun"><p class="admonition-title">Rerun this chapter</p>'
        "<p>Everything: <code>make rebuild-all</code> (quick tier) or "
        "<code>make rebuild-all SCALE=paper</code>. This chapter alone, with your own "
        f"parameters:</p><pre>{escape(command)}</pre>"
        '<table class="parameters"><thead><tr><th>parameter</th><th>default</th>'
        f"<th>meaning</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<p>{timing}</p></div>")


def open_chapter(paper_id: str, *, scale: str, seed: int, device: str, workers: int,
                 ray_address: str, claims_dir: str | Path, cpu_only: bool = False) -> Chapter:
    """Check a notebook's standard parameters and start its clock.

    ``paper_id``: a paper's id, or a chapter of the companion's own
    (:data:`fedlib.verdicts.claims.COMPANION_CHAPTERS`).

    ``seed``: an integer in ``[0, SEED_LIMIT)`` (a numpy integer is taken as the
    int it holds). ``cpu_only``: the paper's engine runs on the CPU, and any other
    device is refused. ``claims_dir`` empty means the book's claims folder (where
    the scorecard reads); a relative path is taken from the project root, whatever
    the working directory. The folder is created and a file written to it and
    removed now, so that one that cannot be written is reported before any compute.
    """
    if paper_id not in COMPANION_CHAPTERS:
        paper(paper_id)  # a paper's chapter, or a ValueError listing the ids
    check_scale(scale)
    seed = chapter_seed(seed)
    check_workers(workers)
    if cpu_only and device != "cpu":
        raise ValueError(f"device={device!r}: the {paper_id} engine runs on the CPU; "
                         "use device='cpu'")
    check_device(device)
    if not isinstance(ray_address, str):
        raise ValueError(f"ray_address={ray_address!r} must be a string "
                         "(empty: run locally; 'auto': the Ray cluster of this machine)")
    folder = writable_claims_folder(claims_dir)
    from fedlib.render.glue import keep_figure_data

    if folder.name == STORED_FOLDER:
        # A chapter rendered from stored runs beside the book's tier: its page lies one
        # folder deeper, and its figures' numbers are named after its tier.
        keep_figure_data(folder.parent.parent / "extra" / "data", prefix=f"{scale}-",
                         link="../../data/")
    else:
        keep_figure_data(folder.parent / "extra" / "data")
    _tables_without_row_numbers(scale)
    set_tier_label(scale)
    return Chapter(paper_id, scale, seed, device, workers, ray_address, folder)


def chapter_seed(seed: object) -> int:
    """A chapter's ``seed`` as an int (numpy integers included), or a ValueError naming it
    and the range allowed (:data:`SEED_LIMIT`)."""
    import numbers

    allowed = f"0 <= seed < 2**31 = {SEED_LIMIT}"
    if isinstance(seed, str):
        raise ValueError(f"seed={seed!r} is a string; pass an integer ({allowed}), e.g. "
                         "-p seed 3 (papermill passes a numpy integer as a string: give it "
                         "int(seed))")
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
        raise ValueError(f"seed={seed!r} must be an integer with {allowed}, e.g. seed=0")
    value = int(seed)
    if not 0 <= value < SEED_LIMIT:
        raise ValueError(f"seed={value} is out of range: use {allowed} (the runs add small "
                         "offsets to it, and numpy's RandomState takes seeds below 2**32)")
    return check_seed(value)


def _tables_without_row_numbers(scale: str) -> None:
    """Show tables in the notebook without pandas' 0, 1, 2 row numbers (a meaningful
    index, such as a setting's name, is kept), each captioned with the tier ``scale`` it
    was computed at (:func:`tier_badge`)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    import pandas as pd

    def html(frame: pd.DataFrame) -> str:
        numbered = isinstance(frame.index, pd.RangeIndex)
        return with_tier_caption(frame.to_html(index=not numbered, border=0,
                                               classes="dataframe"), scale)

    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, html)


def show_claims(claims: Sequence[Claim]) -> None:
    """List claims with their verdict and evidence (:func:`claims_markdown`)."""
    from IPython.display import Markdown, display

    display(Markdown(claims_markdown(claims)))


def claims_markdown(claims: Sequence[Claim]) -> str:
    """One Markdown list item per claim: its verdict, id and evidence, each shown as
    written (no value becomes markup)."""
    return "\n".join(f"- **{markdown_text(c.status)}** {markdown_code(c.claim_id)}: "
                     + markdown_text(c.evidence) for c in claims)
