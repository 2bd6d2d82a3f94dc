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
#
# **Figures 1b-1d and 2** (real data; Stack Overflow in 1b, federated EMNIST digits in
# 1c with a linear model and in 1d with a CNN whose output layer is personalized):
#
# - on EMNIST, local learning alone does poorly, yet a small $\alpha$ helps at small
#   $\varepsilon$; with the CNN, local-only models (a frozen random representation) are
#   very poor and a large $\alpha$ is best at poor privacy;
# - on Stack Overflow, without noise an intermediate $\alpha Q=10$ is best and with noise
#   a small $\alpha$ is;
# - Figure 2: the best personalized model gives a better accuracy-privacy trade-off than
#   local-only and global-only learning.

# %% tags=["parameters"]
scale = "quick"  # smoke (seconds) | quick (minutes on 2 cores) | paper (the paper's grid)
seed = 0  # seed of the ground truth; the sample stream uses seed + 1
device = "cpu"  # torch device of the engine
workers = 0  # local processes for the sweep (0 means all cores)
ray_address = ""  # address of a Ray cluster for the sweep, e.g. "auto" (empty: run locally)
claims_dir = "claims"  # where this notebook writes its evaluated claims (JSON)
emnist_source = "leaf-sample"  # leaf-sample (offline LEAF sample) | tff (TFF's HDF5 files)

# %%
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import Markdown, display
from myst_nb import glue

from fedlib.checks import check_device, check_seed, check_workers
from fedlib.claims import Claim, write_claims
from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.papers.ppsgd import experiment as fig1a
from fedlib.papers.ppsgd import experiment_emnist as emnist
from fedlib.plots import EPSILON_COLOR, excess_risk_panels, glue_claims_table, glue_figure
from fedlib.privacy import epsilon
from fedlib.tiers import check_scale

check_scale(scale)
check_seed(seed)
check_device(device)
check_workers(workers)
if emnist_source not in emnist.SOURCES:
    raise ValueError(f"emnist_source={emnist_source!r}; use one of {emnist.SOURCES}")
started = time.perf_counter()


def show_claims(evaluated: list) -> None:
    """List evaluated claims with their evidence."""
    display(Markdown("\n".join(
        f"- **{c.status}** `{c.claim_id}`: " + c.evidence.replace("*", "\\*")
        for c in evaluated)))


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
# The `paper` tier takes that minimum over the appendix grid (0.01 to 1.8); the
# `quick` tier over its upper seven steps (0.2 to 1.8): at $C=1$ the four smaller
# steps are never the best at any iteration, personalization or noise level of the
# full grid, while at $C=100$ they sometimes are, so the quick tier's $C=100$
# figure below can only be pessimistic. The grid of this build:

