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
# # Projected federated averaging under heterogeneous DP budgets (PFA, Liu et al. 2022)
#
# {cite:t}`liu2022pfa` let every client $m$ choose its own budget
# $(\varepsilon_m, \delta)$. Each sampled client runs $\tau$ steps of DP-SGD
# (per-example clipping at $C=1$, batch $B$, Gaussian noise of its own multiplier)
# and uploads its model update. Averaging these updates lets the noisiest clients
# dominate; weighting them by $\varepsilon_m$ (WeiAvg) discards most of their data.
# PFA instead treats the clients with the largest budgets as *public*: the top-$k$
# subspace of their updates (centred covariance) is used to project the
# $\varepsilon$-weighted mean of the private updates, removing the noise outside it.
# PFA+ has private clients upload only their $k$ coordinates in the previous round's
# subspace, which cuts the uplink traffic.
#
# **What the paper claims:**
#
# - on MNIST and Fashion-MNIST with budgets from the bimodal MixGauss1 (90% of clients
#   at $\varepsilon \approx 0.1$, 10% at $\approx 10$): PFA ≈ PFA+ > WeiAvg > FedAvg ≈
#   Minimum, FedAvg near chance on MNIST-CNN, all below non-private FedAvg (Figure 3);
# - PFA and PFA+ are robust across budget distributions, while FedAvg and WeiAvg
#   collapse as budgets spread out (Figure 4);
# - PFA+ is best at a small projection dimension $k$, and the public subspace matters
#   (a random projection is poor at small $k$) (Figure 6);
# - PFA+ cuts the uplink bytes by about 10x (Figure 7);
# - under non-IID data accuracy drops but PFA is still best in most cases (Figure 8);
# - the public updates' spectrum is dominated by a few directions (Figure 13).

# %% tags=["parameters"]
scale = "quick"  # smoke (seconds) | quick (minutes on 2 cores) | paper (the paper's scale)
seed = 0  # seed of the budgets, data split, sampling, model init and noise
device = "cpu"  # the federated loop runs on the CPU
workers = 0  # local processes for the sweep (0 means all cores)
ray_address = ""  # address of a Ray cluster for the sweep, e.g. "auto" (empty: run locally)
claims_dir = ""  # where the claims go (empty: the book's folder, which the scorecard reads)

# %%
from functools import partial

import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from fedlib.papers.pfa import claims as pfa_claims
from fedlib.papers.pfa import experiment as pfa
from fedlib.papers.pfa import figures as pfa_figures
from fedlib.papers.pfa import notes as pfa_notes
from fedlib.papers.pfa import readings as pfa_readings
from fedlib.papers.pfa import readouts as pfa_readouts
from fedlib.papers.pfa import tuned as pfa_tuned
from fedlib.papers.pfa.paper_tier import (
    PAPER_GRID,
    repeats_text,
    run_figure_5_halves,
    run_figures,
    run_repeats,
)
from fedlib.render.chapter import open_chapter, show_claims
from fedlib.render.glue import glue_figure_of_parts, left_out_note
from fedlib.render.prose import Missing, say, status_of
from fedlib.runs.published import provenance_line
from fedlib.sweeps import run_parts
from fedlib.verdicts.claims import verdict_changes

chapter = open_chapter("pfa", scale=scale, seed=seed, device=device, workers=workers,
                       ray_address=ray_address, claims_dir=claims_dir, cpu_only=True)
setup = PAPER_GRID.tier(scale)

# %% [markdown]
# ## Setup
#
# $M$ clients of 1,200 training examples each (IID: a random subset dealt evenly;
# non-IID: sorted by label and cut into 10 shards of 120 per client). Each round the
# server samples $K = 0.8M$ clients among those with budget left, at least one public
# client (the top 10% by budget) when one is left. Local training: DP-SGD with
# per-example clipping $C=1$, batch $B=8$, $\tau$ steps; LogR (7,850 parameters) or the
# paper's 2-layer CNN; $\delta = 10^{-5}$. All aggregators of a setting train on the same
# federation, the same sampled clients and the same minibatches; they differ only in
# their noise (each aggregator draws its own, so its run does not depend on which others
# are trained beside it) and their aggregation. As in the authors' code, training stops once fewer
# than $K$ clients, or no public client, have budget left, and NP-FedAvg is plain SGD
# (no clipping). Beside the figures, the tier runs the defaults of the authors' released
# code (see [below](pfa-authors-code)). This build's tier:

# %%
display(pfa_readouts.setup_table(setup, scale, repeats_text(setup, scale)))

# %% [markdown]
# (pfa-paper-grid)=
# ### The grid of the paper tier

# %%
display(Markdown(PAPER_GRID.describe()))

# %%
runs, left_out = run_parts(
    lambda figures: run_figures(setup, seed, figures, **chapter.sweep_args), pfa.FIGURES)
repeat_runs, repeats_left_out = run_repeats(
    setup, seed, scale, tuple(f for f in pfa.FIGURES if f not in left_out),
    **chapter.sweep_args)
fig5_runs, left_out = run_figure_5_halves(setup, seed, left_out, **chapter.sweep_args)
runs = pd.concat([runs, fig5_runs, repeat_runs], ignore_index=True)
for part, why in repeats_left_out.items():
    display(Markdown(f"Not on this page: {part} ({why}); the claims read the runs stored."))
tuned = pfa_tuned.tuned_runs(scale, seed, setup, workers=chapter.sweep_args["workers"])
claims = pfa_claims.evaluate(runs, scale, setup.k, left_out, tuned)
runs = tuned.apply(runs)
final = pfa_readouts.final_accuracy(runs)
curves = pfa_readouts.accuracy_curves(runs)
tier_runs = partial(pfa_readings.tier_runs, scale=scale, seed=seed, runs=runs,
                    left_out=left_out)

