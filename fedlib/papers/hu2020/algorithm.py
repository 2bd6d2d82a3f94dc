"""Hu et al. (2020), "Personalized Federated Learning with Differential Privacy", Algorithm 1.

Federated multi-task learning of m linear SVMs (MOCHA-style block dual
coordinate descent) with Gaussian noise on the dual variables and on the
uploads. The objectives, the Omega update and the closed-form SDCA step live in
:mod:`fedlib.papers.hu2020.svm` (re-exported here); see its docstring for the
normalisation (the paper's: summed hinge losses plus ``lam tr(W Omega^{-1} W^T)``).

One round ``k`` of outer round ``h`` (Init: ``alpha = 0``, ``W = 0``,
``Omega = I/m``, ``beta = xi m``); for every device t, independently:

1. with probability ``p_drop`` the device is inactive: no update, no upload, no noise;
2. otherwise it runs ``n_iter_t`` SDCA steps on its subproblem ``G_t^beta``
   (uniformly random coordinates, with replacement; :func:`sdca_hinge_step`),
   ``n_iter_t`` uniform on the integers ``{lo, ..., n_min}`` with
   ``lo = max(1, ceil((1 - tau) n_min))``;
3. ``alpha_t <- alpha_t + xi Delta alpha_t + b_t``, ``b_t ~ N(0, (s1 sigma1)^2 I)``
   (with ``project_dual``, a variant not in the paper, each ``alpha_ti y_ti`` is then
   projected onto [0, 1]);
4. uploads ``u_t = xi X_t Delta alpha_t + p_t``, ``p_t ~ N(0, (s2 sigma2)^2 I)``,
   with ``s1 = (8 lam + beta) / (beta n_t)`` and ``s2 = 2 xi ||Delta alpha_t||_2``;

then the server sets ``w_t <- w_t + (1/2 lam) sum_s Omega_ts u_s``. After the
last inner round of each outer round, ``Omega <- omega_update(W)``.

Decision (``recompute_w``, default True): after each Omega update the server
also recomputes ``W = (1/2 lam) Omega~ v`` from the running sum ``v`` of all
uploads, i.e. ``w(alpha)`` of equation (6) under the new Omega, as MOCHA's
Algorithm 1 does ("compute w(alpha) for the latest alpha"). This is
post-processing of released uploads (no privacy cost) and keeps ``W = w(alpha)``
exactly in non-private runs, so the duality gap goes to zero. The paper's
Algorithm 1 (and MOCHA's MATLAB code) keeps the old W instead: pass
``recompute_w=False`` for that reading.

Noise (Theorem 5 with the project's constants; :func:`fedlib.privacy.hu2020_sigma`):
``sigma1, sigma2 = noise_scale * hu2020_sigma(epsilon, delta, q, p = 1 - p_drop, K, r)``
(``noise_scale`` is 1 unless a run scales the noise on purpose) with
``K = accounted_rounds`` (default: every round, ``inner_rounds * outer_rounds``;
the paper counts the K inner rounds only) and ``q = E[n_iter] / min_t n_t``,
the sampling rate of the device with the fewest examples (the largest ``q_t``,
so the single ``sigma1`` of a run covers every device).

Vectorisation: the runs of a batch share the data and K, H, n_min but have their
own lam, xi, tau, p_drop, noise and random streams; every (run, device) pair is
one row of stacked arrays and each SDCA step is one batched gather, dot product
and update over all rows. Inactive steps (beyond ``n_iter_t``, or a dropped
device) read a zero feature row and write a scratch slot, so they change nothing.

Random streams: run ``i`` of a batch owns the generators
:func:`run_generators` ``(seed, run_index)``; one round consumes them through
:func:`draw_round`, in the order documented there. A run therefore gives the
same iterates alone or inside any batch, given the same run index.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedlib.checks import check_count, check_delta, check_epsilon, check_positive, is_real
from fedlib.limits import check_finite
from fedlib.papers.hu2020.svm import (
    PaddedTasks,
    check_unit_norm,
    dual_objective,
    expected_local_iterations,
    omega_update,
    pad_tasks,
    predict_error,
    primal_objective,
    sdca_hinge_step,
    w_of_alpha,
)
from fedlib.privacy.calibration import hu2020_sensitivities, hu2020_sigma

__all__ = [
    "Hu2020Config",
    "Hu2020Result",
    "RoundDraws",
    "draw_round",
    "dual_objective",
    "omega_update",
    "predict_error",
    "primal_objective",
    "run_generators",
    "run_mocha_dp",
    "sampling_rate",
    "sdca_hinge_step",
    "w_of_alpha",
]


@dataclass(frozen=True)
class Hu2020Config:
    """Per-run parameters of Algorithm 1.

    Parameters
    ----------
    lam : regularisation strength lambda, > 0.
    xi : aggregation parameter, 0 < xi <= 1 (beta = xi m).
    tau : device variability, 0 <= tau <= 1 (n_iter ~ U[(1 - tau) n_min, n_min]).
    p_drop : probability that a device skips a round, 0 <= p_drop < 1.
    epsilon : total privacy budget; ``None`` or ``math.inf`` means no noise.
    delta : target delta, 0 < delta < 1.
    r : budget ratio epsilon2 / epsilon1 of the two noisy releases, > 0.
    noise_scale : not in the paper: a factor on both noise multipliers, >= 0 (default
        1, Theorem 5's noise). 0 runs the private code path with no noise, which must give
        the non-private solver's iterates; values in between trace how the solver moves
        from one to the other. A run with a factor below 1 is not (epsilon, delta)-private.
    project_dual : not in the paper. After line 6 adds its noise, project each
        noisy ``alpha_ti y_ti`` back onto the hinge dual's box [0, 1]. The
        projection is post-processing of the noisy variable (no privacy cost); it
        is the smallest change that keeps the dual feasible, offered to see how
        much of the private solver's behaviour comes from infeasible duals.
    """

    lam: float
    xi: float
    tau: float = 0.0
    p_drop: float = 0.0
    epsilon: float | None = None
    delta: float = 1e-3
    r: float = 1.0
    project_dual: bool = False
    noise_scale: float = 1.0

    def __post_init__(self) -> None:
        check_positive(self.lam, "lam")
        check_positive(self.xi, "xi")
        if self.xi > 1:
            raise ValueError(f"xi must satisfy 0 < xi <= 1 (paper, Algorithm 1), got {self.xi!r}.")
        if not (is_real(self.tau) and 0.0 <= self.tau <= 1.0):
            raise ValueError(f"tau must satisfy 0 <= tau <= 1, got {self.tau!r}.")
        if not (is_real(self.p_drop) and 0.0 <= self.p_drop < 1.0):
            raise ValueError(
                f"p_drop must satisfy 0 <= p_drop < 1 (a device that always drops never "
                f"trains), got {self.p_drop!r}."
            )
        if self.epsilon is not None and not (is_real(self.epsilon) and self.epsilon == math.inf):
            check_epsilon(self.epsilon)
        check_delta(self.delta)
        check_positive(self.r, "r")
        check_finite(self.noise_scale, "noise_scale", minimum=0.0)
        if not isinstance(self.project_dual, bool):
            raise ValueError(f"project_dual must be True or False, got {self.project_dual!r}.")

    @property
    def private(self) -> bool:
        """Whether noise is added (epsilon finite)."""
        return self.epsilon is not None and math.isfinite(self.epsilon)


@dataclass(frozen=True, eq=False)
class Hu2020Result:
    """Final iterates and recorded objectives of a batch of runs.

    Attributes
    ----------
    W : (runs, m, d) final models (rows), after the last Omega update.
    omega : (runs, m, m) final Omega.
    alpha : (runs, m, n_max) final dual variables, zero beyond each n_t.
    primal : (runs, n_records) ``P(W, Omega)`` after each recorded round, with
        the Omega in force during that round (before an Omega update).
    dual : (runs, n_records) ``D(alpha)`` likewise; +inf once noise has pushed
        some ``alpha_ti y_ti`` out of [0, 1].
    rounds : (n_records,) 1-based round index over all outer rounds.
    sigma1, sigma2 : (runs,) noise multipliers, times ``noise_scale`` (0 for non-private
        runs).
    q : (runs,) sampling rate used for calibration, ``E[n_iter] / min_t n_t``
        (one value per run because ``E[n_iter]`` depends on tau).
    run_indices : (runs,) the run index of each row (its random streams).
    """

    W: np.ndarray
    omega: np.ndarray
    alpha: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    rounds: np.ndarray
    sigma1: np.ndarray
    sigma2: np.ndarray
    q: np.ndarray
    run_indices: np.ndarray


@dataclass(frozen=True, eq=False)
class RoundDraws:
    """The random draws of one run in one round (see :func:`draw_round`)."""

    active: np.ndarray  # (m,) bool
    n_iter: np.ndarray  # (m,) int
    coords: np.ndarray  # (m, n_min) int, coordinate of each SDCA step
    z_alpha: np.ndarray | None  # (m, n_max) standard normal, noise b_t / (s1 sigma1)
    z_upload: np.ndarray | None  # (m, d) standard normal, noise p_t / (s2 sigma2)


def run_generators(seed: int, run_index: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The (structure, noise) generators of run ``run_index`` under ``seed``.

    Both are children of ``SeedSequence(seed, spawn_key=(run_index,))``, which is
    ``SeedSequence(seed).spawn(...)[run_index]``. The structure stream (dropping,
    local iteration counts, coordinates) does not depend on whether the run is
    private, so private and non-private runs with the same index share it.
    """
    parent = np.random.SeedSequence(seed, spawn_key=(run_index,))
    structure, noise = parent.spawn(2)
    return np.random.default_rng(structure), np.random.default_rng(noise)


def draw_round(
    structure_rng: np.random.Generator,
    noise_rng: np.random.Generator,
    n: np.ndarray,
    n_min: int,
    tau: float,
    p_drop: float,
    d: int,
    private: bool,
) -> RoundDraws:
    """Draw one round's randomness for one run, in a fixed order.

    Structure stream: (1) ``u = random(m)``, device t active iff ``u_t >= p_drop``;
    (2) ``u = random(m)``, ``n_iter_t = lo + floor(u_t (n_min - lo + 1))`` with
    ``lo`` from :func:`fedlib.papers.hu2020.svm.expected_local_iterations`;
    (3) ``u = random((m, n_min))``, step s of device t visits coordinate
    ``floor(u_ts n_t)`` (only the first ``n_iter_t`` are used). Noise stream,
    private runs only: (4) ``standard_normal((m, n_max))`` for ``b`` (the first
    ``n_t`` entries of row t are used), (5) ``standard_normal((m, d))`` for ``p``.
    Every draw is made for every device, active or not.
    """
    n = np.asarray(n)
    m = len(n)
    active = structure_rng.random(m) >= p_drop
    lo, _ = expected_local_iterations(n_min, tau)
    n_iter = np.minimum(lo + np.floor(structure_rng.random(m) * (n_min - lo + 1)), n_min)
    coords = np.floor(structure_rng.random((m, n_min)) * n[:, None])
    coords = np.minimum(coords, (n - 1)[:, None]).astype(np.int64)
    z_alpha = z_upload = None
    if private:
        z_alpha = noise_rng.standard_normal((m, int(n.max())))
        z_upload = noise_rng.standard_normal((m, d))
    return RoundDraws(active, n_iter.astype(np.int64), coords, z_alpha, z_upload)


def sampling_rate(n: np.ndarray, n_min: int, tau: float) -> float:
    """``q = E[n_iter] / min_t n_t``, the largest per-device rate ``E[n_iter] / n_t``."""
    return expected_local_iterations(n_min, tau)[1] / float(np.min(n))


def run_mocha_dp(
    tasks: Sequence[tuple[np.ndarray, np.ndarray]] | PaddedTasks,
    configs: Sequence[Hu2020Config],
    inner_rounds: int,
    outer_rounds: int,
    n_min: int,
    seed: int,
    record_every: int = 1,
    accounted_rounds: int | None = None,
    *,
    run_indices: Sequence[int] | None = None,
    recompute_w: bool = True,
) -> Hu2020Result:
    """Run Algorithm 1 for a batch of configurations on the same data.

    Parameters
    ----------
    tasks : sequence of (X_t, y_t)
        Per device: features ``(n_t, d)`` and labels in {-1, +1}. Private runs
        need ``||x_ti|| <= 1`` (the paper L2-normalises).
    configs : sequence of Hu2020Config
        One per run.
    inner_rounds, outer_rounds : int
        K and H (>= 1).
    n_min : int
        Largest number of local SDCA steps per round (>= 1; at most ``min_t n_t``
        when a run is private, so that ``q <= 1``).
    seed : int
        Seed of every run's streams (:func:`run_generators`).
    record_every : int
        Record the objectives after every ``record_every``-th round and after
        the last one.
    accounted_rounds : int, optional
        Number of rounds K given to :func:`fedlib.privacy.hu2020_sigma`;
        default ``inner_rounds * outer_rounds`` (conservative); pass
        ``inner_rounds`` for the paper's reading (K inner rounds only).
    run_indices : sequence of int, optional
        Stream index of each run (default ``0, 1, ...``).
    recompute_w : bool
        Recompute ``W = (1/2 lam) Omega~ v`` from the uploads after each Omega
        update (see the module docstring).

    Returns
    -------
    Hu2020Result
    """
    data = pad_tasks(tasks)
    configs = list(configs)
    if not configs:
        raise ValueError("configs is empty: give at least one Hu2020Config.")
    for i, config in enumerate(configs):
        if not isinstance(config, Hu2020Config):
            raise TypeError(f"configs[{i}] must be a Hu2020Config, got {type(config).__name__}.")
    inner_rounds = check_count(inner_rounds, "inner_rounds", minimum=1)
    outer_rounds = check_count(outer_rounds, "outer_rounds", minimum=1)
    n_min = check_count(n_min, "n_min", minimum=1)
    record_every = check_count(record_every, "record_every", minimum=1)
    total = inner_rounds * outer_rounds
    K = total if accounted_rounds is None else check_count(accounted_rounds, "accounted_rounds", 1)
    indices = list(range(len(configs))) if run_indices is None else list(run_indices)
    if len(indices) != len(configs):
        raise ValueError(f"run_indices has {len(indices)} entries for {len(configs)} configs.")
    indices = [check_count(i, "run index") for i in indices]

    private = np.array([c.private for c in configs])
    if private.any():
        check_unit_norm(data)
        if n_min > data.n.min():
            raise ValueError(
                f"n_min = {n_min} exceeds the smallest device ({data.n.min()} examples): the "
                f"sampling rate q = E[n_iter] / n_t would exceed 1; use n_min <= min_t n_t."
            )
    q = np.array([sampling_rate(data.n, n_min, c.tau) for c in configs])
    sigmas = [
        tuple(c.noise_scale * s for s in hu2020_sigma(c.epsilon, c.delta, qi, 1.0 - c.p_drop,
                                                       K, c.r))
        if c.private else (0.0, 0.0)
        for c, qi in zip(configs, q, strict=True)
    ]
    sigma1 = np.array([s[0] for s in sigmas])
    sigma2 = np.array([s[1] for s in sigmas])

    engine = _Engine(data, configs, n_min, sigma1, sigma2)
    streams = [run_generators(seed, i) for i in indices]
    recorded, primal, dual = [], [], []
    for h in range(outer_rounds):
        for k in range(inner_rounds):
            draws = [
                draw_round(s, nz, data.n, n_min, c.tau, c.p_drop, data.d, c.private)
                for (s, nz), c in zip(streams, configs, strict=True)
            ]
            engine.round(draws)
            done = h * inner_rounds + k + 1
            if done % record_every == 0 or done == total:
                recorded.append(done)
                primal.append(primal_objective(engine.W, engine.omega, data, engine.lam))
                dual.append(dual_objective(engine.alpha(), engine.omega, data, engine.lam))
        engine.update_omega(recompute_w)
    return Hu2020Result(
        W=engine.W.copy(),
        omega=engine.omega.copy(),
        alpha=engine.alpha(),
        primal=np.stack(primal, axis=1),
        dual=np.stack(dual, axis=1),
        rounds=np.array(recorded, dtype=np.int64),
        sigma1=sigma1,
        sigma2=sigma2,
        q=q,
        run_indices=np.array(indices, dtype=np.int64),
    )


class _Engine:
    """State of a batch of runs; row ``b = run * m + t`` is device t of a run.

    The dual variables are kept signed, ``g_ti = y_ti alpha_ti`` (the hinge box
    is ``g in [0, 1]``), and the features as ``y_ti x_ti``, so a step reads
    ``g' = clip(g + (1/c - x~^T u) / ||x||^2, 0, 1)`` with ``u = W_t / c + r``,
    ``r = X_t Delta alpha_t`` and ``c = (beta / 2 lam) Omega_tt``: the same
    arithmetic as :func:`sdca_hinge_step`. Column ``n_max`` of ``g`` is a
    scratch slot and row ``m n_max`` of the features is zero, for the steps
    that must do nothing.
    """

    def __init__(
        self,
        data: PaddedTasks,
        configs: list[Hu2020Config],
        n_min: int,
        sigma1: np.ndarray,
        sigma2: np.ndarray,
    ) -> None:
        self.data = data
        self.n_min = n_min
        m, n_max, d = data.m, data.n_max, data.d
        runs = len(configs)
        self.runs, self.rows = runs, runs * m
        self.lam = np.array([c.lam for c in configs])
        self.xi = np.array([c.xi for c in configs])
        beta = self.xi * m
        self.half_beta_over_lam = beta / (2.0 * self.lam)
        signed = data.X * data.y[:, :, None]
        self.features = np.zeros((m * n_max + 1, d))
        self.features[: m * n_max] = signed.reshape(m * n_max, d)
        sq = np.einsum("ij,ij->i", self.features, self.features)
        with np.errstate(divide="ignore"):
            self.inv_sq = 1.0 / sq  # +inf for zero rows: the step then goes to the box edge
        self.zero_row = m * n_max
        # Noise scales per row: s1 sigma1 (s1 from the helper) and 2 xi sigma2 (times ||dalpha||).
        s1 = np.array(
            [
                [hu2020_sensitivities(c.lam, c.xi * m, int(nt), c.xi, 1.0)[0] for nt in data.n]
                for c in configs
            ]
        )
        s2_per_norm = np.array(
            [hu2020_sensitivities(c.lam, c.xi * m, 1, c.xi, 1.0)[1] for c in configs]
        )
        self.alpha_noise = (s1 * sigma1[:, None]).reshape(-1)
        self.upload_noise = np.repeat(s2_per_norm * sigma2, m)
        self.private = np.repeat(np.array([c.private for c in configs]), m)
        self.project = np.repeat(np.array([c.project_dual and c.private for c in configs]), m)
        self.any_private = bool(self.private.any())
        self.y_rows = np.tile(data.y, (runs, 1))  # (rows, n_max)
        self.g = np.zeros((self.rows, n_max + 1))
        self.W = np.zeros((runs, m, d))
        self.V = np.zeros((runs, m, d))
        self.omega = np.broadcast_to(np.eye(m) / m, (runs, m, m)).copy()
        self.row_base = (np.arange(self.rows) % m) * n_max
        self.slot_base = np.arange(self.rows) * (n_max + 1)
        # Work buffers of the SDCA steps.
        self.u = np.empty((self.rows, d))  # W_t / c + r
        self.r = np.empty((self.rows, d))  # X_t Delta alpha_t
        self.tmp = np.empty((self.rows, d))
        self.new = np.empty(self.rows)
        self.dg = np.empty(self.rows)

    def alpha(self) -> np.ndarray:
        n_max = self.data.n_max
        return (self.g[:, :n_max] * self.y_rows).reshape(self.runs, self.data.m, n_max)

    def round(self, draws: list[RoundDraws]) -> None:
        data, n_max, rows = self.data, self.data.n_max, self.rows
        active = np.concatenate([dr.active for dr in draws])
        n_iter = np.concatenate([dr.n_iter for dr in draws])
        coords = np.concatenate([dr.coords for dr in draws])  # (rows, n_min)
        steps = int(np.max(n_iter * active))  # later steps would all be idle
        coords = coords[:, :steps]
        on = active[:, None] & (np.arange(steps)[None, :] < n_iter[:, None])
        feature_rows = np.where(on, self.row_base[:, None] + coords, self.zero_row).T.copy()
        slots = np.where(on, self.slot_base[:, None] + coords, (self.slot_base + n_max)[:, None]).T
        inv_sq = self.inv_sq[feature_rows]

        scale = self.half_beta_over_lam[:, None] * np.diagonal(self.omega, axis1=1, axis2=2)
        inv_scale = (1.0 / scale).reshape(-1)
        np.multiply(self.W.reshape(rows, -1), inv_scale[:, None], out=self.u)
        self.r[...] = 0.0
        g_start = self.g[:, :n_max].copy()
        self._steps(feature_rows, slots, inv_sq, inv_scale)

        delta_g = self.g[:, :n_max] - g_start  # zero for padding and inactive rows
        xi_rows = np.repeat(self.xi, data.m)
        upload = xi_rows[:, None] * self.r
        new_g = g_start + xi_rows[:, None] * delta_g
        if self.any_private:
            z_alpha = np.concatenate([_noise_or_zero(dr.z_alpha, data.m, n_max) for dr in draws])
            z_up = np.concatenate([_noise_or_zero(dr.z_upload, data.m, data.d) for dr in draws])
            norms = np.sqrt(np.einsum("ij,ij->i", delta_g, delta_g))
            live = active & self.private
            new_g += (live * self.alpha_noise)[:, None] * (self.y_rows * z_alpha)
            upload += (live * self.upload_noise * norms)[:, None] * z_up
            if self.project.any():  # the variant: noisy duals back onto the box
                new_g[self.project] = np.clip(new_g[self.project], 0.0, 1.0)
        upload[~active] = 0.0
        self.g[:, :n_max] = new_g
        upload = upload.reshape(self.runs, data.m, data.d)
        self.V += upload
        self.W += np.matmul(self.omega, upload) / (2.0 * self.lam[:, None, None])

    def _steps(
        self, feature_rows: np.ndarray, slots: np.ndarray, inv_sq: np.ndarray, inv_scale: np.ndarray
    ) -> None:
        """The SDCA steps of one round, all rows at once (each step: gather, dot, update)."""
        u, r, tmp, new, dg = self.u, self.r, self.tmp, self.new, self.dg
        flat = self.g.reshape(-1)
        for s in range(len(feature_rows)):
            x = self.features[feature_rows[s]]
            slot = slots[s]
            g_old = flat[slot]
            np.einsum("ij,ij->i", x, u, out=new)
            np.subtract(inv_scale, new, out=new)
            new *= inv_sq[s]
            new += g_old
            np.maximum(new, 0.0, out=new)
            np.minimum(new, 1.0, out=new)
            flat[slot] = new
            np.subtract(new, g_old, out=dg)
            np.multiply(x, dg[:, None], out=tmp)
            u += tmp
            r += tmp

    def update_omega(self, recompute_w: bool) -> None:
        self.omega = omega_update(self.W)
        if recompute_w:
            self.W = np.matmul(self.omega, self.V) / (2.0 * self.lam[:, None, None])


def _noise_or_zero(z: np.ndarray | None, m: int, width: int) -> np.ndarray:
    return np.zeros((m, width)) if z is None else z
