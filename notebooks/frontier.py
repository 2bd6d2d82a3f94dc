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
# # The five papers' methods side by side on one privacy-utility frontier
#
# Each of the five papers measures its own method in its own setting: its own data, model,
# privacy unit and noise calibration. This chapter runs their methods on the same
# federations, with the same softmax (multinomial logistic regression) model, tuned the
# same way, at the same privacy targets calibrated by the same accountant, and compares
# them: mean client test accuracy against $\varepsilon$, the accuracy of the worst tenth
# of the clients, the spread of the clients' losses, the bytes each round sends upstream
# and the CPU time of a fit. None of the papers makes a claim about this comparison: its
# results are findings of the companion.

# %% tags=["parameters"]
scale = "quick"  # smoke (seconds) | quick (about a quarter of an hour) | paper (hours)
seed = 0  # first of the tier's seeds (two or three): splits, sampling, noise
device = "cpu"  # the methods run on the CPU
workers = 0  # local processes for the sweep (0 means all cores)
ray_address = ""  # address of a Ray cluster for the sweep, e.g. "auto" (empty: run locally)
claims_dir = ""  # where the findings go (empty: the book's folder, which the scorecard reads)

# %%
from IPython.display import Markdown, display

from fedlib.frontier import claims as fr_claims
from fedlib.frontier import experiment as fx
from fedlib.frontier import figures as fr_figures
from fedlib.render.chapter import open_chapter, show_claims
from fedlib.render.glue import glue_figure
from fedlib.sweeps import run_parts

chapter = open_chapter("frontier", scale=scale, seed=seed, device=device, workers=workers,
                       ray_address=ray_address, claims_dir=claims_dir, cpu_only=True)
setup = fx.tier(scale)

# %% [markdown]
# ## Two threat models
#
# The papers protect different things against different parties, so a method is run in
# one of two privacy units, each stated in full:
#
# (a) **Example-level DP of everything a client sends, honest-but-curious server**
#   (`example`). Each client clips every example's gradient and adds Gaussian noise to
#   each local step before anything leaves the device (local DP-SGD, Poisson sampling of
#   examples). The server and anyone who sees the uploads learn an $(\varepsilon,\delta)$-DP
#   function of each example; whatever the server computes from the uploads is
#   post-processing. A client is accounted over all the local steps of all the rounds it
#   took part in.
#
# (b) **User-level DP of what the server releases, trusted aggregator** (`user`). Each
#   client's whole update is clipped; the server adds Gaussian noise once to the sum of the
#   clipped updates of the clients sampled that round. The released global model is an
#   $(\varepsilon,\delta)$-DP function of each client's whole data set; the server itself
#   sees the raw updates. What a client keeps for itself (a personal model) is never
#   released and not covered (joint DP). Every client is accounted over every round run.
#
# Local training, which sends nothing, spends nothing in either unit and is the floor that
# federation has to beat.
#
# ## Which method runs in which unit
#
# A method runs in a unit only where the unit's guarantee holds for what the method
# sends or releases; otherwise it refuses, and the reason is part of the method's code:

# %%
display(fr_claims.units_table())

