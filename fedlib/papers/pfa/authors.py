"""What the authors' released code gives at its defaults (N = 30 clients), for the
chapter's side-by-side comparison with the ``"authors"`` setting of
:mod:`fedlib.papers.pfa.experiment` (:func:`fedlib.papers.pfa.readouts.authors_comparison`).

Provenance (:data:`PROVENANCE`): the repository at the commit given, run unmodified on
MNIST read from the IDX files by their own data reader; only the random seed is chosen
from outside (their modules seed numpy with 10 when imported; a wrapper sets the run's
seed after the imports, and creates the IID client split beforehand from a seed of its
own, so that every aggregator of one seed draws the same budgets). TensorFlow's DP noise
is not seeded. The per-round accuracies are in the tests' fixture
``tests/papers/pfa/fixtures/authors_curves.csv``.

The same code was also run with the noise an exact accountant gives
(:data:`RDP_PROVENANCE`, :data:`AUTHORS_RDP_RUNS`): a driver replaces, at runtime only,
their closed-form noise multiplier and their closed-form budget accountant with the
noise multipliers (:data:`RDP_NOISE_MULTIPLIERS`) and the retirement of
:class:`fedlib.privacy.ledger.PrivacyLedger`, exactly as our runs with calibration
``"rdp"`` use them for the same client; their per-round accuracies are in
``tests/papers/pfa/fixtures/authors_rdp_curves.csv``.
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

RDP_PROVENANCE = {
    "repository": PROVENANCE["repository"],
    "commit": PROVENANCE["commit"],
    "python": "3.8.18",
    "packages": ("tensorflow-cpu 2.6.5, tensorflow-privacy 0.5.2, numpy 1.19.5, scipy 1.10.1, "
                 "absl-py 0.15.0"),
    "command": ("the driver with the flags of main.py: --N=30 --model=lr --version=<seed> "
                "--dpsgd --eps=<mixgauss1|mixgauss3> and --weiavg, --fedavg, --proj_wavg "
                "--proj_dims=1 --lanczos_iter=256 (PFA), the same with --delay (PFA+); the IID "
                "split written beforehand after numpy.random.seed(<seed> + 1000003), then "
                "numpy.random.seed(<seed>), as for AUTHORS_RUNS"),
    "defaults": PROVENANCE["defaults"],
    "noise": ("their source unmodified; a driver imports their main.py and, at runtime only, "
              "replaces their closed-form noise multiplier (dpsgd_utils.compute_noise_"
              "multiplier) with the client's entry of RDP_NOISE_MULTIPLIERS, and their "
              "budget accountant's precheck/update with the RDP ledger's retirement (a client "
              "takes part while one more round keeps its epsilon within its budget: 80 "
              "rounds each); it checks that each client's drawn budget is the one the noise "
              "multiplier was calibrated for"),
    "calibration": ("fedlib.privacy.ledger.PrivacyLedger (integer-order RDP, via "
                    "make_ledger('rdp', ...)): sampling rate 4/2000, 80 planned rounds of 100 "
                    "steps, delta 1e-5, the ledger of our runs with calibration 'rdp' at the "
                    "same budgets"),
    "threads": "TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 OMP_NUM_THREADS=1, nice 10",
    "final accuracy": PROVENANCE["final accuracy"],
}
"""How :data:`AUTHORS_RDP_RUNS` were made: the same code, seeds, split and flags as
:data:`AUTHORS_RUNS`, with the exact accountant's noise."""

