"""What the authors' released code gives at its defaults (N = 30 clients), for the
chapter's side-by-side comparison with the ``"authors"`` setting of
:mod:`fedlib.papers.pfa.experiment` (:func:`fedlib.papers.pfa.claims.authors_comparison`).

Provenance (:data:`PROVENANCE`): the repository at the commit given, run unmodified on
MNIST read from the IDX files by their own data reader; only the random seed is chosen
from outside (their modules seed numpy with 10 when imported; a wrapper sets the run's
seed after the imports, and creates the IID client split beforehand from a seed of its
own, so that every aggregator of one seed draws the same budgets). TensorFlow's DP noise
is not seeded. The per-round accuracies are in the tests' fixture
``tests/papers/pfa/fixtures/authors_curves.csv``.
"""

from __future__ import annotations

from typing import NamedTuple

PROVENANCE = {
    "repository": "https://github.com/Emory-AIMS/PFA",
    "commit": "72b3f89a27512554981c7945b5fdd1342a3de557",
    "python": "3.8.18",
    "packages": "tensorflow-cpu 2.6.5, tensorflow-privacy 0.5.2, numpy 1.19.5",
    "command": ("python main.py --N=30 --model=lr --version=<seed> then, private: --dpsgd "
                "--eps=<mixgauss1|mixgauss3> and --weiavg, --fedavg, --proj_wavg --proj_dims=1 "
                "--lanczos_iter=256 (PFA), the same with --delay (PFA+); non-private: "
                "--fedavg alone"),
    "defaults": ("100 rounds (max_steps 10000 / local_steps 100), batch 4 in 4 microbatches, "
                 "lr 0.1, clip 1, delta 1e-5, sample ratio 0.8, 2,000 IID examples per client"),
    "final accuracy": "mean test accuracy (10,000 images) of the last 10 rounds run",
}

AUTHORS_FILES = {"mixgauss2": "mixgauss1", "mixgauss1": "mixgauss3"}
"""Our name of a budget distribution -> the authors' file with that mixture."""


class AuthorsRun(NamedTuple):
    """One run of the authors' code: numpy seed, budget distribution (our name; ``"none"``
    for the non-private run), aggregator (our name), rounds run before it stopped, clients
    whose budget was drawn near 10, final accuracy, and wall-clock seconds on 2 shared
    CPU cores."""

    seed: int
    distribution: str
    aggregator: str
    rounds: int
    high_budgets: int
    accuracy: float
    seconds: int


AUTHORS_RUNS: tuple[AuthorsRun, ...] = (
    AuthorsRun(1, "mixgauss1", "fedavg", 95, 1, 0.0951, 284),
    AuthorsRun(1, "mixgauss1", "weiavg", 95, 1, 0.091, 405),
    AuthorsRun(1, "mixgauss1", "pfa", 96, 1, 0.1051, 861),
    AuthorsRun(1, "mixgauss1", "pfa+", 96, 1, 0.1007, 528),
    AuthorsRun(1, "mixgauss2", "fedavg", 95, 1, 0.2084, 357),
    AuthorsRun(1, "mixgauss2", "weiavg", 95, 1, 0.2676, 692),
    AuthorsRun(1, "mixgauss2", "pfa", 96, 1, 0.0849, 1530),
    AuthorsRun(1, "mixgauss2", "pfa+", 96, 1, 0.0837, 921),
    AuthorsRun(4, "mixgauss1", "weiavg", 95, 3, 0.1878, 308),
    AuthorsRun(4, "mixgauss1", "pfa", 97, 3, 0.8254, 476),
    AuthorsRun(4, "mixgauss1", "pfa+", 97, 3, 0.8114, 610),
    AuthorsRun(4, "mixgauss2", "weiavg", 96, 3, 0.499, 591),
    AuthorsRun(10, "mixgauss1", "fedavg", 95, 4, 0.077, 281),
    AuthorsRun(10, "mixgauss1", "weiavg", 95, 4, 0.5846, 307),
    AuthorsRun(10, "mixgauss1", "pfa", 96, 4, 0.8331, 442),
    AuthorsRun(10, "mixgauss1", "pfa+", 96, 4, 0.8166, 439),
    AuthorsRun(10, "mixgauss2", "fedavg", 95, 4, 0.2013, 236),
    AuthorsRun(10, "mixgauss2", "weiavg", 95, 4, 0.6714, 280),
    AuthorsRun(10, "mixgauss2", "pfa", 96, 4, 0.8268, 467),
    AuthorsRun(10, "mixgauss2", "pfa+", 96, 4, 0.8301, 421),
    AuthorsRun(10, "none", "np-fedavg", 100, 0, 0.9135, 75),
)