# %% [markdown]
# ## How each method is adapted from its paper's setting
#
# - **local**: every client trains its own model alone; nothing is sent.
# - **dp-fedavg-ft** (the baseline the papers measure against): DP-FedAvg, local DP-SGD
#   uploads in the example unit and clipped updates noised once at the server in the
#   user unit (McMahan et al. 2018), then every client fine-tunes the released global
#   model on its own data (post-processing, no privacy cost).
# - **dp-ditto** (DP-Ditto): the paper's personal objective
#   $(1-\lambda)F_i(v)+\frac{\lambda}{2}\lVert v-w\rVert^2$ kept; the global model is
#   DP-FedAvg on the softmax model. The paper clips and noises each uploaded model with a
#   closed-form example-level sensitivity; here the upload is made DP by local DP-SGD
#   (example unit, the paper's) or by the noised aggregate (user unit). The personal model
#   is never sent and costs nothing.
# - **ppsgd** (Bietti et al.): a global model plus a never-released personal additive
#   model per client, with the paper's rule for the two step sizes; the squared loss on
#   one-vs-all targets becomes the softmax cross-entropy, and each sampled client takes a
#   few joint local steps (one step is the paper's iteration). User unit only, the paper's
#   (joint DP of the global model): the personal model, trained without clipping or noise,
#   enters every gradient a client uploads, so no per-example clipping bounds the uploads.
# - **pfa** and **pfa+** (Liu et al.): the private clients' noisy updates are projected
#   onto the top-$k$ subspace of the public clients' updates (the paper's aggregation code
#   is reused); PFA+ has the private clients send only the $k$ coefficients. The paper's
#   public clients are the 10% with the largest budgets; with one common target there is no
#   budget to rank by, so a seeded random 10% act as public, spend the same target and
#   take part every round, and the budget weights are all equal: the projection acts only
#   as a denoiser, and the advantage the paper draws from heterogeneous budgets is absent
#   by construction. Example unit only: the user unit adds the noise once to the aggregate,
#   so there is no per-client noisy update to project.
# - **padpfl** (Talaei and Izadi): impact-factor weighted averaging with FedProx local
#   training. The paper sets the factors by hand from data quality and size; these
#   federations have no corrupted groups, so the factors follow client size,
#   $p_i\propto n_i^{\gamma}$ with $\gamma\in\{0, 1\}$ tuned (its scenario 3). The paper's
#   closed-form noise (with a sensitivity argument that does not hold) is replaced by exact
#   accounting; in the user unit the calibrated noise is split between the clients and the
#   server, as the paper splits it, and in the example unit the local solver is DP-SGD and
#   the server adds nothing (its noise cannot protect an upload from the server itself).
# - **hu-mtl** (Hu et al.): federated multi-task learning with a learned task-relationship
#   matrix $\Omega$, solved in the primal on the softmax model instead of MOCHA's dual on
#   linear SVMs: the server holds one model per client, applies the sampled clients' DP-SGD
#   updates, then the exact proximal step of $\lambda\,\mathrm{tr}(W\Omega^{-1}W^\top)$,
#   and recomputes $\Omega$ in closed form every few rounds. Example unit only, the paper's:
#   what the server would release is a set of per-client models mixed through $\Omega$,
#   not one aggregate on which noise can be added once.
#
# ## One accountant, one target, tuning on validation data
#
# Every method's noise multiplier is found by the project's exact accountant (Rényi DP of
# the Poisson-subsampled Gaussian mechanism) for the planned run, so that every client's
# $\varepsilon$ after the compositions it took part in is at most the target at
# $\delta=10^{-5}$; no paper's closed form is used. After each fit every client's spent
# $\varepsilon$ is recomputed from what was actually run and checked against the target in
# code, and a run that exceeds it is refused before it is stored. Each method is tuned over
# a declared grid of six configurations (the same number for every method: the step size
# and one parameter of its own), each fitted at the target, and the one with the best mean
# validation accuracy is kept; its test accuracy is reported. **The privacy cost of the
# tuning itself is not accounted**: choosing among six runs on the clients' validation data
# spends more than the one run's $\varepsilon$, for every method alike, as in the papers.
#
# Every client's examples are split 60/20/20 into train, validation and test data
# (seeded by the run's seed); accuracy is measured per client on its own test data with
# the model it would use (its personal model, or the global one), and averaged over the
# clients. This build:

# %%
display(fr_claims.setup_table(setup, chapter.scale, chapter.seed))

# %% [markdown]
# ## Runs
#
# Every run (federation, unit, method, target, seed) is one cached run of the sweep:
# tuning over the method's grid, then the chosen fit. Every private run met its target
# (the largest $\varepsilon$ any client spent, as a share of the target, over all runs):

# %%
runs, left_out = run_parts(
    lambda parts: fx.run(setup, chapter.seed, datasets=parts, **chapter.sweep_args),
    setup.datasets)
display(Markdown(fr_claims.left_out_markdown(left_out)))
display(fr_claims.privacy_table(runs))

# %%
glue_figure("frontier_accuracy", fr_figures.accuracy_figure(runs))
glue_figure("frontier_fairness", fr_figures.fairness_figure(runs))
glue_figure("frontier_costs",
            fr_figures.cost_figure(runs.assign(cpu_seconds=fr_figures.run_cpu_seconds(runs))))