# %% [markdown]
# ## Figure 3: accuracy against rounds (IID, MixGauss1)

# %%
glue_figure_of_parts("pfa_fig3", ["fig3"], left_out, lambda: pfa_figures.figure_3(curves))

# %% [markdown]
# ```{glue:figure} pfa_fig3
# :name: fig-pfa-3
#
# Figure 3 (Liu et al. 2022), reproduced. Test accuracy of the global model against communication
# rounds on MNIST and Fashion-MNIST, LogR and CNN, IID data, budgets from MixGauss1, for every
# aggregator.
# ```

# %% [markdown]
# ## Figure 4: final accuracy by budget distribution

# %%
glue_figure_of_parts("pfa_fig4", ["fig4"], left_out, lambda: pfa_figures.figure_4(final))

# %% [markdown]
# ```{glue:figure} pfa_fig4
# :name: fig-pfa-4
#
# Figure 4 (Liu et al. 2022), reproduced. Final test accuracy (mean of the last three evaluations)
# on MNIST for each budget distribution of the paper's Table 1, every aggregator (the model is
# given in the setup table: LogR at the quick tier, the CNN at the paper tier).
# ```

# %% [markdown]
# ## Figure 5: CIFAR-10 and IMDb (paper tier)

# %%
pfa_figures.show_figure_5(curves, scale, left_out)

# %% [markdown]
# At the paper tier Figure 5's CIFAR-10 setting is computed on a GPU (`fig5_device =
# "cuda"`, one of the paper grid's departures above): all seven aggregators at the first
# seed, and at a second seed the four the claim compares (FedAvg, WeiAvg, PFA, PFA+). On
# one NVIDIA H100 a seed's four aggregators, trained as one batch, took 261 to 281 s and
# the other three 167 s, at 9.1 GB of GPU memory; each client's noise there comes from
# CUDA's generator, so a CPU computing the same setting draws other runs of it. On a
# 2-core CPU the setting is out of reach: a local step of the seven aggregators costs
# about 10.5 s on one loaded core (40 of the 50 clients, batch 8), about 29-32 CPU-hours
# for its 100 rounds of 100 steps (12 on a quieter machine), at about 13.5 GB of RAM.
#
# The runs do not show the paper's picture. FedAvg, WeiAvg, PFA and PFA+ all end at
# chance on both seeds (0.098 to 0.116): PFA and PFA+ climb to about 0.17-0.20 in the
# first rounds and fall back as the noise accumulates, and training stops at round 96,
# when fewer than 40 clients have budget left. Only Maximum, every client calibrated at
# the largest budget, learns (0.31), and NP-FedAvg reaches 0.63 before 100 unclipped SGD
# steps at lr 0.1 send it to chance, as on MNIST's CNN (Figure 3). Two arms at chance
# cannot be ranked, so the claim's CIFAR-10 half is not testable, and the tier stops at
# two seeds of it: further seeds would narrow intervals that sit at chance, each at the
# cost of a GPU run or of about 17 CPU-hours for the four aggregators on 2 cores. The
# paper's curves (PFA and PFA+ slightly above WeiAvg, all three far above FedAvg) come
# from a learning rate and a model the paper does not give (its appendix table did not
# survive), and this chapter uses the CNN's lr = 0.1 of Figure 3.
#
# IMDb is not run. Its seven aggregators need about 18-21 CPU-hours a seed here (about
# 170 before the engine computed each example's word-embedding gradient from its own
# words instead of as a dense 10,000 x 32 tensor), at about 3.8 GB; on the H100 the
# engine trains the LSTM at about 11,400 examples a second (the Reproducing page), so a
# seed of the four aggregators the claim reads (12.8 million examples) would take about
# 19 minutes of the GPU, more than this book had. The IMDb runs evaluate on a seeded
# random 10,000 of the 25,000 test reviews (the first 10,000 are all negative). The
# setting stays in the paper tier's grid as the paper has it: the claim stays not run
# until both halves are stored, the CIFAR-10 half drawn and judged on its own meanwhile
# (a half that fails fails the claim). A run saves its state every ten minutes and
# continues from there when started again (the Reproducing page says how), so the hours
# can come in pieces.

# %% [markdown]
# ## Figure 6: the projection dimension, and where the subspace comes from

# %%
glue_figure_of_parts("pfa_fig6", ["fig6"], left_out, lambda: pfa_figures.figure_6(final))

# %% [markdown]
# ```{glue:figure} pfa_fig6
# :name: fig-pfa-6
#
# Figure 6 (Liu et al. 2022), reproduced. MNIST, LogR, MixGauss1: (a) final accuracy of PFA+
# against the projection dimension $k$; (b) PFA with the public clients' subspace against a
# random Gaussian $k$-dimensional subspace, each applied two ways: linearly, as Algorithm 3 is
# written ($V_kV_k^\top \bar u$; the public subspace is then the top-$k$ eigenvectors of
# $\bar x\bar x^\top$, one informative direction and $k-1$ random ones), and centred at the
# public mean, as the released code does ($\mu + V_kV_k^\top(\bar u - \mu)$; the centred
# covariance of the public updates has rank their number minus one, and the directions beyond
# it are random).
# ```

