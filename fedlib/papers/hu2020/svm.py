"""The multi-task SVM of Hu et al. (2020): data layout, objectives, Omega update, SDCA step.

Notation follows the paper (section IV) with the models stored as *rows*: ``W``
has shape ``(m, d)`` (row t is device t's model w_t; the paper's W is its
transpose), ``omega`` has shape ``(m, m)``. Everything accepts an optional
leading batch axis of runs: ``W`` ``(R, m, d)``, ``omega`` ``(R, m, m)``, ``lam``
``(R,)``.

Normalisation (the paper's, equation (1)): losses are *summed*, not averaged,
and the regulariser has no factor 1/2::

    P(W, Omega) = sum_t sum_i hinge(w_t^T x_ti, y_ti) + lam tr(W_p Omega^{-1} W_p^T)
    D(alpha)    = sum_t sum_i l*(-alpha_ti) + (1 / 4 lam) ||X alpha||^2_{Omega~}
    w(alpha)    = (1 / 2 lam) Omega~ X alpha,       Omega~ = Omega (x) I_d

with ``W_p = W.T`` (d x m), ``hinge(z, y) = max(0, 1 - y z)`` and its conjugate
``l*(-a) = -a y`` on the box ``a y in [0, 1]`` (+inf outside). Block t of ``X
alpha`` is ``v_t = sum_i alpha_ti x_ti``, so ``||X alpha||^2_{Omega~} = sum_st
Omega_st v_s^T v_t`` and row t of ``w(alpha)`` is ``(1/2 lam) sum_s Omega_ts v_s``.
Minimising ``P`` over ``W`` for fixed ``Omega`` equals ``-min D``, so the duality
gap ``P(W, Omega) + D(alpha)`` is >= 0 for every ``W`` and every feasible
``alpha`` (MOCHA, Smith et al. 2017, uses per-task means and ``lam / 2``
instead; the algebra is otherwise the same).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "EIGENVALUE_FLOOR",
    "FEASIBILITY_TOLERANCE",
    "PaddedTasks",
    "dual_objective",
    "omega_update",
    "pad_tasks",
    "predict_error",
    "primal_objective",
    "sdca_hinge_step",
    "w_of_alpha",
]

EIGENVALUE_FLOOR = 1e-7
"""Eigenvalues of ``W W^T`` are raised to at least this before the square root (as MOCHA)."""

FEASIBILITY_TOLERANCE = 1e-9
"""How far ``alpha_ti y_ti`` may leave [0, 1] before the dual objective counts as +inf."""

NORM_TOLERANCE = 1e-9
"""How far ``||x_ti||`` may exceed 1 when the privacy analysis needs ``||x|| <= 1``."""


@dataclass(frozen=True, eq=False)
class PaddedTasks:
    """Every device's data padded to the largest ``n_t``.

    Attributes
    ----------
    X : ndarray, shape (m, n_max, d)
        Features, zero rows beyond ``n_t``.
    y : ndarray, shape (m, n_max)
        Labels in {-1, +1}, zero beyond ``n_t`` (so ``y`` doubles as the mask).
    n : ndarray of int, shape (m,)
        Number of examples per device.
    """

    X: np.ndarray
    y: np.ndarray
    n: np.ndarray

    @property
    def m(self) -> int:
        return self.X.shape[0]

    @property
    def n_max(self) -> int:
        return self.X.shape[1]

    @property
    def d(self) -> int:
        return self.X.shape[2]

    @property
    def mask(self) -> np.ndarray:
        return self.y != 0


def pad_tasks(tasks: Sequence[tuple[np.ndarray, np.ndarray]] | PaddedTasks) -> PaddedTasks:
    """Validate the per-device data and pad it to a common length.

    Parameters
    ----------
    tasks : sequence of (X_t, y_t)
        ``X_t`` of shape ``(n_t, d)`` (finite floats, the same ``d`` for every
        device, ``n_t >= 1``) and ``y_t`` of shape ``(n_t,)`` with values in {-1, +1}.

    Returns
    -------
    PaddedTasks
    """
    if isinstance(tasks, PaddedTasks):
        return tasks
    tasks = list(tasks)
    if not tasks:
        raise ValueError("tasks is empty: give one (X_t, y_t) pair per device.")
    features, labels = [], []
    for t, task in enumerate(tasks):
        if len(task) != 2:
            raise ValueError(f"tasks[{t}] must be a pair (X_t, y_t), got {len(task)} items.")
        x = np.asarray(task[0], dtype=np.float64)
        y = np.asarray(task[1], dtype=np.float64)
        if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
            raise ValueError(
                f"tasks[{t}]: X_t must be a non-empty 2-D array (n_t, d) with n_t >= 1 and "
                f"d >= 1, got shape {x.shape}; every device needs at least one example."
            )
        if y.shape != (x.shape[0],):
            raise ValueError(
                f"tasks[{t}]: y_t must have shape ({x.shape[0]},) to match X_t, got {y.shape}."
            )
        if not np.all(np.isfinite(x)):
            raise ValueError(f"tasks[{t}]: X_t contains NaN or inf.")
        if not np.all((y == 1) | (y == -1)):
            bad = np.unique(y[(y != 1) & (y != -1)])[:5]
            raise ValueError(
                f"tasks[{t}]: labels must be -1 or +1, found {bad.tolist()}; map a binary "
                f"label b in {{0, 1}} to 2 b - 1."
            )
        if features and x.shape[1] != features[0].shape[1]:
            raise ValueError(
                f"tasks[{t}] has d = {x.shape[1]} features but tasks[0] has "
                f"d = {features[0].shape[1]}: every device must use the same feature map."
            )
        features.append(x)
        labels.append(y)
    n = np.array([len(y) for y in labels], dtype=np.int64)
    m, n_max, d = len(features), int(n.max()), features[0].shape[1]
    X = np.zeros((m, n_max, d))
    Y = np.zeros((m, n_max))
    for t, (x, y) in enumerate(zip(features, labels, strict=True)):
        X[t, : len(y)] = x
        Y[t, : len(y)] = y
    return PaddedTasks(X=X, y=Y, n=n)


def check_unit_norm(data: PaddedTasks) -> None:
    """Raise unless every feature vector has L2 norm <= 1 (the sensitivities assume it)."""
    largest = float(np.sqrt(np.max(np.einsum("mnd,mnd->mn", data.X, data.X))))
    if largest > 1.0 + NORM_TOLERANCE:
        raise ValueError(
            f"private runs need ||x_ti||_2 <= 1 for every example (the sensitivities of the "
            f"paper's Corollaries 2-3 assume it), got a norm of {largest:.6g}; L2-normalise "
            f"the features, e.g. X / np.linalg.norm(X, axis=1, keepdims=True)."
        )


def _lam_array(lam: float | np.ndarray, batch_shape: tuple[int, ...]) -> np.ndarray:
    lam = np.asarray(lam, dtype=np.float64)
    if np.any(~(lam > 0)) or not np.all(np.isfinite(lam)):
        raise ValueError(f"lam must be finite and > 0, got {lam!r}.")
    return np.broadcast_to(lam, batch_shape)


def _scores(data: PaddedTasks, W: np.ndarray) -> np.ndarray:
    """``x_ti^T w_t`` for every example: shape (*batch, m, n_max)."""
    if W.ndim < 2 or W.shape[-2:] != (data.m, data.d):
        raise ValueError(f"W must have shape (..., {data.m}, {data.d}), got {W.shape}.")
    batch = W.shape[:-2]
    W3 = W.reshape(-1, data.m, data.d)  # (R, m, d)
    scores = np.matmul(data.X, np.ascontiguousarray(W3.transpose(1, 2, 0)))  # (m, n_max, R)
    return scores.transpose(2, 0, 1).reshape(*batch, data.m, data.n_max)


def _features_times_alpha(data: PaddedTasks, alpha: np.ndarray) -> np.ndarray:
    """Block t of ``X alpha``, ``v_t = sum_i alpha_ti x_ti``: shape (*batch, m, d)."""
    if alpha.ndim < 2 or alpha.shape[-2:] != (data.m, data.n_max):
        raise ValueError(
            f"alpha must be padded to shape (..., {data.m}, {data.n_max}), got {alpha.shape}."
        )
    batch = alpha.shape[:-2]
    a3 = alpha.reshape(-1, data.m, data.n_max)
    v = np.matmul(np.ascontiguousarray(a3.transpose(1, 0, 2)), data.X)  # (m, R, d)
    return v.transpose(1, 0, 2).reshape(*batch, data.m, data.d)


def _finish(value: np.ndarray) -> float | np.ndarray:
    return float(value) if value.ndim == 0 else value


def primal_objective(
    W: np.ndarray,
    omega: np.ndarray,
    tasks: Sequence[tuple[np.ndarray, np.ndarray]] | PaddedTasks,
    lam: float | np.ndarray,
) -> float | np.ndarray:
    """``P(W, Omega) = sum_t sum_i max(0, 1 - y_ti w_t^T x_ti) + lam tr(W_p Omega^{-1} W_p^T)``.

    Parameters
    ----------
    W : ndarray, shape (m, d) or (R, m, d)
        Models as rows.
    omega : ndarray, shape (m, m) or (R, m, m)
        Task relationship matrix (symmetric positive definite).
    tasks : sequence of (X_t, y_t) or PaddedTasks
    lam : float or ndarray of shape (R,)

    Returns
    -------
    float or ndarray of shape (R,)
    """
    data = pad_tasks(tasks)
    W = np.asarray(W, dtype=np.float64)
    omega = np.asarray(omega, dtype=np.float64)
    lam = _lam_array(lam, W.shape[:-2])
    margins = data.y * _scores(data, W)
    loss = np.sum(np.maximum(0.0, 1.0 - margins) * data.mask, axis=(-2, -1))
    reg = np.sum(W * np.linalg.solve(omega, W), axis=(-2, -1))
    return _finish(loss + lam * reg)


def dual_objective(
    alpha: np.ndarray,
    omega: np.ndarray,
    tasks: Sequence[tuple[np.ndarray, np.ndarray]] | PaddedTasks,
    lam: float | np.ndarray,
) -> float | np.ndarray:
    """``D(alpha) = -sum alpha_ti y_ti + (1/4 lam) ||X alpha||^2_{Omega~}``, +inf off the box.

    Parameters
    ----------
    alpha : ndarray, shape (m, n_max) or (R, m, n_max)
        Dual variables padded like :func:`pad_tasks` (entries beyond ``n_t`` are
        ignored). The conjugate of the hinge loss is finite only where
        ``alpha_ti y_ti`` lies in [0, 1]; outside (up to
        :data:`FEASIBILITY_TOLERANCE`, e.g. after the noise of a private run)
        the objective is ``+inf``.
    omega : ndarray, shape (m, m) or (R, m, m)
    tasks : sequence of (X_t, y_t) or PaddedTasks
    lam : float or ndarray of shape (R,)

    Returns
    -------
    float or ndarray of shape (R,)
    """
    data = pad_tasks(tasks)
    alpha = np.asarray(alpha, dtype=np.float64)
    v = _features_times_alpha(data, alpha)
    alpha = alpha * data.mask
    omega = np.asarray(omega, dtype=np.float64)
    lam = _lam_array(lam, alpha.shape[:-2])
    signed = alpha * data.y
    feasible = np.all(
        (signed >= -FEASIBILITY_TOLERANCE) & (signed <= 1.0 + FEASIBILITY_TOLERANCE),
        axis=(-2, -1),
    )
    quad = np.sum(v * np.matmul(omega, v), axis=(-2, -1))
    value = -np.sum(signed, axis=(-2, -1)) + quad / (4.0 * lam)
    return _finish(np.where(feasible, value, np.inf))


def w_of_alpha(
    alpha: np.ndarray,
    omega: np.ndarray,
    tasks: Sequence[tuple[np.ndarray, np.ndarray]] | PaddedTasks,
    lam: float | np.ndarray,
) -> np.ndarray:
    """The primal point of a dual point, ``w(alpha) = (1/2 lam) Omega~ X alpha``, as rows.

    Shapes as in :func:`dual_objective`; returns ``(m, d)`` or ``(R, m, d)``.
    """
    data = pad_tasks(tasks)
    alpha = np.asarray(alpha, dtype=np.float64)
    lam = _lam_array(lam, alpha.shape[:-2])
    v = _features_times_alpha(data, alpha)
    return np.matmul(np.asarray(omega, dtype=np.float64), v) / (2.0 * lam[..., None, None])


def omega_update(W: np.ndarray) -> np.ndarray:
    """``Omega = (W_p^T W_p)^{1/2} / tr((W_p^T W_p)^{1/2})`` (paper equation (3)).

    ``W`` holds the models as **rows**, shape ``(m, d)`` (or ``(R, m, d)``), so
    ``W_p^T W_p = W W^T`` is the ``(m, m)`` Gram matrix of the models. Its
    eigenvalues are raised to at least :data:`EIGENVALUE_FLOOR` before the
    square root, always (MOCHA's code does so whenever one of them is negative,
    which rounding makes happen for any rank-deficient ``W``). The result is
    symmetric positive definite with trace 1; ``W = 0`` gives ``I / m``.

    Returns
    -------
    ndarray, shape (m, m) or (R, m, m)
    """
    W = np.asarray(W, dtype=np.float64)
    gram = np.matmul(W, np.swapaxes(W, -1, -2))
    gram = 0.5 * (gram + np.swapaxes(gram, -1, -2))
    values, vectors = np.linalg.eigh(gram)
    roots = np.sqrt(np.maximum(values, EIGENVALUE_FLOOR))
    root = np.matmul(vectors * roots[..., None, :], np.swapaxes(vectors, -1, -2))
    root = 0.5 * (root + np.swapaxes(root, -1, -2))
    return root / np.sum(roots, axis=-1)[..., None, None]


def sdca_hinge_step(
    alpha: np.ndarray | float,
    y: np.ndarray | float,
    margin: np.ndarray | float,
    sq_norm: np.ndarray | float,
    scale: np.ndarray | float,
) -> np.ndarray | float:
    """Exact minimiser of the local subproblem G_t^beta along one coordinate (hinge loss).

    With ``a`` the coordinate's current value (``alpha_ti`` plus its local change
    so far), ``w_hat = w_t + (beta / 2 lam) Omega_tt X_t Delta alpha_t`` and
    ``c = (beta / 2 lam) Omega_tt``, the subproblem restricted to coordinate i is
    ``-a' y + (a' - a) x^T w_t + (beta / 4 lam) Omega_tt ||X_t Delta alpha_t +
    (a' - a) x||^2`` on the box ``a' y in [0, 1]``; its minimiser is::

        a' = y clip(y a + (1 - y x^T w_hat) / (c ||x||^2), 0, 1)

    (a zero ``x`` makes the objective linear: ``a' = y``).

    Parameters
    ----------
    alpha : current value ``a``.
    y : label in {-1, +1}.
    margin : ``x^T w_hat``.
    sq_norm : ``||x||^2``.
    scale : ``c = (beta / 2 lam) Omega_tt`` (> 0).

    Returns
    -------
    The new value ``a'`` (same shape as the broadcast inputs).
    """
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(divide="ignore"):
        step = (1.0 - y * np.asarray(margin, dtype=np.float64)) / (
            np.asarray(scale, dtype=np.float64) * np.asarray(sq_norm, dtype=np.float64)
        )
    new = y * np.clip(y * np.asarray(alpha, dtype=np.float64) + step, 0.0, 1.0)
    return _finish(new)


def predict_error(
    W: np.ndarray, tasks: Sequence[tuple[np.ndarray, np.ndarray]] | PaddedTasks
) -> float | np.ndarray:
    """Mean over devices of each device's 0-1 error of ``sign(X_t w_t)``.

    A score of exactly 0 counts as an error (so ``W = 0`` has error 1).

    Parameters
    ----------
    W : ndarray, shape (m, d) or (R, m, d)
    tasks : sequence of (X_t, y_t) or PaddedTasks (e.g. the test split)

    Returns
    -------
    float or ndarray of shape (R,)
    """
    data = pad_tasks(tasks)
    W = np.asarray(W, dtype=np.float64)
    wrong = ((data.y * _scores(data, W)) <= 0) & data.mask
    per_device = np.sum(wrong, axis=-1) / data.n
    return _finish(np.mean(per_device, axis=-1))


def expected_local_iterations(n_min: int, tau: float) -> tuple[int, float]:
    """Smallest local iteration count and the mean of n_iter ~ U{lo, ..., n_min}.

    ``lo = max(1, ceil((1 - tau) n_min))`` (the product is rounded to 9 decimals
    first so that, e.g., ``(1 - 0.7) * 50`` gives 15, not 16).
    """
    lo = max(1, math.ceil(round((1.0 - tau) * n_min, 9)))
    lo = min(lo, n_min)
    return lo, 0.5 * (lo + n_min)
