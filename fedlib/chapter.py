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
from fedlib.claims import Claim, write_claims
from fedlib.papers import paper
from fedlib.paths import claims_dir as paths_claims_dir
from fedlib.paths import resolve
from fedlib.tiers import check_scale


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

    @property
    def sweep_args(self) -> dict[str, Any]:
        """Keyword arguments of a paper's ``run``: where the sweep runs, no progress bar."""
        return {"workers": self.workers or None, "ray_address": self.ray_address or None,
                "progress": False}

    def write_claims(self, claims: Sequence[Claim]) -> None:
        """Write the paper's claims file for the scorecard and glue the claims table."""
        from fedlib.plots import glue_claims_table

        write_claims(self.claims_dir / f"{self.paper}.json", list(claims))
        glue_claims_table(f"{self.paper}_claims_table", claims)

    def close(self) -> None:
        """Show the tier and how long the chapter took."""
        from IPython.display import Markdown, display

        elapsed = time.perf_counter() - self.started
        display(Markdown(f"This chapter ran at the `{self.scale}` tier in {elapsed:.0f} s."))


def open_chapter(paper_id: str, *, scale: str, seed: int, device: str, workers: int,
                 ray_address: str, claims_dir: str | Path, cpu_only: bool = False) -> Chapter:
    """Check a notebook's standard parameters and start its clock.

    ``cpu_only``: the paper's engine runs on the CPU, and any other device is
    refused. ``claims_dir`` empty means the book's claims folder (where the
    scorecard reads); a relative path is taken from the project root, whatever
    the working directory. The folder is created now, so that one that cannot
    be written is reported before any compute.
    """
    paper(paper_id)
    check_scale(scale)
    check_seed(seed)
    check_workers(workers)
    if cpu_only and device != "cpu":
        raise ValueError(f"device={device!r}: the {paper_id} engine runs on the CPU; "
                         "use device='cpu'")
    check_device(device)
    if not isinstance(ray_address, str):
        raise ValueError(f"ray_address={ray_address!r} must be a string "
                         "(empty: run locally; 'auto': the Ray cluster of this machine)")
    folder = resolve(claims_dir) if str(claims_dir).strip() else paths_claims_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"claims_dir={str(claims_dir)!r} cannot be created ({error}); "
                         "pass a folder this notebook may write to") from error
    return Chapter(paper_id, scale, seed, device, workers, ray_address, folder)


def show_claims(claims: Sequence[Claim]) -> None:
    """List claims with their verdict and evidence (Markdown-escaped)."""
    from IPython.display import Markdown, display

    display(Markdown("\n".join(
        f"- **{c.status}** `{c.claim_id}`: " + _escape(c.evidence) for c in claims)))


def _escape(text: str) -> str:
    for char in "\\*_[]<>|`":
        text = text.replace(char, "\\" + char)
    return text
