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
# of the clients, the bytes each round sends upstream and the CPU time of a fit. None of
# the papers makes a claim about this comparison: its results are findings of the
# companion.

# %% tags=["parameters"]
scale = "quick"  # smoke (seconds) | quick (hours of one core) | paper (many hours)
seed = 0  # first of the tier's seeds (its choosing seeds, then as many testing seeds)
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
# ## Three threat models
#
# The papers protect different things against different parties, so a method is run in
# one of three privacy units, each stated in full:
#
# (a) **Example-level DP of everything a client sends, honest-but-curious server**
#   (`example`). Each client clips every example's gradient and adds Gaussian noise to
#   each local step before anything leaves the device (local DP-SGD, Poisson sampling of
#   examples). The server and anyone who sees the uploads learn an $(\varepsilon,\delta)$-DP
#   function of each example; whatever the server computes from the uploads is
#   post-processing. A client is accounted over all the local steps of all the rounds it
#   took part in. What a client keeps for itself (local training, fine-tuning, a personal
#   model) is not covered.
#
# (b) **User-level DP of what the server releases, trusted aggregator** (`user`). Each
#   client's whole update is clipped; the server adds Gaussian noise once to the sum of the
#   clipped updates of the clients sampled that round. The released global model is an
#   $(\varepsilon,\delta)$-DP function of each client's whole data set; the server itself
#   sees the raw updates. What a client keeps for itself is never released and not
#   covered (joint DP). Every client is accounted over every round run.
#
# (c) **Example-level DP of everything computed from a client's examples, its personal
#   model included** (`silo`: silo-specific example-level DP, as in Liu et al. 2022, "On
#   privacy and personalization in cross-silo federated learning"). Every step that reads
#   a client's examples is DP-SGD -- the steps behind its uploads, its personal steps, its
#   fine-tuning, local training itself -- and the client is accounted over all of them.
#   Here local training is not free: it spends the target like every other method, so
#   "local leads" is tested against "local is free".
#
# On HAR and FEMNIST a client is a person, and the example units protect one recording or
# one digit, not the person: a person's many examples add up, and only the user unit
# protects the person.
#
# ## Which method runs in which unit
#
# A method runs in a unit only where the unit's guarantee holds for what the method
# sends, releases or keeps; otherwise it refuses, and the reason is part of the method's
# code:

# %%
display(fr_claims.units_table())