# %% [markdown]
# (pfa-fig6b-reading)=
# ### Which random projection the paper means
#
# The claim of Figure 6b is that the subspace must come from the public updates: a
# random one of the same dimension does much worse. Section 4.4 (step 2, "subspace
# identification") says that, in place of the top eigenvectors of the public updates'
# second moment, the projection matrices could be found by random projection methods
# such as a Johnson-Lindenstrauss or Gaussian transform, and that the experiments show
# this gives a biased estimate of the model update and a sharp loss of accuracy; step 3
# then applies whichever matrix was found as the projection $V_kV_k^\top$ of the private
# mean, and Section 5.2.2 compares the two "projection methods" at the same $k$. The
# text therefore swaps the matrix and keeps everything else: a random $k$-dimensional
# subspace used linearly, exactly where $V_k$ would be. The released code's centred
# form (which the chapter's PFA follows) is a different object for this ablation: its
# projection keeps the public mean $\mu$ whatever the subspace, so at $k=1$ both
# variants are $\mu$ plus one direction's worth of the private mean, nearly the same
# aggregate by construction. The claim `fig6b-random-projection-poor` now compares the
# linear pair, the paper's reading; `fig6b-random-projection-centred` keeps the centred
# pair.
#
# Read the paper's way, the ablation does separate the two subspaces in what they keep:
# a random direction of the 7,850-dimensional LogR layer keeps almost nothing of the
# private mean, so the aggregate is the public mean scaled by the public clients' share
# of the budget, while $\bar x\bar x^\top$ keeps the private mean's component along the
# public mean. Whether that component helps is measured:

# %%
fig6b = pfa_readings.figure_6b_linear(final)
if fig6b is None:
    say("Figure 6 is {missing}, so `fig6b-random-projection-poor` reads **{status}** here.",
        missing=Missing(), status=status_of(claims, "fig6b-random-projection-poor"))
else:
    say("At this tier, over {seeds} seed(s) at k = {k}, PFA with the public subspace used "
        "linearly ends at {public:.3f} and with the random one at {random:.3f} (public minus "
        "random, in points: {gap:.1f}), and `fig6b-random-projection-poor` reads **{status}**.",
        **fig6b, status=status_of(claims, "fig6b-random-projection-poor"))

# %% [markdown]
# Where the random subspace is not behind, what PFA gains over WeiAvg at this scale
# comes from its weights, not from the private clients' projected updates.

# %% [markdown]
# ## Figure 7: uplink traffic

# %%
glue_figure_of_parts("pfa_fig7", ["fig3"], left_out,
                     lambda: pfa_figures.figure_7(pfa_readouts.uplink_traffic(runs)))
display(pfa_readouts.paper_uplink_table(setup.k))

# %% [markdown]
# ```{glue:figure} pfa_fig7
# :name: fig-pfa-7
#
# Figure 7 (Liu et al. 2022), reproduced. Cumulative uplink megabytes (4 bytes per float sent) of
# the full-update methods (every method but PFA+ sends the same) and of PFA+, in this build's
# Figure 3 runs. The table above counts the same at the paper's Figure 7 setting ($M=50$, 40
# sampled clients of which 5 public, 100 rounds), every client taking part every round.
# ```

# %% [markdown]
# ## Figure 8: non-IID data

# %%
glue_figure_of_parts("pfa_fig8", ["fig8"], left_out, lambda: pfa_figures.figure_8(curves))

# %% [markdown]
# ```{glue:figure} pfa_fig8
# :name: fig-pfa-8
#
# Figure 8 (Liu et al. 2022), reproduced. As {ref}`Figure 3 <fig-pfa-3>` on MNIST with the non-IID
# shard partition.
# ```

# %% [markdown]
# ## Figure 13: the spectrum of the public updates

# %%
glue_figure_of_parts("pfa_fig13", ["fig3"], left_out,
                     lambda: pfa_figures.figure_13(pfa_readouts.spectrum_table(runs)))

# %% [markdown]
# ```{glue:figure} pfa_fig13
# :name: fig-pfa-13
#
# Figure 13 (Liu et al. 2022), reproduced. Share of the variance carried by each eigenvalue of the
# centred covariance of the public updates (first layer, MNIST, Figure 3's PFA runs) at the first,
# middle and last rounds.
# ```

# %% [markdown]
# With $n$ public updates in a round the centred covariance has rank at most $n-1$:
# with the paper's 10% public clients ($3$ of $M=30$) a round has at most two nonzero
# eigenvalues, and the larger carries at least half of the variance whatever the
# updates are. The claim therefore asks for more than the rank gives: in the rounds
# with two nonzero eigenvalues, the larger must carry two thirds (twice the other, the
# rule of thumb of the paper's Remark 3 with $c=2$), where updates that are noise in
# every direction give two equal halves.

# %% [markdown]
# (pfa-algorithm-3)=
# ## Algorithm 3 as the text writes it
#
# The chapter's PFA follows the released code: $V_k$ are the top eigenvectors of the
# centred covariance of the individual public updates, and the private mean is projected
# about the public mean, $\mu + V_kV_k^\top(\bar u_{priv} - \mu)$. Algorithm 3 of the
# paper writes something else: $\Sigma = \bar x\bar x^\top$ with $\bar x$ the
# $\varepsilon$-weighted mean of the public updates (lines 2-4), and the linear
# projection $V_kV_k^\top \bar u_{priv}$ (line 6), with no mean offset. $\Sigma$ has
# rank one, so its top eigenvector is $\bar x/\lVert\bar x\rVert$ and, at $k=1$, the
# private mean is replaced by its component along the public mean. Both run below under
# the exact accountant (RDP), at Figure 3's setting and at the authors' defaults (the
# authors' three seeds at the quick tier, their 100 x 100 at the paper tier).

# %%
glue_figure_of_parts("pfa_text_projection", ["fig3", "authors"], left_out,
                     lambda: pfa_figures.figure_text_projection(final))
if not {"fig3", "authors"} & set(left_out):
    display(pfa_readouts.text_projection_table(final))

# %% [markdown]
# ```{glue:figure} pfa_text_projection
# :name: fig-pfa-text-projection
#
# Not in the paper. Final accuracy of WeiAvg, of PFA as the released code computes it and of PFA
# as Algorithm 3 writes it, at Figure 3's four panels (MixGauss1) and at the authors' defaults
# under RDP (both models, both budget files): bars are means over seeds, dots single seeds. The
# table gives the means and the paired differences with their 95% intervals.
# ```

