"""The five reproduced papers: one folder each, with the same roles in every folder.

``papers/<id>/`` holds the paper's algorithm module(s), ``experiment.py`` (run
tiers, configs and the sweep runner), ``claims.py`` (read-outs and the claims
checked in code) and ``figures.py`` (one function per figure). Papers never
import each other. :data:`PAPERS` is the one list of them that the scorecard,
the notebook tests and the README read.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    """One reproduced paper.

    Parameters
    ----------
    id
        Folder name under ``fedlib/papers/``, notebook name and claims-file name.
    reference
        Authors and year, as the chapters cite them.
    title
        The paper's title.
    coverage
        What the chapter reproduces, on which data.
    datasets
        The registered datasets its smoke run reads: a dataset name (every file
        needed) or ``dataset/file1|file2`` (any one of the listed files).
    """

    id: str
    reference: str
    title: str
    coverage: str
    datasets: tuple[str, ...]

    @property
    def notebook(self) -> str:
        """Path of the chapter's notebook, relative to the repository root."""
        return f"notebooks/{self.id}.py"


PAPERS: tuple[Paper, ...] = (
    Paper(
        "hu2020", "Hu et al. 2020",
        "Personalized federated learning with differential privacy",
        "Figures 2-5 (HAR, 30 subjects; offline, the 561 features rebuilt from the raw "
        "recordings)",
        ("hapt",),
    ),
    Paper(
        "dpditto", "DP-Ditto",
        "Convergence-privacy-fairness trade-off in personalized federated learning",
        "Figures 2-7 and the headline table (MNIST with MLR and DNN, Fashion-MNIST with the "
        "CNN; CIFAR-10 panels at the paper tier)",
        ("mnist", "fashion-mnist"),
    ),
    Paper(
        "padpfl", "Talaei and Izadi",
        "Enhancing federated learning with adaptive differential privacy and priority-based "
        "aggregation (PADPFL)",
        "Figures 2-9 (MNIST scenarios S1-S4)",
        ("mnist",),
    ),
    Paper(
        "ppsgd", "Bietti et al. 2022",
        "Personalization improves privacy-accuracy tradeoffs in federated learning (PPSGD)",
        "Figures 1a (synthetic), 1c, 1d (EMNIST digits, offline LEAF sample), 2 (EMNIST, "
        "synthetic); Figure 1b (Stack Overflow) not run offline",
        ("femnist-digits",),
    ),
    Paper(
        "pfa", "Liu et al. 2022",
        "Projected federated averaging with heterogeneous differential privacy (PFA)",
        "Figures 3, 4, 6, 7, 8, 13 (MNIST, Fashion-MNIST; heterogeneous budgets); Figure 5 "
        "(CIFAR-10, IMDb) at the paper tier",
        ("mnist", "fashion-mnist"),
    ),
)

PAPER_IDS: tuple[str, ...] = tuple(p.id for p in PAPERS)


def paper(paper_id: str) -> Paper:
    """The paper with this id, or a ValueError listing the ids."""
    for entry in PAPERS:
        if entry.id == paper_id:
            return entry
    raise ValueError(f"unknown paper id {paper_id!r}; valid ids: {', '.join(PAPER_IDS)}")


def readme_table() -> str:
    """The README's table of papers (a test keeps the README equal to it)."""
    lines = ["| paper | id | chapter |", "|---|---|---|"]
    lines += [f"| {p.reference}, *{p.title}* | `{p.id}` | {p.coverage} |" for p in PAPERS]
    return "\n".join(lines)
