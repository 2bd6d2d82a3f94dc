"""The noise each DP method of the DP-Ditto chapter really adds to its uploads.

The paper perturbs every baseline "the same way" as DP-Ditto: what a client uploads
is clipped to norm C and gets Gaussian noise of DP-Ditto's standard deviation at the
same (epsilon, delta), C and number of aggregations T. This module reads the noise
each method adds on a small problem: while a method runs, the upload step it calls
(:func:`fedlib.papers.dpditto.algorithm.private_upload`) is wrapped so that every
call's input and output are kept; the noise is the output minus the clipped input
(the clipping recomputed here), and its standard deviation over the parameters is
measured per run, client and round. Nothing of the methods' code is changed: the
wrapper is put in place for the run and taken away after it.

The chapter shows the table; ``tests/papers/dpditto/test_baseline_noise.py`` checks
the same property with its own reading of the uploads.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from fedlib.papers.dpditto import algorithm, baselines
from fedlib.papers.dpditto.algorithm import Hyper, Model, pad_clients, run_ditto
from fedlib.verdicts.compare import Verdict, combine, near_value

METHODS = ("DP-Ditto", "DP-FedAvg", "FedAMP", "pFedMe", "APPLE", "FedALA")
"""Every DP method of the comparison; DP-FedAvg is DP-Ditto's global model (lambda = 1)."""
UPLOADED = {"DP-Ditto": "local models", "DP-FedAvg": "local models (DP-Ditto's)",
            "FedAMP": "personal models", "pFedMe": "local models", "APPLE": "core models",
            "FedALA": "local models"}
"""What each method's clients upload."""
RATIO_MARGIN = 0.05
"""5% of DP-Ditto's standard deviation: a method whose noise differs by less adds the
same noise for the comparison (a calibration error, such as sqrt(T) against T or a
missing factor of 2 in the sensitivity, differs by far more)."""
RATIO_WHY = ("5% of DP-Ditto's noise std; a calibration error (T for sqrt(T), a factor "
             "of 2 in the sensitivity) is far larger")


@dataclass(frozen=True)
class Probe:
    """The small problem the noise is read on: MLR with ``features`` inputs and 10
    classes (``features * 10 + 10`` parameters, each a draw of the noise) on clients
    with ``sizes`` training examples (each its own sensitivity 2C/|D_i|)."""

    sizes: tuple[int, ...] = (20, 40, 80)
    features: int = 300
    epsilons: tuple[float, ...] = (1.0, 10.0)
    rounds: int = 3
    clip: float = 0.5
    delta: float = 0.01

    def __post_init__(self) -> None:
        if len(self.sizes) < 2 or min(self.sizes) < 1:
            raise ValueError(f"sizes must name two or more clients with at least one example "
                             f"each, got {self.sizes!r}")
        if self.features < 1 or self.rounds < 1:
            raise ValueError(f"features and rounds must be >= 1, got {self.features!r}, "
                             f"{self.rounds!r}")

    def hyper(self) -> Hyper:
        return Hyper(lr=0.05, personal_lr=0.05, local_steps=2, personal_steps=2, batch_size=5,
                     clip=self.clip, delta=self.delta)

    def model(self) -> Model:
        return Model("mlr", (self.features,), 10)

    def clients(self, seed: int):
        rng = np.random.default_rng([seed, 29])
        parts = []
        for n in self.sizes:
            x = rng.normal(size=(n, self.features))
            y = rng.integers(0, 10, size=n)
            parts.append((x, y, x[:5], y[:5]))
        return pad_clients(parts, eval_examples=None, dtype=torch.float64)

    def sigma(self, n_examples: int, epsilon: float) -> float:
        """The DP-Ditto calibration, written out (q = 1): (2C/|D_i|) sqrt(2 T ln(1/delta)) / eps."""
        return (2 * self.clip / n_examples) * math.sqrt(
            2 * self.rounds * math.log(1 / self.delta)) / epsilon


class _Recorder:
    """Stands in for the upload step while a method runs; keeps each call's noise."""

    def __init__(self, original, clip: float) -> None:
        self.original = original
        self.clip = clip
        self.stds: list[np.ndarray] = []  # one (runs, N) array per call
        self.sigmas: list[np.ndarray] = []

    def __call__(self, theta, clip, sigma, noise, n_clients):
        out = self.original(theta, clip, sigma, noise, n_clients)
        norms = torch.linalg.vector_norm(theta, dim=1, keepdim=True)
        clipped = theta * torch.minimum(torch.ones_like(norms), self.clip / norms)
        added = (out - clipped).view(-1, n_clients, theta.shape[1])
        self.stds.append(added.std(dim=-1).numpy())
        self.sigmas.append(np.asarray(sigma, dtype=float))
        return out