# %%
say("At this tier the text's form ends {code_lo:+.1f} to {code_hi:+.1f} points from the "
    "code's (text minus code, means over seeds) in the {n} settings where both run "
    "(Figure 3's panels, and the authors' defaults under the accountant by model and budget "
    "file); {code_zero} of these differences lie within their interval of zero (where one "
    "does, keeping the private mean's component along the public mean and dropping the "
    "public mean as an offset does no measurable harm). Against "
    "WeiAvg the text's PFA ends {weiavg_lo:+.1f} to {weiavg_hi:+.1f} points away, below it "
    "beyond its interval in {n_below} setting(s){below}. The claims about it read "
    "**{text}** (`fig3-ordering-text`) and **{text_authors}** "
    "(`fig3-ordering-authors-rdp-text`), those about the code's PFA on the same runs "
    "**{code}** (`fig3-ordering`) and **{code_authors}** (`fig3-ordering-authors-rdp`).",
    **pfa_readings.text_against_code(final),
    text=status_of(claims, "fig3-ordering-text"),
    text_authors=status_of(claims, "fig3-ordering-authors-rdp-text"),
    code=status_of(claims, "fig3-ordering"),
    code_authors=status_of(claims, "fig3-ordering-authors-rdp"))

hundred = pfa_readings.authors_hundred(tier_runs("paper", "authors"))
if hundred is None:
    say("The paper tier's run at the authors' 100 x 100 is {missing} in this build, so this "
        "page quotes none of its numbers.", missing="not stored")
else:
    say("In the paper tier's runs at the authors' 100 x 100 (seed(s) {seeds}, MixGauss2, their "
        "LogR, RDP; mean of the last 10 evaluations, then over the seeds) the text's PFA "
        "ends at {text:.3f}, the code's at {code:.3f}, WeiAvg at {weiavg:.3f}, and the "
        "text's random counterpart at {random:.3f}.", **hundred)

# %% [markdown]
# (pfa-learning-rates)=
# ## Each method tuned as the paper tuned it
#
# The paper explores the constant learning rates 0.1, 0.05, 0.025, 0.01, 0.005 and
# 0.001 and the projection dimensions 1, 2, 5, 10, 64, 128 and 256 "for the best
# results" (Section 5.1), per method. A method run at one fixed rate and $k = 1$ is not
# the method the paper ran, so the claims of Figures 3, 4 and 8 read every method at its
# own rate (and PFA and PFA+ at their own $k$), chosen on validation data by the tuning
# step below; a setting whose tuning is not finished leaves its methods *untuned*, and
# every comparison that reads them is NOT-TESTABLE with that reason. The search, per
# method: the whole rate grid at $k = 1$, then the whole $k$ grid at the chosen rate, then
# the choice's neighbours on each grid until both were run (a choice on an edge extends
# the grid: the rate by up to four values, doubling or halving, $k$ by doubling up to
# the model's largest layer, and $k = 1$ is a bound). The budget of a tuning run:

# %%
display(Markdown(pfa_tuned.BUDGET.describe(setup.rounds)))
display(tuned.table())
display(Markdown(tuned.summary()))

# %% [markdown]
# ### The full-length rate grid on MNIST-LogR
#
# The setting `lr` runs Figure 3's MNIST-LogR setting
# at each of the six rates for every method (the same six configurations each, three
# seeds), and chooses each method's rate on 2,000 validation images held out from the
# training images no client holds (the best final validation accuracy, averaged over
# the seeds). The claim `fig3-ordering-tuned-lr` judges Figure 3's ordering on the test
# accuracy each method reaches at its own rate.

# %%
validation = pfa_readouts.final_validation(runs)
if "lr" not in left_out and validation.empty:
    glue("pfa_lr_grid", Markdown("The learning-rate grid is not run at this tier."),
         display=False)
else:
    glue_figure_of_parts("pfa_lr_grid", ["lr"], left_out, lambda: pfa_figures.figure_lr_grid(
        validation, pfa_readouts.chosen_rates(validation)))
if not validation.empty:
    display(pfa_readouts.lr_grid_table(final, validation))

# %% [markdown]
# ```{glue:figure} pfa_lr_grid
# :name: fig-pfa-lr-grid
#
# Not in the paper. Final validation accuracy (mean of the last three evaluations, averaged over
# three seeds) of every method on MNIST-LogR with MixGauss1 budgets, against the learning rate of
# the paper's grid; each method's chosen rate is circled. The table gives the same means, the
# chosen rate and the test accuracy at it.
# ```

# %%
rates = pfa_readings.tuned_rates(final, pfa_readouts.chosen_rates(validation))
if rates is None:
    say("The learning-rate grid is {missing} (or its runs are not stored in this build), so "
        "`fig3-ordering-tuned-lr` reads **{status}** here.", missing=Missing(),
        status=status_of(claims, "fig3-ordering-tuned-lr"))
else:
    say("At this tier the validation data choose {rates} (the chapter's shared LogR rate, "
        "0.3, lies outside the grid). At their rates PFA ends {pfa:+.1f} points from WeiAvg "
        "and PFA+ {plus:+.1f} (each minus WeiAvg), while WeiAvg ends {fedavg:+.1f} and "
        "{minimum:+.1f} points from FedAvg and Minimum (WeiAvg minus each); "
        "`fig3-ordering-tuned-lr` reads **{status}**.",
        **rates, status=status_of(claims, "fig3-ordering-tuned-lr"))

# %% [markdown]
# ## Claims

# %%
chapter.write_claims(claims)
show_claims(claims)

