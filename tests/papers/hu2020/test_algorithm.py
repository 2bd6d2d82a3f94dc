"""Hu et al. (2020) Algorithm 1: the batched engine against a plain loop, and its parts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from fedlib.papers.hu2020.algorithm import (
    Hu2020Config,
    draw_round,
    dual_objective,
    omega_update,
    predict_error,
    primal_objective,
    run_generators,
    run_mocha_dp,
    sampling_rate,
    sdca_hinge_step,
    w_of_alpha,
)
from fedlib.papers.hu2020.svm import pad_tasks
from fedlib.privacy import hu2020_sensitivities, hu2020_sigma


def make_tasks(
    m: int = 4, d: int = 6, sizes: tuple[int, ...] = (9, 12, 7, 10), seed: int = 0, noise=0.3
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Related linear tasks, features on the unit sphere, labels with some flips."""
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal(d)
    tasks = []
    for t in range(m):
        w = shared + 0.5 * rng.standard_normal(d)
        x = rng.standard_normal((sizes[t], d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        y = np.where(x @ w + noise * rng.standard_normal(sizes[t]) >= 0, 1.0, -1.0)
        tasks.append((x, y))
    return tasks


def reference_run(tasks, config, inner, outer, n_min, seed, run_index, K=None):
    """Algorithm 1 written the obvious way: one device, one step at a time."""
    m, d = len(tasks), tasks[0][0].shape[1]
    n = np.array([len(y) for _, y in tasks])
    lam, xi = config.lam, config.xi
    beta = xi * m
    q = sampling_rate(n, n_min, config.tau)
    sigma1 = sigma2 = 0.0
    if config.private:
        sigma1, sigma2 = hu2020_sigma(
            config.epsilon, config.delta, q, 1 - config.p_drop, K or inner * outer, config.r
        )
    structure, noise = run_generators(seed, run_index)
    alpha = [np.zeros(nt) for nt in n]
    W = np.zeros((m, d))
    V = np.zeros((m, d))
    omega = np.eye(m) / m
    primal = []
    for _ in range(outer):
        for _ in range(inner):
            dr = draw_round(
                structure, noise, n, n_min, config.tau, config.p_drop, d, config.private
            )
            uploads = np.zeros((m, d))
            for t, (X, y) in enumerate(tasks):
                if not dr.active[t]:
                    continue
                c = beta / (2 * lam) * omega[t, t]
                dalpha = np.zeros(n[t])
                r = np.zeros(d)
                for s in range(dr.n_iter[t]):
                    i = dr.coords[t, s]
                    a = alpha[t][i] + dalpha[i]
                    w_hat = W[t] + c * r
                    new = sdca_hinge_step(a, y[i], X[i] @ w_hat, X[i] @ X[i], c)
                    dalpha[i] += new - a
                    r += (new - a) * X[i]
                alpha[t] = alpha[t] + xi * dalpha
                uploads[t] = xi * (X.T @ dalpha)
                if config.private:
                    s1, s2 = hu2020_sensitivities(lam, beta, n[t], xi, np.linalg.norm(dalpha))
                    alpha[t] = alpha[t] + s1 * sigma1 * dr.z_alpha[t, : n[t]]
                    uploads[t] = uploads[t] + s2 * sigma2 * dr.z_upload[t]
            for t in range(m):
                W[t] += sum(omega[t, s] * uploads[s] for s in range(m)) / (2 * lam)
            V += uploads
            primal.append(primal_objective(W, omega, tasks, lam))
        omega = omega_update(W)
        W = omega @ V / (2 * lam)
    padded = np.zeros((m, n.max()))
    for t in range(m):
        padded[t, : n[t]] = alpha[t]
    return W, padded, omega, np.array(primal)


def assert_matches_reference(tasks, configs, inner, outer, n_min, seed, atol=1e-10):
    result = run_mocha_dp(tasks, configs, inner, outer, n_min, seed)
    for i, config in enumerate(configs):
        W, alpha, omega, primal = reference_run(tasks, config, inner, outer, n_min, seed, i)
        scale = max(1.0, np.abs(W).max())
        np.testing.assert_allclose(result.W[i], W, rtol=0, atol=atol * scale)
        np.testing.assert_allclose(result.alpha[i], alpha, rtol=0, atol=atol * scale)
        np.testing.assert_allclose(result.omega[i], omega, rtol=0, atol=atol)
        np.testing.assert_allclose(result.primal[i], primal, rtol=atol, atol=0)
    return result


def test_engine_matches_reference_non_private_batch():
    tasks = make_tasks()
    configs = [
        Hu2020Config(lam=0.05, xi=1.0),
        Hu2020Config(lam=0.3, xi=0.5, tau=0.6, p_drop=0.3),
        Hu2020Config(lam=0.01, xi=0.25, tau=1.0, p_drop=0.5),
    ]
    result = assert_matches_reference(tasks, configs, inner=6, outer=3, n_min=7, seed=11)
    assert np.all(np.isfinite(result.dual))
    assert np.all(result.sigma1 == 0) and np.all(result.sigma2 == 0)


def test_engine_matches_reference_private_batch():
    tasks = make_tasks(seed=1)
    configs = [
        Hu2020Config(lam=0.1, xi=1.0, epsilon=8.0),
        Hu2020Config(lam=0.02, xi=0.5, tau=0.5, p_drop=0.2, epsilon=1.0, r=2.0),
        Hu2020Config(lam=0.1, xi=1.0),
    ]
    result = assert_matches_reference(tasks, configs, inner=5, outer=2, n_min=6, seed=3)
    assert result.sigma1[0] > 0 and result.sigma1[2] == 0


def test_run_alone_equals_run_in_batch():
    tasks = make_tasks(seed=2)
    configs = [
        Hu2020Config(lam=0.1, xi=1.0, tau=0.5, p_drop=0.2),
        Hu2020Config(lam=0.05, xi=0.5, tau=1.0, p_drop=0.4, epsilon=2.0),
        Hu2020Config(lam=0.2, xi=0.7, tau=0.2, epsilon=20.0),
    ]
    batch = run_mocha_dp(tasks, configs, 4, 2, 6, seed=5, record_every=3)
    alone = run_mocha_dp(tasks, configs[1:2], 4, 2, 6, seed=5, record_every=3, run_indices=[1])
    np.testing.assert_allclose(alone.W[0], batch.W[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(alone.alpha[0], batch.alpha[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(alone.primal[0], batch.primal[1], rtol=1e-12)
    np.testing.assert_array_equal(batch.rounds, [3, 6, 8])
    assert alone.run_indices.tolist() == [1]
    other = run_mocha_dp(tasks, configs[1:2], 4, 2, 6, seed=5, run_indices=[0])
    assert not np.allclose(other.W[0], batch.W[1])


def test_sdca_step_minimises_the_one_coordinate_subproblem():
    rng = np.random.default_rng(4)
    for _ in range(200):
        d = 5
        x = rng.standard_normal(d)
        x *= rng.uniform(0.1, 1.0) / np.linalg.norm(x)
        y = rng.choice([-1.0, 1.0])
        w_t = rng.standard_normal(d)
        r = rng.standard_normal(d) * rng.uniform(0, 2)
        lam, beta, om = rng.uniform(0.01, 2), rng.uniform(0.5, 5), rng.uniform(0.05, 1)
        c = beta / (2 * lam) * om
        a = y * rng.uniform(0, 1)  # current value, feasible

        def objective(a_new, a=a, y=y, x=x, w_t=w_t, r=r, lam=lam, beta=beta, om=om):
            step = a_new - a
            return (
                -a_new * y + step * (x @ w_t) + beta / (4 * lam) * om * np.sum((r + step * x) ** 2)
            )

        new = sdca_hinge_step(a, y, x @ (w_t + c * r), x @ x, c)
        assert 0 <= new * y <= 1
        box = (min(0.0, y), max(0.0, y))
        best = minimize_scalar(objective, bounds=box, method="bounded", options={"xatol": 1e-12})
        assert objective(new) <= best.fun + 1e-9
        assert abs(new - best.x) < 1e-5


def test_sdca_step_zero_feature_goes_to_box_edge():
    assert sdca_hinge_step(0.3, 1.0, 0.0, 0.0, 2.0) == 1.0
    assert sdca_hinge_step(-0.3, -1.0, 0.0, 0.0, 2.0) == -1.0


def random_omega(rng: np.random.Generator, m: int) -> np.ndarray:
    a = rng.standard_normal((m, m))
    omega = a @ a.T + 0.1 * np.eye(m)
    return omega / np.trace(omega)


def test_objectives_against_the_paper_formulas():
    """P, D and w(alpha) written with the block matrices of the paper, equations (1), (5), (6)."""
    rng = np.random.default_rng(8)
    tasks = make_tasks()
    m, d, lam = 4, 6, 0.3
    n = [len(y) for _, y in tasks]
    X_big = np.zeros((m * d, sum(n)))  # X = diag(X_1, ..., X_m), columns are examples
    for t, (X, _) in enumerate(tasks):
        X_big[t * d : (t + 1) * d, sum(n[:t]) : sum(n[: t + 1])] = X.T
    y_all = np.concatenate([y for _, y in tasks])
    omega = random_omega(rng, m)
    omega_big = np.kron(omega, np.eye(d))
    W = rng.standard_normal((m, d))
    W_paper = W.T  # d x m, columns are the models
    hinge = sum(np.maximum(0, 1 - y * (X @ W[t])).sum() for t, (X, y) in enumerate(tasks))
    primal = hinge + lam * np.trace(W_paper @ np.linalg.inv(omega) @ W_paper.T)
    assert primal_objective(W, omega, tasks, lam) == pytest.approx(primal, rel=1e-12)

    a_all = y_all * rng.uniform(0, 1, len(y_all))  # feasible: alpha y in [0, 1]
    alpha = np.zeros((m, max(n)))
    for t in range(m):
        alpha[t, : n[t]] = a_all[sum(n[:t]) : sum(n[: t + 1])]
    v = X_big @ a_all
    dual = -np.sum(a_all * y_all) + v @ omega_big @ v / (4 * lam)
    assert dual_objective(alpha, omega, tasks, lam) == pytest.approx(dual, rel=1e-12)
    w_vec = omega_big @ v / (2 * lam)
    np.testing.assert_allclose(w_of_alpha(alpha, omega, tasks, lam), w_vec.reshape(m, d))
    # strong duality pieces: P(w(alpha)) + D(alpha) >= 0, and >= 0 for any W (weak duality)
    gap = primal_objective(w_vec.reshape(m, d), omega, tasks, lam) + dual
    assert gap >= 0
    assert primal + dual >= 0
    bad = alpha.copy()
    bad[0, 0] = 2.0 * tasks[0][1][0]
    assert dual_objective(bad, omega, tasks, lam) == math.inf
    batch = primal_objective(np.stack([W, 2 * W]), np.stack([omega, omega]), tasks, [lam, 1.0])
    assert batch[0] == pytest.approx(primal, rel=1e-12)
    assert batch[1] == pytest.approx(primal_objective(2 * W, omega, tasks, 1.0), rel=1e-12)


def test_predict_error_hand_example():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    tasks = [(X, np.array([1.0, 1.0, -1.0, 1.0])), (X[:2], np.array([-1.0, 1.0]))]
    W = np.array([[1.0, 0.0], [1.0, 0.0]])
    # device 0: scores 1, 0, -1, 0 -> wrong at the two zeros; device 1: scores 1, 0 -> both wrong
    assert predict_error(W, tasks) == pytest.approx((2 / 4 + 2 / 2) / 2)
    np.testing.assert_allclose(predict_error(np.stack([W, -W]), tasks), [0.75, (1 + 0.5) / 2])


def test_draw_round_distribution():
    structure, noise = run_generators(0, 0)
    n = np.array([20, 5, 13])
    counts, actives = [], []
    for _ in range(400):
        dr = draw_round(structure, noise, n, 10, 0.55, 0.3, 4, False)
        assert dr.z_alpha is None and dr.z_upload is None
        assert np.all((dr.coords >= 0) & (dr.coords < n[:, None]))
        counts.append(dr.n_iter)
        actives.append(dr.active)
    counts = np.concatenate(counts)
    assert set(np.unique(counts)) == set(range(5, 11))  # ceil(0.45 * 10) = 5 ... 10
    assert np.mean(actives) == pytest.approx(0.7, abs=0.05)
    assert sampling_rate(n, 10, 0.55) == pytest.approx(7.5 / 5)
    assert sampling_rate(n, 50, 0.7) == pytest.approx((15 + 50) / 2 / 5)  # (1 - 0.7) 50 -> 15
    assert sampling_rate(n, 10, 1.0) == pytest.approx(5.5 / 5)  # lo = max(1, 0) = 1
    dr = draw_round(structure, noise, n, 10, 0.0, 0.0, 4, True)
    assert dr.z_alpha.shape == (3, 20) and dr.z_upload.shape == (3, 4)
    assert np.all(dr.n_iter == 10) and np.all(dr.active)


def test_omega_update_hand_example_psd_trace_one():
    W = np.array([[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]])  # W W^T = diag(9, 16)
    np.testing.assert_allclose(omega_update(W), np.diag([3.0, 4.0]) / 7.0, atol=1e-15)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((5, 8))
    omega = omega_update(W)
    np.testing.assert_allclose(omega, omega.T, atol=1e-15)
    assert np.linalg.eigvalsh(omega).min() > 0
    assert math.isclose(np.trace(omega), 1.0, rel_tol=1e-13)
    root = omega / omega[0, 0]
    values, vectors = np.linalg.eigh(W @ W.T)
    expected = vectors @ np.diag(np.sqrt(values)) @ vectors.T
    np.testing.assert_allclose(root, expected / expected[0, 0], rtol=1e-10)
    batch = omega_update(np.stack([W, 2 * W]))
    np.testing.assert_allclose(batch, np.stack([omega, omega]), atol=1e-14)


def test_omega_update_clips_eigenvalues_of_rank_deficient_W():
    W = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 0.0]])  # W W^T has rank 1
    omega = omega_update(W)
    values = np.linalg.eigvalsh(omega)
    np.testing.assert_allclose(values[:2] * (math.sqrt(5) + 2 * math.sqrt(1e-7)), math.sqrt(1e-7))
    assert values.min() > 0 and math.isclose(np.trace(omega), 1.0, rel_tol=1e-13)
    np.testing.assert_allclose(omega_update(np.zeros((4, 3))), np.eye(4) / 4, atol=1e-15)


def test_duality_gap_closes_and_primal_decreases():
    tasks = make_tasks(m=3, d=5, sizes=(30, 25, 35), seed=7, noise=0.0)
    configs = [Hu2020Config(lam=0.05, xi=1.0), Hu2020Config(lam=0.2, xi=0.5, tau=0.5, p_drop=0.2)]
    result = run_mocha_dp(tasks, configs, 300, 3, 25, seed=0, record_every=5)
    gap = result.primal + result.dual
    assert np.all(gap >= -1e-9)
    relative = gap[:, -1] / np.abs(result.primal[:, -1])
    assert np.all(relative < 1e-3), relative
    # P(W = 0) = n = 90; the primal falls well below it and ends below its early values
    assert np.all(result.primal[:, -1] < 0.5 * 90)
    assert np.all(result.primal[:, -1] < result.primal[:, 0])
    assert np.all(gap[:, -1] < 1e-2 * gap[:, 0])
    # W stays the primal point of alpha under the final Omega
    for i, c in enumerate(configs):
        W = w_of_alpha(result.alpha[i], result.omega[i], tasks, c.lam)
        np.testing.assert_allclose(result.W[i], W, atol=1e-9 * np.abs(W).max())
    assert np.all(predict_error(result.W, tasks) < 0.2)


def test_noise_matches_calibration():
    m, n_t, d, n_min = 6, 400, 50, 40
    rng = np.random.default_rng(9)
    tasks = []
    for _ in range(m):
        x = rng.standard_normal((n_t, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        tasks.append((x, np.where(rng.random(n_t) < 0.5, 1.0, -1.0)))
    config = Hu2020Config(lam=0.1, xi=0.5, tau=0.5, p_drop=0.25, epsilon=4.0, delta=1e-4, r=2.0)
    clean = Hu2020Config(lam=0.1, xi=0.5, tau=0.5, p_drop=0.25)
    res = run_mocha_dp(
        tasks,
        [config, clean],
        1,
        1,
        n_min,
        2,
        accounted_rounds=100,
        run_indices=[0, 0],
        recompute_w=False,
    )
    q = (math.ceil(0.5 * n_min) + n_min) / 2 / n_t
    assert res.q[0] == pytest.approx(q)
    sigma1, sigma2 = hu2020_sigma(4.0, 1e-4, q, 0.75, 100, 2.0)
    assert res.sigma1[0] == pytest.approx(sigma1) and res.sigma2[0] == pytest.approx(sigma2)
    assert res.sigma1[1] == 0 and res.sigma2[1] == 0

    # Same structure draws: the runs differ by the noise only (one round, Omega = I/m).
    structure, noise = run_generators(2, 0)
    dr = draw_round(structure, noise, np.full(m, n_t), n_min, 0.5, 0.25, d, True)
    beta = 0.5 * m
    s1 = hu2020_sensitivities(0.1, beta, n_t, 0.5, 1.0)[0]
    b = res.alpha[0] - res.alpha[1]
    active = dr.active
    assert 0 < active.sum() < m
    np.testing.assert_allclose(b[active], s1 * sigma1 * dr.z_alpha[active], atol=1e-12)
    assert np.all(b[~active] == 0)
    assert np.std(b[active]) / (s1 * sigma1) == pytest.approx(1.0, abs=0.05)
    # W = (1/2 lam) Omega u with Omega = I/m, so p = 2 lam m (W_private - W_clean)
    p = 2 * 0.1 * m * (res.W[0] - res.W[1])
    clean_alpha = res.alpha[1] / 0.5  # alpha = xi * dalpha after one round from zero
    norms = np.linalg.norm(clean_alpha, axis=1)
    s2 = np.array([hu2020_sensitivities(0.1, beta, n_t, 0.5, nrm)[1] for nrm in norms])
    np.testing.assert_allclose(
        p[active], (s2 * sigma2)[active, None] * dr.z_upload[active], atol=1e-10
    )
    assert np.all(p[~active] == 0)


def test_private_dual_is_infinite_off_the_box():
    tasks = make_tasks()
    res = run_mocha_dp(tasks, [Hu2020Config(lam=0.1, xi=1.0, epsilon=1.0)], 3, 1, 5, seed=0)
    assert np.isinf(res.dual[0, -1])
    assert np.all(np.isfinite(res.primal))


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="lam"):
        Hu2020Config(lam=0.0, xi=1.0)
    with pytest.raises(ValueError, match="p_drop"):
        Hu2020Config(lam=1.0, xi=1.0, p_drop=1.0)
    with pytest.raises(ValueError, match="xi"):
        Hu2020Config(lam=1.0, xi=1.5)
    with pytest.raises(ValueError, match="tau"):
        Hu2020Config(lam=1.0, xi=1.0, tau=-0.1)
    with pytest.raises(ValueError, match="epsilon"):
        Hu2020Config(lam=1.0, xi=1.0, epsilon=-1.0)
    assert not Hu2020Config(lam=1.0, xi=1.0, epsilon=math.inf).private
    tasks = make_tasks()
    cfg = [Hu2020Config(lam=1.0, xi=1.0)]
    with pytest.raises(ValueError, match="at least one example"):
        run_mocha_dp([*tasks[:2], (np.zeros((0, 6)), np.zeros(0))], cfg, 1, 1, 2, seed=0)
    with pytest.raises(ValueError, match="labels must be -1 or \\+1"):
        run_mocha_dp([*tasks[:2], (tasks[2][0], (tasks[2][1] > 0).astype(float))], cfg, 1, 1, 2, 0)
    with pytest.raises(ValueError, match="same feature map"):
        run_mocha_dp([*tasks[:2], (tasks[2][0][:, :4], tasks[2][1])], cfg, 1, 1, 2, seed=0)
    with pytest.raises(ValueError, match="tasks is empty"):
        run_mocha_dp([], cfg, 1, 1, 2, seed=0)
    with pytest.raises(ValueError, match="configs is empty"):
        run_mocha_dp(tasks, [], 1, 1, 2, seed=0)
    private = [Hu2020Config(lam=1.0, xi=1.0, epsilon=1.0)]
    with pytest.raises(ValueError, match="n_min"):
        run_mocha_dp(tasks, private, 1, 1, 8, seed=0)
    with pytest.raises(ValueError, match="L2-normalise"):
        run_mocha_dp([(2 * x, y) for x, y in tasks], private, 1, 1, 2, seed=0)


def test_projected_duals_stay_in_their_box_and_change_nothing_without_noise():
    tasks = make_tasks()
    plain = [Hu2020Config(lam=0.1, xi=1.0), Hu2020Config(lam=0.1, xi=1.0, project_dual=True)]
    res = run_mocha_dp(tasks, plain, 3, 2, 5, seed=0, run_indices=[0, 0])
    np.testing.assert_array_equal(res.W[0], res.W[1])  # nothing to project without noise
    noisy = [Hu2020Config(lam=0.1, xi=1.0, epsilon=1.0),
             Hu2020Config(lam=0.1, xi=1.0, epsilon=1.0, project_dual=True)]
    res = run_mocha_dp(tasks, noisy, 3, 2, 5, seed=0, run_indices=[0, 0])
    assert np.isinf(res.dual[0, -1])  # as written: noisy duals leave the box
    assert np.all(np.isfinite(res.dual[1]))  # projected: always a feasible dual
    data = pad_tasks(tasks)
    signed = res.alpha[1] * data.y
    assert signed.min() >= 0.0 and signed.max() <= 1.0
    assert not np.array_equal(res.W[0], res.W[1])
    with pytest.raises(ValueError, match="project_dual must be True or False"):
        Hu2020Config(lam=0.1, xi=1.0, project_dual=1)