# %% [markdown]
# ## Accuracy against privacy
#
# ```{glue:figure} frontier_accuracy
# :name: fig-frontier-accuracy
#
# Not in any paper: mean client test accuracy against the target $\varepsilon$
# ($\delta=10^{-5}$), per federation (rows) and privacy unit (columns), one line per method
# admitted in the unit; mean over the seeds, the bar its 95% interval. "none": no privacy.
# ```
#
# ## Fairness across clients
#
# ```{glue:figure} frontier_fairness
# :name: fig-frontier-fairness
#
# Not in any paper: the accuracy of the worst tenth of the clients (left) and the variance of
# the clients' test losses (right, log scale) against the mean client accuracy; one point per
# method, unit and target (mean over seeds), filled markers example unit, open markers user
# unit.
# ```
#
# ## Communication and computation
#
# ```{glue:figure} frontier_costs
# :name: fig-frontier-costs
#
# Not in any paper: the bytes all clients send per round (4 per float; top, mean over
# targets and seeds) and the CPU seconds of one run, its tuning's six fits included
# (bottom, the median over targets and seeds, as the sweep recorded them), per method and
# unit.
# ```
#
# ## Which method leads
#
# Per federation, unit and target: the method with the highest mean client test accuracy
# over the seeds, the runner-up, and the leader's margin over it, paired seed by seed, with
# its 95% interval. A margin whose interval contains 0 is a tie.

# %%
best = fr_figures.best_method_table(runs)
display(fr_figures.shown_best_table(best))

# %%
display(Markdown(fr_claims.leaders_markdown(best)))

# %% [markdown]
# Local training spends no privacy, so at a small enough $\varepsilon$ it is the method to
# beat. The same table with local training left out ranks the five papers' methods and
# the DP-FedAvg baseline among themselves:

# %%
federated = fr_figures.best_method_table(runs, exclude=("local",))
display(fr_figures.shown_best_table(federated))

# %%
display(Markdown(fr_claims.leaders_markdown(federated)))

# %% [markdown]
# ## Findings
#
# The findings of this chapter are the companion's, not any paper's: per federation and
# unit, the leader at the smallest target of the tier and without privacy, with its margin
# over the runner-up, and at the smallest target the leader of the federated methods
# (local training left out). The leader is read off the same runs that measure its margin, so a
# finding that HOLDS says the leader is ahead beyond the seeds' spread, and an
# INCONCLUSIVE one is a tie. They appear on the landing page and on the scorecard among the
# companion's findings.

# %%
findings = fr_claims.findings(runs, chapter.scale)
chapter.write_claims(findings)
show_claims(findings)

# %% [markdown]
# ```{glue:figure} frontier_claims_table
# :name: tab-frontier-claims
#
# The frontier's findings, evaluated on this build's runs. The same verdicts appear on the
# {doc}`scorecard </generated/scorecard>`.
# ```

# %%
chapter.compare_tiers(findings)

# %% [markdown]
# ## What the comparison does not show
#
# - One model for every method (softmax regression on normalised features): the papers'
#   neural networks and SVMs are not run here, and a method whose advantage needs a deep
#   model may look different with one.
# - One common target for every client: PFA's heterogeneous budgets, the setting its
#   projection is designed for, are not run here; PADPFL's quality groups neither.
# - Both tiers cut the federations (the setup table above states this page's sizes): the
#   quick tier to 20 or 30 clients of 100 examples and ten rounds of three local steps;
#   the paper tier runs every HAR volunteer with all their recordings but only 40 of the
#   248 FEMNIST writers and 20 of the 100 MNIST shard clients (200 examples each), for
#   thirty rounds of five steps and three seeds. A fit costs about in proportion to its
#   training examples times its steps (more per example on the 784-pixel, ten-class
#   federations than on HAR), so every writer and every shard client at that schedule
#   would take about seven times as long as this paper tier; the clients left out would
#   change how many users user-level noise hides each one among, which is the next point.
# - With 20 to 40 clients, user-level DP has few users to hide each one among: the noise
#   the server adds to the mean update is of the order of a whole clipped update, so local
#   training, which releases nothing, is hard to beat in that unit (the findings above say
#   at which targets it leads). A federation of thousands of users would tell another story.

# %%
chapter.close()