# %% [markdown]
# ```{glue:figure} pfa_claims_table
# :name: tab-pfa-claims
#
# The PFA claims, evaluated on this build's runs. The same verdicts appear on the
# {doc}`scorecard </generated/scorecard>`.
# ```

# %% [markdown]
# ### Verdicts over repeats
#
# Every claim on runs is a comparison declared before the runs are read: the
# quantity, the direction the paper states, and a margin in its terms (1 point of
# final accuracy for an ordering; 3 and 5 points where the paper says "very close" and
# "pretty similar"; 2 points for the random subspace's "clearly worse"; 5 points for a
# collapse), judged over the seeds with a 95% interval, paired where the arms share
# their seeds. An arm whose interval reaches 0.15 (chance on ten classes, 0.1, plus 5
# points) has not clearly learned: a comparison between two such arms is not
# testable. A setting run once measures no run-to-run variation, so the comparisons
# that read it are not run: the quick tier runs three seeds of every setting (and the
# authors' three); the paper tier five of every LogR setting, of each CNN setting the
# repeats its grid lists (above; fewer than five for some), and the authors' three.
# The uplink count of Figure 7 has no randomness and is checked exactly. The claims
# whose verdict changed from the single-run checks this chapter made before, on the
# same runs, and the claims restated:

# %%
display(Markdown(verdict_changes(claims, pfa_notes.verdict_changes_notes(claims))))

# %% [markdown]
# ## Quick and paper tiers
#
# The paper tier runs the grid described in {ref}`pfa-paper-grid`. Where its
# runs are published with the book, a quick build renders its verdicts from them
# and shows them beside its own in the claims table; below, how the two tiers
# compare, and why a verdict flips where one does.

# %%
chapter.compare_tiers(claims, pfa_notes.TIER_NOTES)

# %% [markdown]
# ### Reading the verdicts
#
# Heterogeneous DP is expected to break plain averaging when 90% of the clients have
# $\varepsilon \approx 0.1$, most as the budgets spread (Figure 4). Whether
# *projection* then adds anything over $\varepsilon$-weighting is what the claims test.

# %%
verdicts = pfa_readings.pfa_against_weiavg(final)
say("At this tier FedAvg ends at {fedavg_lo:.2f} to {fedavg_hi:.2f} and Minimum at "
    "{minimum_lo:.2f} to {minimum_hi:.2f} on Figure 3's CNN panels (MixGauss1), and at "
    "{fedavg4_lo:.2f} to {fedavg4_hi:.2f} and {minimum4_lo:.2f} to {minimum4_hi:.2f} across "
    "Figure 4's budget distributions ({model4}). Over this tier's seeds ({seeds3} of Figure "
    "3's settings, {seeds4} of Figure 4's), PFA is "
    "ahead of WeiAvg beyond the run-to-run uncertainty in {n_ahead} of the {n} settings of "
    "Figures 3 and 4{ahead} and behind it in {n_behind}{behind}{one_seed}.",
    **verdicts,
    one_seed=(" (one seed gives no interval, so neither is possible there)"
              if 1 in (verdicts["seeds3"], verdicts["seeds4"]) else ""))

# %% [markdown]
# Why projection would add little here:
#
# - WeiAvg already gives the 27 private clients of MixGauss1 about 8% of the weight
#   ($27 \times 0.1$ against $3 \times 10$), so the noise PFA removes from their mean
#   is a small part of the aggregate's noise;
# - with 10% public clients ($3$ of $M=30$, at most 2 eigen-directions), the subspace
#   PFA projects on is almost entirely made of the public clients' own noisy updates;
#   projecting the private mean onto it discards the private clients' signal along
#   with their noise, which can put PFA *below* FedAvg when every client has a similar
#   budget (Uniform, Gauss);
# - the projected private mean carries little weight either way, and the random
#   subspace used as the text uses it keeps almost nothing of the private mean, so
#   whether the subspace is the public one or random should matter little at small $k$
#   for LogR (Figure 6b).

# %%
say("Measured at this tier: under Uniform and Gauss budgets (Figure 4) FedAvg ends at "
    "{fedavg_u:.3f} and {fedavg_g:.3f}, PFA at {pfa_u:.3f} and {pfa_g:.3f}. In Figure 6b, "
    "at k ≤ 10, the public and the random subspace end at most {centred:.1f} points "
    "apart on the mean in the released code's centred form and {linear:.1f} in the text's "
    "linear form.",
    **pfa_readings.projection_adds_little(final))

# %% [markdown]
# The paper's runs have more local steps ($\tau=100$) and more rounds, which the paper
# tier runs, and a tuned learning rate per method, which the quick tier chooses from
# the paper's grid on MNIST-LogR ({ref}`pfa-learning-rates`); Algorithm 3 as the text
# writes it runs beside the code's ({ref}`pfa-algorithm-3`). Scale is not what
# separates these verdicts from the paper's, though: the noise calibration is (next
# section).
#
# What the paper's scale does change is how much noise a round carries. A client with
# $\varepsilon \approx 0.1$ spends its budget over about 8,000 local steps at the paper
# tier (80 rounds taken of 100 steps) instead of about 480, so the accountant gives it
# a noise multiplier of about 20 instead of about 5 (the ledger below), and each round's
# update sums 100 noisy steps instead of 20: about 8 times the noise per round, for 4
# times the rounds. What the two tiers' stored runs give, each number named by its tier:

# %%
tiers = pfa_readings.figure_3_across_tiers(tier_runs("quick", "fig3"), tier_runs("paper", "fig3"))
if tiers is None:
    say("The paper tier's runs of Figure 3 are {missing} in this build, so this page quotes "
        "none of their numbers.", missing="not stored")