# %%
grid = fig1a.grid(scale)
display(pd.DataFrame({
    "tier": [scale],
    "users N": [grid.n_users],
    "dimension d": [grid.dim],
    "iterations": [grid.iterations],
    "step sizes (each curve: minimum over these)": [", ".join(f"{s:g}" for s in grid.steps)],
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
show_claims(claims)

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
# ## Federated EMNIST: data
#
# The paper uses 1,000 writers of TensorFlow Federated's federated EMNIST digits, about
# 100 training and 10 test digits each (TFF's own per-writer split). Those files are
# not available offline; `fedlib.data.femnist_tff` reads them (set
# `emnist_source = "tff"`). This build's source, and what the models are given:

# %%
emnist_grids = {model: emnist.grid(scale, model) for model in ("linear", "cnn")}
emnist_data = emnist.load_data("linear", emnist_grids["linear"].max_users,
                               emnist_grids["linear"].test_fraction, seed, emnist_source)
display(pd.DataFrame({
    "source": [emnist_data.source],
    "writers N": [emnist_data.n_users],
    "train digits": [len(emnist_data.y_train)],
    "test digits": [len(emnist_data.y_test)],
    "train digits per writer (median)": [int(pd.Series(emnist_data.train_counts()).median())],
}).T.rename(columns={0: ""}))

# %% [markdown]
# As in the authors' code the pixels are TFF's (1 = background, 0 = ink; the offline
# LEAF sample holds the same images and is mapped back to that polarity), targets are
# one-hot minus $0.1$ with the squared loss, each iteration samples $Q=10$ writers
# without replacement and each takes its next $m=10$ digits, and $\varepsilon$ is
# accounted with sampling rate $Q/N$ ({numref}`tab-ppsgd-privacy`). The grids of this
# build (the step sizes are those the best-step minimum of every curve is taken over):

# %%
display(pd.DataFrame({
    model: {
        "epochs": f"{g.epochs:g}" + (" (paper: 20)" if g.epochs != 20 else ""),
        "iterations T": "see below",
        "step sizes (curves: best of)": ", ".join(f"{v:g}" for v in g.steps),
        "alpha*Q": ", ".join(f"{a:g}" for a in g.alpha_q),
        "noise sigma": ", ".join(f"{v:g}" for v in g.sigmas),
        "clip C": f"{g.clip:g}",
        "runs": len(emnist.figure_configs(scale, model, seed)),
    }
    for model, g in emnist_grids.items()
}))


# %%
def accuracy_panels(curves: pd.DataFrame, alphas, sigmas) -> plt.Figure:
    """Test accuracy (best step size) against iterations, one panel per noise level."""
    alphas = [a for a in alphas if a in set(curves["alpha_q"])]
    palette = sns.color_palette("viridis", n_colors=len(alphas))
    fig, axes = plt.subplots(1, len(sigmas), figsize=(4.6 * len(sigmas), 3.5), squeeze=False,
                             sharey=True)
    for ax, sigma in zip(axes[0], sigmas, strict=True):
        panel = curves[curves["noise_multiplier"] == sigma]
        for color, alpha_q in zip(palette, alphas, strict=True):
            line = panel[panel["alpha_q"] == alpha_q].sort_values("iteration")
            label = r"$\alpha Q=\infty$" if alpha_q == float("inf") else rf"$\alpha Q={alpha_q:g}$"
            ax.plot(line["iteration"], line["accuracy"], color=color, marker=".", label=label)
        ax.set_xlabel("iterations")
        ax.set_ylabel("test accuracy (best step size)")
        ax.text(0.03, 0.97, rf"$\sigma={sigma:g}$", transform=ax.transAxes, va="top")
        private = panel[(panel["alpha_q"] > 0) & (panel["noise_multiplier"] > 0)]
        if len(private):
            eps = private.groupby("iteration")["epsilon"].first()
            twin = ax.twinx()
            twin.plot(eps.index, eps.values, "--", color=EPSILON_COLOR)
            twin.set_ylabel(r"$\varepsilon$ (RDP, $\delta=10^{-4}$)", color=EPSILON_COLOR)
            twin.tick_params(axis="y", colors=EPSILON_COLOR)
            twin.grid(False)
    axes[0][0].legend(loc="center right", fontsize=8)
    fig.tight_layout()
    return fig


def emnist_figure(model: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs (cached sweep) and best-over-steps curves of one EMNIST model."""
    runs = emnist.run_figure(scale, model, seed, device=device, source=emnist_source,
                             workers=workers or None, ray_address=ray_address or None,
                             progress=False)
    return runs, emnist.best_over_steps(runs)


# %% [markdown]
# ## Figure 1c: linear model

# %%
runs_1c, curves_1c = emnist_figure("linear")
iterations_1c = int(runs_1c["iterations"].iloc[0])
glue_figure("ppsgd_fig1c", accuracy_panels(curves_1c, emnist.FIGURE_ALPHA_Q,
                                           emnist_grids["linear"].panel_sigmas))
claims_1c = emnist.figure1_claims(curves_1c, "linear", emnist_grids["linear"].panel_sigmas, scale)
show_claims(claims_1c)

# %% [markdown]
# ```{glue:figure} ppsgd_fig1c
# :name: fig-ppsgd-1c
#
# Test accuracy of linear one-versus-all PPSGD on per-writer EMNIST digits (best step
# size at each evaluation), one panel per noise multiplier, $C=1$, $Q=10$, $m=10$.
# Dashed green: $\varepsilon$ of the released global model (RDP, $\delta=10^{-4}$).
# ```

# %%
display(Markdown(
    f"Figure 1c ran {iterations_1c} iterations "
    f"({emnist_grids['linear'].epochs:g} epochs over {emnist_data.n_users} writers). "
    "Best step size per curve at the last evaluation: "
    + ", ".join(
        f"$\\alpha Q$={r.alpha_q:g}, $\\sigma$={r.noise_multiplier:g}: {r.best_step:g}"
        for r in emnist.final(curves_1c).itertuples()
        if r.noise_multiplier in emnist_grids["linear"].panel_sigmas
        and r.alpha_q in emnist.FIGURE_ALPHA_Q
    ) + "."
))

# %% [markdown]
# ## Figure 1d: CNN with a personalized output layer
#
# The representation $\Phi_W$ is the authors' 4-layer CNN (convolution 16 filters
# $8\times8$ stride 2, ReLU, $2\times2$ max-pool stride 1, convolution 32 filters
# $4\times4$ stride 2, ReLU, max-pool, dense 512 to 32, ReLU); the output layer is
# additive, $(w+\theta_i)^\top \Phi_W(x)$, with $w$ and $W$ shared and $\theta_i$ personal.
# Each sampled writer's mean gradient over its $m$ digits, of *all* shared parameters
# together, is clipped to $C$, and noise goes on every shared parameter.

# %%
runs_1d, curves_1d = emnist_figure("cnn")
iterations_1d = int(runs_1d["iterations"].iloc[0])
glue_figure("ppsgd_fig1d", accuracy_panels(curves_1d, emnist.FIGURE_ALPHA_Q,
                                           emnist_grids["cnn"].panel_sigmas))
claims_1d = emnist.figure1_claims(curves_1d, "cnn", emnist_grids["cnn"].panel_sigmas, scale)
show_claims(claims_1d)

# %% [markdown]
# ```{glue:figure} ppsgd_fig1d
# :name: fig-ppsgd-1d
#
# As {numref}`fig-ppsgd-1c` for the CNN with a shared representation and a personalized
# output layer (best step size at each evaluation, $C=1$).
# ```

# %%
display(Markdown(
    f"Figure 1d ran {iterations_1d} iterations "
    f"({emnist_grids['cnn'].epochs:g} epoch(s); the paper ran 20) with the step sizes "
    + ", ".join(f"{v:g}" for v in emnist_grids["cnn"].steps) + "."
))

# %% [markdown]
# ## Figure 2: accuracy against privacy
#
# For each noise level, the final accuracy (best step size) of local-only
# ($\alpha Q=0$, perfectly private, a horizontal line), global-only ($\alpha Q=\infty$),
# an intermediate level ($\alpha Q=1$, faint: every other level), and the best over
# every level (the envelope, black). The synthetic task has no Figure 2 in the paper;
# the same construction on the Figure 1a runs (final excess risk, lower is better) is
# shown for comparison.

# %%
end_1c = emnist.final(curves_1c)
tradeoff_emnist = emnist.tradeoff(end_1c, "accuracy", higher_is_better=True)
end_1a = at_paper_clip[at_paper_clip["iteration"] == grid.iterations]
tradeoff_synthetic = emnist.tradeoff(end_1a, "excess_risk", higher_is_better=False)


def tradeoff_panel(ax, end: pd.DataFrame, table: pd.DataFrame, value: str, label: str) -> None:
    """One panel of Figure 2: value against epsilon (log x) per personalization level."""
    private = table[np.isfinite(table["epsilon"]) & (table["epsilon"] > 0)]
    eps = private["epsilon"]
    for alpha_q in sorted(end["alpha_q"].unique()):
        if alpha_q in (0.0, float("inf"), emnist.INTERMEDIATE_ALPHA_Q):
            continue
        line = end[(end["alpha_q"] == alpha_q) & end["noise_multiplier"].isin(
            private["noise_multiplier"])].sort_values("noise_multiplier")
        ax.plot(eps.values, line[value].values, color="#2ca02c", alpha=0.25, lw=0.8)
    ax.plot(eps, private["intermediate"], color="#2ca02c", marker="o",
            label=rf"intermediate $\alpha Q={emnist.INTERMEDIATE_ALPHA_Q:g}$")
    ax.plot(eps, private["global"], color="#1f77b4", marker="o", label="global only")
    ax.axhline(private["local"].iloc[0], color="#d62728", label="local only")
    ax.plot(eps, private["envelope"], color="black", lw=2.5, marker="s",
            label="best personalized")
    ax.set_xscale("log")
    ax.set_xlabel(r"privacy $\varepsilon$ (RDP, $\delta=10^{-4}$)")
    ax.set_ylabel(label)


fig2, (ax_emnist, ax_synth) = plt.subplots(1, 2, figsize=(10, 3.6))
tradeoff_panel(ax_emnist, end_1c, tradeoff_emnist, "accuracy", "EMNIST linear: test accuracy")
tradeoff_panel(ax_synth, end_1a, tradeoff_synthetic, "excess_risk", "synthetic: excess risk")
ax_synth.set_yscale("log")
ax_emnist.legend(fontsize=8)
fig2.tight_layout()
glue_figure("ppsgd_fig2", fig2)

claims_2 = [
    emnist.envelope_claim(tradeoff_emnist, "fig2-emnist-envelope-dominates", "EMNIST linear",
                          "test accuracy", True, scale,
                          paper_value="black curve above red and blue (Figure 2, right)"),
    emnist.envelope_claim(tradeoff_synthetic, "fig2-synthetic-envelope-dominates", "synthetic",
                          "excess risk", False, scale,
                          paper_value="not in the paper (its Figure 2 shows Stack Overflow "
                          "and EMNIST); the same construction on Figure 1a"),
]
show_claims(claims_2)
display(pd.concat({"EMNIST linear (accuracy)": tradeoff_emnist,
                   "synthetic (excess risk)": tradeoff_synthetic}))

# %% [markdown]
# ```{glue:figure} ppsgd_fig2
# :name: fig-ppsgd-2
#
# Accuracy-privacy trade-off at the end of training. Left: EMNIST, linear model (test
# accuracy, higher is better). Right: the synthetic task of {numref}`fig-ppsgd-1a`
# (excess risk, lower is better). Red: local only; blue: global only; green: $\alpha Q=1$
# (faint green: the other levels); black: the best level at each $\varepsilon$. Noise
# levels without noise ($\varepsilon=\infty$) are in the table above, not on the axis.
# ```
#
# The claim is checked point by point: at every private noise level of the grid, the
# best *strictly personalized* level ($0<\alpha Q<\infty$) must be at least as good as
# both local-only and global-only at the same $\varepsilon$ (the black envelope also
# includes the two extremes, so it dominates them by construction).
#
# Reading the verdicts: the EMNIST runs of the `quick` tier are short (3 epochs for
# the linear model, half an epoch for the CNN, against 20 in the paper). Personal
# models learn only from their own writer's digits, about a hundred, so they need
# many passes; the personalized curves of {numref}`fig-ppsgd-1c` are still rising at
# the end while global learning has levelled off, which favours global learning in
# every EMNIST comparison at this tier. The `paper` tier runs the paper's horizon.
# With the CNN, noise of multiplier $\sigma$ at $C=1$ lands on every one of the
# 26,000 shared parameters, and at this horizon no level of personalization
# recovers from it.

# %% [markdown]
# ## Figure 1b and Figure 2 (left): Stack Overflow
#
# The Stack Overflow panels were not run for this book: TensorFlow Federated's Stack
# Overflow files are not available offline, and `fedlib.data.stackoverflow` (which
# builds the paper's 500-user, 5,000-word, 80-tag subset from them) is tested on
# generated files only.

# %%
claims_so = [
    Claim(paper="ppsgd", claim_id=claim_id, status="NOT-RUN", text=text, scale=scale,
          evidence="TFF's Stack Overflow HDF5 files are not available offline; the subset "
          "builder is tested on generated files with their schema")
    for claim_id, text in (
        ("fig1b-intermediate-alpha-best-without-noise",
         "Stack Overflow, sigma=0: an intermediate alpha*Q=10 has the best top-1 accuracy"),
        ("fig1b-small-alpha-best-with-noise",
         "Stack Overflow, with noise: small alpha*Q is best at reasonable privacy levels"),
        ("fig2-stackoverflow-envelope-dominates",
         "Stack Overflow: the best personalized model dominates local-only and global-only"),
    )
]

# %% [markdown]
# ## Privacy
#
# The paper computes $\varepsilon$ with the moments (RDP) accountant, one Gaussian step
# per iteration that releases the global model, with sampling rate $Q/N$ (the users are
# sampled without replacement, while the accountant assumes Poisson sampling, as in the
# authors' code). The same noise under the PLD accountant, at the end of each figure's
# training:

# %%
n_users_1c = int(runs_1c["n_users"].iloc[0])
privacy = pd.concat([
    pd.DataFrame([
        {"figure": "1a synthetic", "users N": grid.n_users, "rate Q/N": 1.0,
         "iterations T": grid.iterations, "sigma": sigma,
         **{f"eps {name.upper()}": epsilon(sigma, 1.0, grid.iterations, fig1a.DELTA,
                                           accountant=name) for name in ("rdp", "pld")}}
        for sigma in grid.sigmas if sigma > 0
    ]),
    emnist.privacy_table(
        {"1c EMNIST linear": (n_users_1c, 10 / n_users_1c, iterations_1c),
         "1d EMNIST CNN": (n_users_1c, 10 / n_users_1c, iterations_1d)},
        {"1c EMNIST linear": emnist_grids["linear"].sigmas,
         "1d EMNIST CNN": emnist_grids["cnn"].sigmas},
    ),
], ignore_index=True)
glue("ppsgd_privacy_table", privacy.style.hide(axis="index").format(precision=3),
     display=False)

# %% [markdown]
# ```{glue:figure} ppsgd_privacy_table
# :name: tab-ppsgd-privacy
#
# $\varepsilon$ at $\delta=10^{-4}$ of the released global model at the end of training,
# under the RDP accountant the authors used and under the PLD accountant (tighter).
# Local-only runs ($\alpha Q=0$) release nothing.
# ```
#
# These $\varepsilon$ cover one training run. Choosing the step size and $\alpha$ by
# looking at test accuracy over the grid, as the paper (and this book) does, is not
# privately accounted: the tuning itself leaks information that no number here includes.

# %% [markdown]
# ## Claims

# %%
all_claims = [*claims, *claims_1c, *claims_1d, *claims_2, *claims_so]
Path(claims_dir).mkdir(parents=True, exist_ok=True)
write_claims(Path(claims_dir) / "ppsgd.json", all_claims)
glue_claims_table("ppsgd_claims_table", all_claims)

# %% [markdown]
# ```{glue:figure} ppsgd_claims_table
# :name: tab-ppsgd-claims
#
# The claims of Figures 1a-1d and 2, evaluated on this build's runs (Stack Overflow:
# not run). The same verdicts appear on the [scorecard](scorecard).
# ```

# %% [markdown]
# ## Deviations from the paper
#
# - The curves are those of the authors' code, which updates $\theta_i$ with the
#   full local step (not $\eta/N$ as Algorithm 1 prints) and scales the global
#   noise as $\sigma C/Q$; for the CNN their code also multiplies the local step by
#   $Q$, which is kept here.
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
# - EMNIST offline: the LEAF 5% sample (about 250 writers with at least 100 digits,
#   split 90/10 per writer with a seed) instead of 1,000 writers of TFF's files with
#   TFF's split; the sampling rate $Q/N$ is therefore about 4 times larger.
# - EMNIST users are sampled uniformly without replacement at every iteration and
#   walk through their own shuffled data; the authors' code instead visits users
#   until each has used up its epochs. Local-only runs release nothing and are run once.
# - The CNN starts from torch's default initialization (the authors': JAX stax's);
#   its loss averages the squared error over classes, the linear model's does not,
#   as in the authors' code.
# - At the `quick` tier the EMNIST linear model runs 3 epochs and the CNN half an epoch
#   (paper: 20), on the upper part of the paper's step-size grids and on fewer noise
#   and personalization levels (the CNN: step sizes 0.5 and 1 only); the synthetic
#   task uses the upper seven step sizes. The `paper` tier runs the appendix grids
#   (EMNIST: 20 epochs).
# - Stack Overflow (Figure 1b, Figure 2 left) is not run (data not available offline).

# %%
elapsed = time.perf_counter() - started
display(Markdown(f"This chapter ran at the `{scale}` tier in {elapsed:.0f} s."))