@contextmanager
def _recording(module, clip: float) -> Iterator[_Recorder]:
    original = module.private_upload
    recorder = _Recorder(original, clip)
    module.private_upload = recorder
    try:
        yield recorder
    finally:
        module.private_upload = original


def measure(method: str, probe: Probe, seed: int) -> pd.DataFrame:
    """One row per (epsilon, client, round) of ``method``'s uploads on ``probe``: the
    standard deviation handed to the noise step, the std of the noise measured, and the
    calibration (``expected``)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    clients, model, hyper = probe.clients(seed), probe.model(), probe.hyper()
    if method in ("DP-Ditto", "DP-FedAvg"):
        lam = 0.5 if method == "DP-Ditto" else 1.0
        pairs = [(g, lam) for g in range(len(probe.epsilons))]
        with _recording(algorithm, probe.clip) as recorder:
            run_ditto(model, clients, probe.epsilons, pairs, probe.rounds, hyper, seed)
    else:
        with _recording(baselines, probe.clip) as recorder:
            baselines.BASELINES[method](model, clients, probe.epsilons, probe.rounds, hyper,
                                        seed)
    rows = []
    for r, (stds, sigmas) in enumerate(zip(recorder.stds, recorder.sigmas, strict=True)):
        for g, eps in enumerate(probe.epsilons):
            for i, n in enumerate(probe.sizes):
                rows.append({"method": method, "seed": seed, "round": r + 1, "epsilon": eps,
                             "client examples": n, "sigma handed": float(sigmas[g, i]),
                             "noise std measured": float(stds[g, i]),
                             "expected": probe.sigma(n, eps)})
    return pd.DataFrame(rows)


def measure_all(probe: Probe | None = None, seeds: Sequence[int] = (0, 1, 2)) -> pd.DataFrame:
    """:func:`measure` for every method of :data:`METHODS` and seed."""
    probe = probe or Probe()
    return pd.concat([measure(m, probe, s) for m in METHODS for s in seeds], ignore_index=True)


def _ratio(frame: pd.DataFrame) -> pd.Series:
    """Per seed, the mean over epsilons, clients and rounds of measured std / DP-Ditto's
    calibrated sigma."""
    return (frame["noise std measured"] / frame["expected"]).groupby(frame["seed"]).mean()


def summary(measured: pd.DataFrame) -> pd.DataFrame:
    """One row per method: what it uploads, the uploads per run, whether the sigma it hands
    its noise step equals DP-Ditto's, and the measured std over the calibrated one."""
    ditto = measured[measured["method"] == "DP-Ditto"].set_index(
        ["seed", "round", "epsilon", "client examples"])["sigma handed"]
    rows = []
    for method, frame in measured.groupby("method", sort=False):
        handed = frame.set_index(["seed", "round", "epsilon", "client examples"])["sigma handed"]
        same = handed.index.equals(ditto.index) and bool((handed == ditto).all())
        ratio = frame["noise std measured"] / frame["expected"]
        rows.append({"method": method, "uploads": UPLOADED[method],
                     "noisy uploads per client and run": int(frame["round"].max()),
                     "sigma handed = DP-Ditto's": same,
                     "measured std / DP-Ditto's sigma, mean": float(ratio.mean()),
                     "min": float(ratio.min()), "max": float(ratio.max())})
    return pd.DataFrame(rows)


def verdict(measured: pd.DataFrame) -> Verdict:
    """Every method's noise has DP-Ditto's std: per method, the mean ratio of measured std
    to DP-Ditto's calibrated sigma (one value per seed) lies within :data:`RATIO_MARGIN`
    of 1, and the sigma it hands its noise step equals DP-Ditto's."""
    table = summary(measured).set_index("method")
    parts = []
    for method, frame in measured.groupby("method", sort=False):
        judged = near_value(f"{method}'s measured noise std / DP-Ditto's sigma",
                            _ratio(frame), 1.0, RATIO_MARGIN, RATIO_WHY)
        if not table.loc[method, "sigma handed = DP-Ditto's"]:
            judged = Verdict("FAILS", f"the sigma it hands its noise step differs from "
                             f"DP-Ditto's; {judged.evidence}")
        parts.append((method, judged))
    return combine(parts)