else:
    say("On the LogR panels of the paper tier's Figure 3 the aggregators end at {logr_lo:.2f} "
        "to {logr_hi:.2f}. On both CNN panels, WeiAvg, PFA and PFA+ reach {peak_lo:.2f} to "
        "{peak_hi:.2f} within the first 20 rounds and end at {end_lo:.2f} to {end_hi:.2f}; "
        "{below} of the {n_cnn} CNN arms of FedAvg, WeiAvg, PFA, "
        "PFA+ and Minimum end below their quick-tier accuracy (paper tier: {paper_lo:.2f} to "
        "{paper_hi:.2f}; quick tier: {quick_lo:.2f} to {quick_hi:.2f}).",
        **tiers)

# %%
fig4_paper_runs = tier_runs("paper", "fig4")
fig4_paper = pfa_readings.stored_final(fig4_paper_runs)
if fig4_paper is None:
    say("The paper tier's runs of Figure 4 are {missing} in this build, so this page quotes "
        "none of their numbers.", missing="not stored")
else:
    say("Figure 4 at the paper tier ({model}; means over {seeds_main} seed(s) of FedAvg, "
        "WeiAvg, PFA and PFA+ and {seeds_rest} of the others): under Uniform budgets FedAvg "
        "ends at {fedavg_u:.2f}, WeiAvg at {weiavg_u:.2f}, PFA at {pfa_u:.2f} and PFA+ at "
        "{plus_u:.2f}; under Gauss at {fedavg_g:.2f}, {weiavg_g:.2f}, {pfa_g:.2f} and "
        "{plus_g:.2f}. Across the spread-out mixtures (MixGauss1, 2 and 4) FedAvg ends at "
        "{fedavg_m}, WeiAvg at {weiavg_m}, PFA at {pfa_m}, PFA+ at {plus_m}, Minimum at "
        "{minimum_m}, Maximum at {maximum_m} and NP-FedAvg at {np_m}.",
        **pfa_readings.figure_4_paper_tier(fig4_paper))

# %% [markdown]
# Where PFA and PFA+ end far below FedAvg and WeiAvg under the alike budgets, projecting
# the private mean onto the few directions the sampled public clients' updates span (no
# more than those three updates, whatever k is) throws away most of what 90% of the
# clients contribute. Where every aggregator ends near chance (0.1), which of them is
# "more robust" would be decided near chance. Each comparison is judged over the seeds
# the tier runs of it (the setup table says how many); a tier with one repeat judges
# none of them.

# %%
public_budgets = (None if fig4_paper is None
                  else pfa_readouts.public_budgets_table(fig4_paper_runs))
if public_budgets is not None:
    display(pfa_readings.public_budgets_shown(public_budgets))
    reading = pfa_readings.public_budgets_reading(
        public_budgets, int(fig4_paper_runs["n_clients"].iloc[0]))
    say("Seed by seed (the table), PFA's accuracy follows the budgets of its {n_public} "
        "public clients, the top 10% by budget. In {n_full} of the {n_mix} mixture "
        "settings at least {n_public} clients drew their budget from the component at 10 "
        "(the column \"{top}\" counts them, each budget given to the component likeliest "
        "to have drawn it), so all public clients sit near 10 ({seeds_full}): PFA ends at "
        "{pfa_full} there, FedAvg at {fedavg_full}. In the other {n_short} "
        "({seeds_short}) fewer than {n_public} clients drew from the component at 10, so a "
        "client of budget {low_budgets} counts as public: PFA ends at {pfa_short}, with "
        "FedAvg at {fedavg_short}. With {n_clients} clients and that component's weight "
        "of 0.1, a draw falls short of {n_public} with probability {chance:.2f} "
        "(binomial): with that probability a seed of the paper's own mixtures puts a "
        "client of the lower budgets among the public ones. The authors' code chooses its "
        "public clients the same way (a client is public when its budget is among the "
        "{n_public} largest, ties included: the top 10%); the paper's Remark 2 suggests "
        "grouping the clients by clustering their budgets where they come from a mixture, "
        "which would keep such a client out of the public ones. Under Gauss the public "
        "clients' budgets are {gauss_low:.1f} to {gauss_high:.1f}, about half of Uniform's "
        "{uniform_low:.1f} to {uniform_high:.1f}, and PFA ends at {pfa_gauss} against "
        "{pfa_uniform} under Uniform.",
        **reading, top=pfa_readouts.TOP_COLUMN)
    say("WeiAvg, which weighs each update by its client's budget, follows how many clients "
        "drew from the component at 10 rather than whether the public set is full, while "
        "PFA's subspace stays that of its {n_public} public clients however many there are. "
        "By that count, over the three mixtures: {by_count}.",
        n_public=reading["n_public"], by_count=pfa_readings.by_top_count(public_budgets))
    spread = pfa_readings.fedavg_spread_under_gauss(public_budgets)
    say("FedAvg weighs every sampled client's update alike, so the smallest budget of all "
        "(the noisiest update) is the first suspect for its spread under Gauss. Seed by "
        "seed it ends at {fedavg_gauss}: {reading} (WeiAvg, which weighs the updates by "
        "budget, ends at {weiavg_gauss}).",
        fedavg_gauss=spread["by_seed"],
        reading=("too few seeds to read a rank correlation" if spread["rank"] is None
                 else f"a rank correlation of {spread['rank']:.2f} over {spread['n']} seeds "
                 f"(p = {spread['p_value']:.2f}), " + (
                     "so the spread goes with the smallest budget" if spread["correlated"]
                     else "too weak to put the spread on the smallest budget")),
        weiavg_gauss=spread["weiavg"])

# %%
beside = pfa_readings.cnn_beside(tier_runs("paper", f) for f in ("fig3", "fig8"))
if public_budgets is not None and beside is not None:
    say("The CNN settings of Figures 3 and 8 (MNIST and Fashion-MNIST, IID; MNIST "
        "non-IID) draw their MixGauss1 budgets from the same seeds, and show the same "
        "split over {n_seeds} seeds: PFA ends at {pfa_full} where the public clients all "
        "drew from the component at 10 ({seeds_full}) and at {pfa_short} where one of them did not "
        "({seeds_short}), FedAvg at {fedavg} throughout.",
        **beside)