AUTHORS_RDP_RUNS: tuple[AuthorsRun, ...] = (
    AuthorsRun(1, "mixgauss1", "pfa", 97, 1, 0.1995, 452),
    AuthorsRun(1, "mixgauss1", "weiavg", 95, 1, 0.4655, 270),
    AuthorsRun(1, "mixgauss2", "pfa", 97, 1, 0.5555, 231),
    AuthorsRun(1, "mixgauss2", "weiavg", 95, 1, 0.7974, 277),
    AuthorsRun(4, "mixgauss1", "pfa", 97, 3, 0.7723, 411),
    AuthorsRun(4, "mixgauss1", "pfa+", 97, 3, 0.7862, 344),
    AuthorsRun(4, "mixgauss1", "weiavg", 96, 3, 0.7194, 354),
    AuthorsRun(10, "mixgauss1", "fedavg", 95, 4, 0.268, 197),
    AuthorsRun(10, "mixgauss1", "pfa", 96, 4, 0.7659, 519),
    AuthorsRun(10, "mixgauss1", "pfa+", 96, 4, 0.6955, 294),
    AuthorsRun(10, "mixgauss1", "weiavg", 95, 4, 0.7983, 297),
    AuthorsRun(10, "mixgauss2", "fedavg", 95, 4, 0.7708, 151),
    AuthorsRun(10, "mixgauss2", "pfa", 96, 4, 0.7977, 359),
    AuthorsRun(10, "mixgauss2", "pfa+", 96, 4, 0.7938, 257),
    AuthorsRun(10, "mixgauss2", "weiavg", 95, 4, 0.8247, 302),
)
"""Runs of the authors' code with the exact accountant's noise (:data:`RDP_PROVENANCE`), in
the fields of :class:`AuthorsRun` (seconds: wall clock, one TensorFlow thread, on 2 CPU
cores shared with other jobs)."""

RDP_NOISE_MULTIPLIERS: dict[tuple[int, str], tuple[float, ...]] = {
    (1, "mixgauss1"): (
        6.6277, 6.4028, 6.8327, 7.2374, 6.7683, 5.8082, 6.6637, 5.2974, 5.8437, 0.51199,
        5.7612, 5.9434, 5.8595, 6.1939, 5.5695, 6.8466, 6.6592, 5.653, 5.6914, 6.2065,
        6.8004, 5.7964, 6.0859, 6.5121, 6.5033, 5.9757, 6.4857, 6.2023, 5.7846, 6.1272,
    ),
    (1, "mixgauss2"): (
        1.5803, 1.5707, 1.5856, 1.5985, 1.5835, 1.5485, 1.5813, 1.5266, 1.5506, 0.51199,
        1.5464, 1.5548, 1.5506, 1.5622, 1.537, 1.5856, 1.5813, 1.5401, 1.5422, 1.5632,
        1.5845, 1.5485, 1.559, 1.576, 1.5749, 1.5558, 1.5749, 1.5632, 1.5474, 1.5601,
    ),
    (4, "mixgauss1"): (
        0.51129, 6.1189, 5.4317, 6.3382, 6.4245, 0.51164, 6.2445, 6.0326, 5.8635, 6.5919,
        6.1231, 5.7651, 5.4391, 4.9641, 6.8559, 5.3478, 6.3985, 6.8559, 5.9474, 7.2081,
        5.4649, 7.025, 5.5282, 6.2869, 0.51268, 6.7272, 5.9919, 5.6149, 5.7185, 6.6908,
    ),
    (10, "mixgauss1"): (
        6.1231, 6.2192, 6.5386, 6.4989, 6.0, 0.51199, 5.4686, 6.1107, 5.8913, 6.2741,
        6.3424, 6.75, 5.2085, 6.842, 5.5169, 5.9193, 0.51199, 6.2954, 5.7262, 5.1524,
        6.3683, 5.6645, 6.3382, 5.7534, 6.3424, 0.51233, 0.51095, 6.2402, 6.0983, 5.6722,
    ),
    (10, "mixgauss2"): (
        1.5601, 1.5632, 1.577, 1.5749, 1.5558, 0.51199, 1.5318, 1.5601, 1.5527, 1.5653,
        1.5685, 1.5835, 1.5215, 1.5856, 1.5339, 1.5537, 0.51199, 1.5664, 1.5443, 1.5174,
        1.5696, 1.5412, 1.5685, 1.5453, 1.5685, 0.51233, 0.51095, 1.5643, 1.559, 1.5412,
    ),
}
"""Noise multiplier of every client (in their client order) of each run of
:data:`AUTHORS_RDP_RUNS`, by (seed, distribution), to 5 significant digits."""
