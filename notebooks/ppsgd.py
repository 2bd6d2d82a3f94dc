# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Personalization improves privacy-accuracy trade-offs (Bietti et al. 2022)
#
# {cite:t}`bietti2022personalization` train an additive model: every user $i$ predicts
# with $(w + \theta_i)^\top x$, where the global part $w$ is learned with
# differentially private SGD (per-user clipping at $C$, Gaussian noise of multiplier
# $\sigma$) and the personal part $\theta_i$ is learned locally and never released.
# The personalization level $\alpha Q$ sets the ratio of the global to the local
# step size: $\alpha Q = 0$ is local learning (perfectly private), $\alpha Q=\infty$
# global learning. Their claim: tuning $\alpha$ gives a better privacy-accuracy
# trade-off than either extreme.
#
# **What the paper claims with Figure 1a** (synthetic data, exact generator):
#
# - global learning ($\alpha Q=\infty$) converges fastest at first in every panel,
# - but plateaus even without noise, because the model needs personalization;
# - smaller $\alpha$ is better in later iterations;
# - at large noise, local learning ($\alpha Q = 0$) wins after about 200 iterations.

# %% tags=["parameters"]
scale = "quick"  # smoke (seconds) | quick (minutes on 2 cores) | paper (the paper's grid)
seed = 0  # seed of the ground truth; the sample stream uses seed + 1
device = "cpu"  # torch device of the engine
workers = 0  # local processes for the sweep (0 means all cores)
ray_address = ""  # address of a Ray cluster for the sweep, e.g. "auto" (empty: run locally)
claims_dir = "claims"  # where this notebook writes its evaluated claims (JSON)

# %%
import time
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from fedlib.claims import write_claims
from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.experiments import ppsgd_synthetic as fig1a
from fedlib.experiments.tiers import check_device, check_scale, check_seed, check_workers
from fedlib.plots import excess_risk_panels, glue_claims_table, glue_figure
from fedlib.privacy import epsilon

check_scale(scale)
check_seed(seed)
check_device(device)
check_workers(workers)
started = time.perf_counter()

# %% [markdown]
# ## Setup
#
# The synthetic task is the paper's, exactly: $N=1000$ users, $d=100$,
# $\theta_0 \sim \mathcal N(0, 10^2 I)$, users share coordinates 1-95 and differ by
# $\mathcal N(0, 0.01^2)$ on coordinates 96-100, $x \sim \mathcal N(0, \mathrm{diag}(1/k))$,
# label noise $0.01$, fresh minibatches of $m=10$ per user and iteration, all users
# every iteration ($Q=N$, sampling rate 1), squared loss, clipping $C=1$. The excess
# risk has a closed form, $\frac1N\sum_i \lVert w+\theta_i-\theta_i^*\rVert_\Sigma^2$.
# As in the paper, each curve is the minimum over the step-size grid at every
# iteration, and $\varepsilon$ comes from the RDP accountant at $\delta=10^{-4}$.
# The grid of this build:

# %%
grid = fig1a.grid(scale)
display(pd.DataFrame({
    "tier": [scale],
    "users N": [grid.n_users],
    "dimension d": [grid.dim],
    "iterations": [grid.iterations],
    "step sizes": [", ".join(f"{s:g}" for s in grid.steps)],
    "alpha*Q": [", ".join(f"{a:g}" for a in grid.alpha_q)],
    "noise sigma": [", ".join(f"{s:g}" for s in grid.sigmas)],
    "runs": [len(fig1a.figure1a_configs(scale, seed))],
}).T.rename(columns={0: ""}))

# %% [markdown]
# ## Figure 1a: excess risk against iterations
#
# All runs of the grid go through one cached sweep; runs that share the data
# stream are simulated together in one vectorized pass.

# %%
runs = fig1a.run_figure1a(
    scale, seed, device=device, workers=workers or None, ray_address=ray_address or None,
    progress=False,
)
curves = fig1a.best_over_steps(runs)
at_paper_clip = curves[curves["clip"] == fig1a.FIGURE_CLIP]
figure = excess_risk_panels(at_paper_clip, fig1a.FIGURE_ALPHA_Q)
glue_figure("ppsgd_fig1a", figure)

# %% [markdown]
# ```{glue:figure} ppsgd_fig1a
# :name: fig-ppsgd-1a
#
# Excess risk of PPSGD on the synthetic task (minimum over step sizes at each
# iteration), one panel per noise multiplier $\sigma$, for the personalization
# levels the paper plots, at the paper's clipping norm $C=1$. Dashed green, right
# axis: the privacy guarantee $\varepsilon$ of the released global models (RDP accountant,
# $\delta=10^{-4}$); $\alpha Q=0$ releases nothing and is perfectly private.
# ```
#
# What {numref}`fig-ppsgd-1a` shows, claim by claim, is evaluated in code below.

# %%
claims = fig1a.evaluate_figure1a_claims(curves, scale)
Path(claims_dir).mkdir(parents=True, exist_ok=True)
write_claims(Path(claims_dir) / "ppsgd.json", claims)
glue_claims_table("ppsgd_claims_table", claims)
display(Markdown("\n".join(f"- **{c.status}** `{c.claim_id}`: {c.evidence}" for c in claims)))