# %% [markdown]
# (pfa-authors-code)=
# ## The authors' code beside ours
#
# The authors' released code (`Emory-AIMS/PFA`, TensorFlow 1-style with TensorFlow
# Privacy) was run unmodified at its defaults with $M=30$: MNIST, logistic regression,
# 2,000 IID examples per client, 100 rounds of 100 local DP-SGD steps, batch 4 in 4
# microbatches (per-example clipping at $C=1$), lr 0.1, 80% of the clients per round,
# $k=1$, 256 Lanczos iterations. Its budget files `mixgauss1.txt` and `mixgauss3.txt` hold
# our MixGauss2 and MixGauss1 (their file names are shifted from the paper's Table 1).
# The setting "authors" runs our implementation at the same configuration, drawing the
# very budgets of their runs from the same numpy seeds, once with the authors' noise
# calibration and once with the exact accountant (rounds and local steps are in the
# column names: the quick tier runs fewer; the paper tier runs their 100 x 100, shown
# beside this build's runs when it is published). Their accuracies, with the commit,
# versions and command, are recorded in `fedlib.papers.pfa.authors`.

# %%
# At the paper tier the setting's own runs are the authors' 100 x 100; another tier shows
# them beside its own where they are published.
paper_authors = pfa_readings.published_authors(scale, seed)
if scale != "paper":
    display(Markdown("Our runs at the authors' 100 x 100: " + (
        provenance_line(pfa.EXPERIMENT, paper_authors["run_key"])
        if paper_authors is not None
        else "not published in this checkout (the paper tier computes them).")))
if "authors" in left_out:
    display(Markdown(left_out_note(["authors"], left_out)))
else:
    comparison = pfa_readouts.authors_comparison(runs, paper_authors)
    display(pfa_readouts.authors_table(comparison))
    display(pfa_readouts.authors_by_seed(comparison).round(3))

# %% [markdown]
# Final accuracy (mean of the last 10 evaluations), mean ± sd over seeds (number of
# seeds). Below, seed by seed (each seed draws the same budgets in both codes; how many
# clients drew a budget near 10 names the draw, and the "public" clients are the top 3
# whatever their budgets), every source's accuracies and how many points PFA and PFA+
# are above WeiAvg.
#
# What the comparison shows:
#
# - **The calibration decides the ordering.** The authors' code sets a client's noise
#   multiplier with the closed form $10\,q\sqrt{T^*\log_{10}(1/\delta)}/\varepsilon$
#   ($T^*$: all its planned local steps) and retires it with the same formula. At their
#   defaults that is $4/\varepsilon$: 40 for $\varepsilon=0.1$ and 8 for 0.5, five to
#   six times what an exact accountant needs (6.1 and 1.6), and 0.4 for $\varepsilon=10$,
#   less than it needs (0.51: such a client really spends $\varepsilon \approx 25$). With
#   the closed form the private clients are so noisy that discarding their update, as PFA
#   nearly does, wins: PFA then beats WeiAvg as in the paper. With the accountant the
#   private updates carry signal and WeiAvg keeps it. Their own code, given the noise
#   multipliers of the exact accountant (the column "authors' code, RDP"; their source
#   unchanged, a driver replaces their closed-form noise function and their budget
#   accountant at run time), shifts the same way: on the draws with three or four budgets
#   near 10 its WeiAvg rises by 15 to 53 points (MixGauss1: 0.585 to 0.798 at seed 10,
#   0.188 to 0.719 at seed 4; MixGauss2 at seed 10: 0.671 to 0.825) and its PFA falls by
#   3 to 7 points (0.833 to 0.766, 0.825 to 0.772, 0.827 to 0.798). PFA's lead over
#   WeiAvg, 16 to 64 points under the closed form, becomes -3.2 (seed 10, MixGauss1),
#   -2.7 (seed 10, MixGauss2) and +5.3 points (seed 4, MixGauss1): WeiAvg is ahead on two
#   of the three draws, PFA on the third by less than a single run of their code moves
#   with its unseeded noise. Over the three MixGauss1 seeds, PFA - WeiAvg in their code
#   is -0.082 [-0.49, 0.33] with the accountant against +0.300 [-0.48, 1.08] with the
#   closed form (paired 95% intervals, one run per seed): the accountant removes PFA's
#   advantage in their code as in ours, and three seeds establish a reversed ordering in
#   neither. The tables above put our runs beside theirs, seed by seed and calibration by
#   calibration.
# - **The subspace hardly matters at $k=1$.** Their Lanczos routine, run for 256
#   iterations on the rank-2 covariance of 3 public updates without a breakdown test,
#   returns a direction mostly outside the public updates' span; PFA with a random
#   direction (our ablation, in the table) does nearly as well as with the true top
#   eigenvector (0 to 6 points lower on average, far inside the spread over seeds).
#   What PFA keeps is essentially the public clients' mean.
# - **PFA needs the public clients to be generous.** The top 10% are public whatever
#   their budgets; in a draw with fewer than 3 budgets near 10, low-budget clients are
#   "public", their noise enters the public mean unweighted, and PFA loses its lead
#   over WeiAvg (seed 1 draws a single budget near 10: in their code with the closed form
#   every private method ends at or below 0.27, and PFA is 1.4 points above WeiAvg on
#   MixGauss1 and 18 below it on MixGauss2, against 16 to 64 points above it on the
#   draws with three or four budgets near 10; with the accountant's noise it is 27 and
#   24 points below WeiAvg at seed 1). The tables above give our runs of the same draws.
# - **What still differs** between the two codes at the same draw: their FedAvg and
#   WeiAvg need no public client, so their rounds and participants differ from the
#   schedule our aggregators share, and single runs move by up to 20-25 points with the
#   noise alone (their DP noise is not seeded, so a rerun of their code moves too; under
#   the closed form their WeiAvg at seed 4 on MixGauss1 ends at 0.19, with the
#   accountant at 0.72).
# - **Absolute accuracies differ** between the two codes: their LogR applies the softmax
#   twice (probabilities go into the softmax cross-entropy as logits), starts at zero and
#   sees unstandardised pixels, so its gradients shrink as it learns while the noise does
#   not. The model `logr-authors` runs theirs in our loop (on the
#   engine's general path, about 13 times slower).