# %% [markdown]
# ## How each method is adapted from its paper's setting
#
# - **local**: every client trains its own model alone; nothing is sent (DP-SGD in the
#   silo unit).
# - **dp-fedavg-ft** (the baseline the papers measure against): DP-FedAvg, local DP-SGD
#   uploads in the example and silo units and clipped updates noised once at the server
#   in the user unit (McMahan et al. 2018), then every client fine-tunes the released
#   global model on its own data.
# - **dp-ditto** (DP-Ditto): the paper's personal objective
#   $(1-\lambda)F_i(v)+\frac{\lambda}{2}\lVert v-w\rVert^2$ kept; the global model is
#   DP-FedAvg on the softmax model. The paper clips and noises each uploaded model with a
#   closed-form example-level sensitivity; here the upload is made DP by local DP-SGD
#   (example unit, the paper's) or by the noised aggregate (user unit). The personal
#   model is never sent; its steps are DP-SGD in the silo unit.
# - **ppsgd** (Bietti et al.): a global model plus a personal additive model per client,
#   with the paper's rule for the two step sizes; the squared loss on one-vs-all targets
#   becomes the softmax cross-entropy, and each sampled client takes a few joint local
#   steps (one step is the paper's iteration). User unit (the paper's: joint DP of the
#   global model) and silo unit (the joint gradient is DP-SGD's); not the example unit:
#   the personal model, trained without clipping or noise there, enters every gradient a
#   client uploads, so no per-example clipping bounds the uploads.
# - **pfa** and **pfa+** (Liu et al.): the private clients' noisy updates are projected
#   onto the top-$k$ subspace of the public clients' updates (the paper's aggregation code
#   is reused); PFA+ has the private clients send only the $k$ coefficients. The paper's
#   public clients are the 10% with the largest budgets; with one common target there is no
#   budget to rank by, so a seeded random 10% act as public, spend the same target and
#   take part every round, and the budget weights are all equal: the projection acts only
#   as a denoiser, and the advantage the paper draws from heterogeneous budgets is absent
#   by construction. Not the user unit: it adds the noise once to the aggregate, so there
#   is no per-client noisy update to project.
# - **padpfl** (Talaei and Izadi): impact-factor weighted averaging with FedProx local
#   training. The paper sets the factors by hand from data quality and size; these
#   federations have no corrupted groups, so the factors follow client size,
#   $p_i\propto n_i^{\gamma}$ with $\gamma\in[0, 1]$ tuned (its scenario 3). The paper's
#   closed-form noise (with a sensitivity argument that does not hold) is replaced by exact
#   accounting; in the user unit the calibrated noise is split between the clients and the
#   server, as the paper splits it, and in the example and silo units the local solver is
#   DP-SGD and the server adds nothing (its noise cannot protect an upload from the server
#   itself).
# - **hu-mtl** (Hu et al.): federated multi-task learning with a learned task-relationship
#   matrix $\Omega$, solved in the primal on the softmax model instead of MOCHA's dual on
#   linear SVMs: the server holds one model per client, applies the sampled clients' DP-SGD
#   updates, then the exact proximal step of $\lambda\,\mathrm{tr}(W\Omega^{-1}W^\top)$,
#   and recomputes $\Omega$ in closed form every few rounds. Not the user unit: what the
#   server would release is a set of per-client models mixed through $\Omega$, not one
#   aggregate on which noise can be added once.
#
# Every method that trains one global model (dp-fedavg-ft, pfa, pfa+, padpfl) gets the same
# fine-tuning option: each client then takes a share of local training's own budget of
# steps (none, a fifth or all of it) on its own data, from the global model, free in the
# example and user units (nothing is sent) and DP-SGD in the silo unit.
#
# ## A fair tuning
#
# Every method is tuned by the same rules, checked in code before anything runs (a grid
# that breaks one is refused, naming the rule):
#
# - the same step sizes (0.3, 1, 3) for every method, and the same schedule: rounds, local
#   steps, batch rate, clipping and client rate are the tier's, for every method alike,
#   so that no method has capacity another lacks;
# - every personalised method's grid holds its local limit, where its client models
#   become local training: Ditto's $\lambda=0$, PPSGD's $\alpha=0$, the multi-task
#   coupling $\lambda=0$, and for the global-model methods fine-tuning over all of local
#   training's budget;
# - a choice on an open edge of its grid (a step size at 3, PPSGD's $\alpha$ at 3, ...)
#   extends the grid past that edge, at most twice per edge; a choice still on an open
#   edge after that is named wherever its cell is read ({ref}`the table below
#   <frontier-open-edges>`). An edge that is a limit of the method's domain (Ditto's
#   $\lambda=0$ or 1, fine-tuning for none or all of the budget) is a choice, not an edge.
#
# Each configuration is fitted at the target, and the one with the best mean validation
# accuracy is kept. Noise is calibrated by the project's privacy-loss-distribution (PLD)
# accountant for the planned run, tighter than Rényi DP, so that every client's
# $\varepsilon$ after the compositions it took part in is at most the target at
# $\delta=10^{-5}$; after each fit every client's spent $\varepsilon$ is recomputed from
# what was actually run and checked against the target in code, and a run that exceeds it
# is refused before it is stored. **The privacy cost of the tuning itself is not in a
# run's $\varepsilon$**, as in the papers: choosing among a grid's fits on the clients'
# validation data spends more. The privacy table below states how much: the $\varepsilon$
# of releasing every fit a run compared, composed by Rényi DP.
#
# ## Choosing and testing on different seeds
#
# Each method is tuned once per federation, unit and target over all the choosing seeds:
# a configuration's score is its validation accuracy averaged over them. The method then
# runs once on each of as many testing seeds at the chosen configuration. Every accuracy
# on this page is read on the testing seeds; a ranking (which method leads) is read on
# the choosing seeds and its margin on the testing seeds, so that a selection does not
# grade itself.
#
# Every client's examples are split 60/20/20 into train, validation and test data
# (seeded by the run's seed); accuracy is measured per client on its own test data with
# the model it would use (its personal model, fine-tuned model or the global one), and
# averaged over the clients. This build:

# %%
display(fr_claims.setup_table(setup, chapter.scale, chapter.seed))