# %% [markdown]
# ## Claims
#
# ```{glue:figure} ppsgd_claims_table
# :name: tab-ppsgd-claims
#
# The Figure 1a claims, evaluated on this build's runs. The same verdicts appear
# on the [scorecard](scorecard).
# ```

# %% [markdown]
# ## Why global learning is slow here: clipping
#
# With $C=1$ the mean of the clipped gradients has norm at most 1, so one
# noise-free global step moves $w$ by at most the step size. The shared optimum
# is far from the origin, so global-only learning cannot be fast at the start,
# and the floor it would plateau at (the best any single model shared by all
# users can do) is far below what 300 iterations reach:

# %%
task = AdditiveSyntheticTask(n_users=grid.n_users, dim=grid.dim, seed=seed)
display(pd.DataFrame({
    "quantity": [
        "distance of the shared optimum from the origin",
        "iterations a global-only run needs at least (largest step, C=1)",
        "excess-risk floor of any global-only model",
    ],
    "value": [
        f"{fig1a.shared_optimum_norm(task):.1f}",
        f"{fig1a.clipping_bound(task, max(grid.steps), fig1a.FIGURE_CLIP):.0f}",
        f"{fig1a.global_only_floor(task):.2e}",
    ],
}))

# %% [markdown]
# The same grid with a clipping norm a hundred times larger, which the authors'
# code also swept, shows what Figure 1a looks like when clipping does not bind:

# %%
figure_loose = excess_risk_panels(curves[curves["clip"] == max(grid.clips)],
                                  fig1a.FIGURE_ALPHA_Q)
glue_figure("ppsgd_fig1a_loose_clip", figure_loose)

# %% [markdown]
# ```{glue:figure} ppsgd_fig1a_loose_clip
# :name: fig-ppsgd-1a-loose-clip
#
# As {numref}`fig-ppsgd-1a`, with the largest clipping norm of this tier's grid
# instead of $C=1$ (same data stream, same noise multipliers; the noise added is
# proportional to $C$).
# ```

# %%
loose = curves[(curves["clip"] == max(grid.clips)) & (curves["noise_multiplier"] == 0)]
early_it = max(1, grid.iterations // 30)


def best_alpha(frame: pd.DataFrame, iteration: int) -> str:
    row = frame[frame["iteration"] == iteration].sort_values("excess_risk").iloc[0]
    return f"{row['alpha_q']:g} (risk {row['excess_risk']:.3g})"


display(Markdown(
    f"Without noise and with $C={max(grid.clips):g}$, the best personalization level is "
    f"$\\alpha Q=${best_alpha(loose, early_it)} at iteration {early_it} and "
    f"$\\alpha Q=${best_alpha(loose, grid.iterations)} at iteration {grid.iterations}. "
    f"The users' optima differ by only $0.01$ on five coordinates, so a single shared "
    f"model can reach an excess risk of {fig1a.global_only_floor(task):.1e}: global "
    "learning has no reason to plateau within the paper's 300 iterations, and the "
    "plateau the paper describes cannot come from this generator at this horizon."
))

# %% [markdown]
# ## Privacy
#
# The paper computes $\varepsilon$ with the moments (RDP) accountant, one
# Gaussian step per iteration at sampling rate $Q/N = 1$. The same noise under the
# PLD accountant, and under Opacus' RDP accountant as a cross-check:

# %%
accounting = pd.DataFrame([
    {"sigma": sigma, "iterations": grid.iterations,
     **{name: epsilon(sigma, 1.0, grid.iterations, fig1a.DELTA, accountant=name)
        for name in ("rdp", "pld", "opacus-rdp")}}
    for sigma in grid.sigmas if sigma > 0
])
display(accounting)

# %% [markdown]
# ## Deviations from the paper
#
# - The curves are those of the authors' code, which updates $\theta_i$ with the
#   full local step (not $\eta/N$ as Algorithm 1 prints) and scales the global
#   noise as $\sigma C/Q$.
# - The excess risk is $\frac1N\sum_i\lVert w+\theta_i-\theta_i^*\rVert^2_\Sigma$ as
#   the paper defines it; the authors' plotting code also averages over the $d$
#   coordinates, which divides every curve by $d=100$ without changing its shape.
# - The generator follows the paper's text ($d=100$, user deviations of
#   standard deviation $0.01$); the authors' script defaults differ ($d=20$,
#   deviations of $0.1$), so their figure may come from other settings.
# - Runs that share the data stream see the same samples and the same noise draws
#   (common random numbers), so step sizes and personalization levels are compared
#   on equal footing; the authors drew fresh data for every run.
# - Step size and $\alpha$ are tuned without privacy accounting, as in the paper.
# - Other panels of this paper's figures (Stack Overflow, EMNIST, Figure 2) are
#   not part of this chapter yet.

# %%
elapsed = time.perf_counter() - started
display(Markdown(f"This chapter ran at the `{scale}` tier in {elapsed:.0f} s."))