# %% [markdown]
# ## Privacy: every client's ledger
#
# Each client's noise multiplier is calibrated once, from its own budget, so that the
# rounds it is expected to take part in ($T K / M$, each $\tau$ steps at sampling rate
# $B/N_m$) spend exactly that budget under the RDP bound (integer orders 2-512). The
# ledger charges every round a client takes part in and retires the client when one
# more round would exceed its budget. The authors' closed form
# $10\,q\sqrt{T^*\log_{10}(1/\delta)}/\varepsilon$ is shown beside the calibrated value,
# and the epsilon each client really spent is also given by the PLD accountant:

# %%
example = pfa.configs(setup, seed)[0]
ledger = pfa_readouts.ledger_table(example)
display(ledger.round(3))
display(Markdown(pfa_readouts.ledger_note(example, ledger)))

# %% [markdown]
# The same for the first closed-form run of the authors' defaults (its noise is the
# closed form's; the spent columns give what it costs under the accountants):

# %%
authors_example = pfa_readouts.authors_example(setup, seed)
authors_ledger = pfa_readouts.ledger_table(authors_example)
display(authors_ledger.round(3))
display(Markdown(pfa_readouts.ledger_note(authors_example, authors_ledger)))

# %% [markdown]
# ## Deviations from the paper
#
# From the paper, and from the authors' released code (commit `72b3f89`), which the
# paper's text does not always match:
#
# - Noise multipliers come from an exact accountant per client (RDP, integer orders);
#   the authors use a closed form that over-noises small budgets and under-noises large
#   ones (above, and the setting "authors", which runs both). The ledger retires a client
#   when one more round would exceed its budget, as their code does with its formula;
#   both allow exactly the planned rounds (their float comparison refuses the last one to
#   about one client in ten).
# - DP-SGD batches are drawn without replacement within a step (fixed size $B$) while the
#   accountant assumes Poisson sampling at rate $B/N_m$, as is common practice (and as
#   the authors do).
# - Data: the paper's text gives 1,200 examples per client and $B=8$; the authors' code
#   deals out the whole training set (2,000 per client at $M=30$) with $B=4$ in 4
#   microbatches (per-example clipping). The figures follow the text, the setting
#   "authors" the code.
# - The quick tier runs $T=30$ rounds of $\tau=20$ steps (paper: 100 and 100), three
#   repeats (paper: 5), one learning rate per model for the figures (paper: the best of a
#   grid per method; the quick tier chooses one per method from the paper's grid on
#   MNIST-LogR only, see {ref}`pfa-learning-rates`), $k=1$
#   for Figures 3, 4 and 8, 2,000 test images, and Figure 4 with LogR instead of the
#   CNN; its run of the authors' defaults has the same $T$ and $\tau$ and their three
#   seeds. The paper tier restores all but the learning-rate grid and some of the CNN
#   settings' repeats (the LogR settings keep the paper's five; the CNN settings' are
#   listed with {ref}`its grid <pfa-paper-grid>`).
# - Budgets: the figures draw from Table 1 with their own generator; the setting
#   "authors" draws as the authors' code does (numpy's legacy generator, all budgets
#   drawn again until one exceeds 1). Pareto budgets: the paper gives no parameters; we
#   use scale 1, shape 1.16, capped at 10 *(inferred)*. Gaussian draws are floored at
#   0.01 (a budget must be positive).
# - Sampling: all aggregators of a setting share one schedule, which redraws until a
#   public client is in the round and stops training when none is left; the authors'
#   code does this for PFA only (its FedAvg and WeiAvg need no public client) and lets
#   NP-FedAvg run every round, where ours stops with the private runs (a few rounds
#   early).
# - The subspace is computed exactly (SVD) from the centred covariance of the individual
#   public updates (the authors' code), not the rank-one $\bar x \bar x^\top$ of the
#   text; when $k$ exceeds its rank the remaining directions are random in the orthogonal
#   complement. Algorithm 3 as the text writes it runs beside it in
#   {ref}`pfa-algorithm-3` and in Figure 6b. The authors' Lanczos routine returns, at
#   its default 256 iterations, a direction mostly outside the public updates' span (see
#   above). A lone public update is not centred, in both: the private mean is projected
#   on the line along it.
# - Models output plain logits on standardised pixels from torch's default
#   initialisation; the authors' LogR applies softmax twice, starts at zero and sees
#   pixels in $[0, 1]$ (available as the model `logr-authors`).
# - Figure 5 runs at the paper tier only, on a GPU. Its models are inferred (the paper's appendix
#   table did not survive): for CIFAR-10 the conv32-pool-conv64-pool (5x5)-FC512-FC10
#   network, for IMDb a word embedding (32) and one LSTM layer (32 units) over the last
#   200 words of each review, vocabulary of the 10,000 most frequent training words.
#   50 clients of 1,200 examples do not fit in either training set: each client holds
#   an equal share (1,000 images, 500 reviews). Where the original CIFAR-10 archive is
#   not available, the JPEG proxy is used and the panel says so.

# %%
chapter.close()