# %% [markdown]
# ## Runs
#
# Every run is one cached run of the sweep: a method's tuning over its grid on the
# choosing seeds (federation, unit, method, target), or the chosen configuration's fit on
# one testing seed. Every private run met its target (the largest $\varepsilon$ any client
# spent, as a share of the target, over all runs). The table also gives the noise of one
# step against the largest clipped sum it is added to (in the user unit: the server's
# noise on the mean update against the norm of one clipped update, for the cohort a round
# samples) and the $\varepsilon$ of a choosing run's whole tuning as a multiple of the
# target:

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
# ## What collaboration can gain at most
#
# Without privacy, the best federated method (chosen on the choosing seeds) against local
# training, on the testing seeds, with the 95% interval of the paired difference: the
# headroom of each federation, the most privacy can cost a federated method before it
# falls to local training's level.

# %%
display(fr_figures.shown_headroom_table(fr_figures.headroom_table(runs)))

# %% [markdown]
# ## Accuracy against privacy
#
# ```{glue:figure} frontier_accuracy
# :name: fig-frontier-accuracy
#
# Not in any paper: mean client test accuracy on the testing seeds against the target
# $\varepsilon$ ($\delta=10^{-5}$), per federation (rows) and privacy unit (columns), one
# line per method admitted in the unit, each at the configuration its choosing seeds
# picked; mean over the testing seeds, the bar its 95% interval. "none": no privacy.
# ```
#
# ## Fairness across clients
#
# ```{glue:figure} frontier_fairness
# :name: fig-frontier-fairness
#
# Not in any paper: the mean accuracy of the worst tenth of the clients on the testing
# seeds against the target $\varepsilon$, laid out as the figure above; the bar is its 95%
# interval over the seeds. The worst tenth is rounded up to whole clients (at least one) of
# each federation's clients, whose number the setup table above gives.
# ```
#
# ## Communication and computation
#
# ```{glue:figure} frontier_costs
# :name: fig-frontier-costs
#
# Not in any paper: the bytes all clients send per round (4 per float; top, mean over
# targets and choosing seeds) and the CPU seconds of one choosing run, its tuning's fits
# included (bottom, the median over targets and seeds, as the sweep recorded them), per
# method and unit; the whisker runs from the smallest to the largest run.
# ```
#
# ## Choices on an open edge
#
# (frontier-open-edges)=
# Every cell whose chosen configuration still sits on an open edge of its grid after the
# grid was extended twice past it: such a cell is not tuned to its optimum, and the
# tables below name it where it leads or follows. An empty table means every choice is
# interior or at a limit of its method.

# %%
display(fr_figures.open_edges_table(runs))

# %% [markdown]
# ## Which method leads
#
# Per federation, unit and target: the method with the highest mean client test accuracy
# over the choosing seeds, the runner-up likewise, and the leader's margin over it on the
# testing seeds, paired seed by seed, with its 95% interval. A margin whose interval
# contains 0 is a tie.

# %%
best = fr_figures.best_method_table(runs)
display(fr_figures.shown_best_table(best))

# %%
display(Markdown(fr_claims.leaders_markdown(best)))

# %% [markdown]
# In the example and user units local training spends no privacy, so at a small enough
# $\varepsilon$ it is the method to beat. The same table with local training left out ranks
# the five papers' methods and the DP-FedAvg baseline among themselves:

# %%
federated = fr_figures.best_method_table(runs, exclude=("local",))
display(fr_figures.shown_best_table(federated))

# %%
display(Markdown(fr_claims.leaders_markdown(federated)))

# %% [markdown]
# ## Findings
#
# The findings of this chapter are the companion's, not any paper's: per federation and
# unit, the leader at the smallest target of the tier and without privacy, and at the
# smallest target the leader of the federated methods (local training left out). The
# leader and runner-up are chosen on the choosing seeds; the finding asks that the leader
# be ahead by more than one percentage point of mean client accuracy, declared before the
# runs, on the testing seeds. HOLDS: it leads by more than that; FAILS: the runner-up is
# ahead or they tie within it; INCONCLUSIVE: the interval straddles the margin. They appear
# on the landing page and on the scorecard among the companion's findings.

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
# - The tiers cut some federations (the setup table above states this page's sizes): HAR,
#   FEMNIST's 40 (paper) or 20 (quick) largest-sample writers and MNIST's label-shard
#   clients are small federations in which every client takes part every round; the two
#   larger ones (1,200 MNIST users in cohorts of 5%, every FEMNIST writer with ten digits or
#   more in cohorts of 10%) are the regime where user-level DP is deployed.
# - The tuning's own privacy cost is stated, not charged: a reader who must account for it
#   multiplies the target by the factor in the privacy table.

# %%
chapter.close()
