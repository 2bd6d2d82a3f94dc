"""Liu et al. (2022), PFA: what the chapter reads off the runs (final accuracies,
accuracy curves, spectra, uplink traffic, per-client ledgers, the learning rates chosen
on validation data, the public clients' budgets, the authors' setting) and the tables it
shows. The claims (:mod:`fedlib.papers.pfa.claims`), the figures and the chapter's prose
all read from here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from fedlib.papers.pfa.aggregation import upload_bytes
from fedlib.papers.pfa.authors import AUTHORS_FILES, AUTHORS_RDP_RUNS, AUTHORS_RUNS
from fedlib.papers.pfa.budgets import (
    BUDGET_DISTRIBUTIONS,
    closed_form_noise_multiplier,
    expected_rounds,
    public_clients,
)
from fedlib.papers.pfa.experiment import (
    DELTA,
    DISTRIBUTIONS,
    LABELS,
    MAIN_AGGREGATORS,
    PfaSetup,
    build_model,
    configs,
    hyperparameters,
    setting_budgets,
    setting_examples_per_client,
)
from fedlib.papers.pfa.training import PUBLIC_FRACTION, SAMPLING_RATIO, plan_participation
from fedlib.privacy.accounting import epsilon
from fedlib.privacy.ledger import calibrated_noise_multiplier, ledger_epsilon
from fedlib.verdicts.compare import (
    difference,
    per_seed,
    where_mask,
)

ARM_COLUMNS = ("figure", "dataset", "model", "partition", "distribution", "calibration",
               "aggregator", "k", "projection", "lr", "rounds", "local_steps")
"""What tells one compared arm's runs from another's, its seeds aside."""


def final_accuracy(runs: pd.DataFrame, last: int = 3) -> pd.DataFrame:
    """Mean test accuracy over the last ``last`` evaluation rounds of each run (every
    ``eval_every`` rounds and the last). A run whose model diverged (an accuracy that is
    not a number in those rounds) ends at NaN, not at its last evaluations before it
    diverged. Runs of an arm the tuning protocol could not tune carry the reason in
    ``untuned`` (empty otherwise)."""
    every = runs["eval_every"] if "eval_every" in runs else 1
    evaluation = (runs["round"] > 0) & ((runs["round"] % every == 0)
                                        | (runs["round"] == runs["round"].groupby(
                                            runs["run_key"]).transform("max")))
    tail = runs[evaluation].sort_values("round").groupby("run_key").tail(last)
    keys = [*ARM_COLUMNS, "seed", "untuned"]
    tail = tail.assign(calibration=tail["calibration"].fillna("rdp")
                       if "calibration" in tail else "rdp",
                       untuned=tail["untuned"].fillna("") if "untuned" in tail else "")
    return tail.groupby(keys, as_index=False)["accuracy"].agg(
        lambda values: values.mean(skipna=False))


def final_validation(runs: pd.DataFrame, last: int = 3) -> pd.DataFrame:
    """Mean validation accuracy over the last ``last`` evaluations of each run of the
    learning-rate setting (``figure == "lr"``), one row per method, rate and seed."""
    if "val_accuracy" not in runs:
        return pd.DataFrame(columns=["aggregator", "projection", "lr", "seed",
                                     "val_accuracy"])
    chosen = runs[runs["figure"] == "lr"].dropna(subset=["val_accuracy"])
    tail = chosen.sort_values("round").groupby("run_key").tail(last)
    return tail.groupby(["aggregator", "projection", "lr", "seed"],
                        as_index=False)["val_accuracy"].mean()


def accuracy_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """The evaluated rounds of every run, with the aggregator's name in ``method``."""
    curves = runs.dropna(subset=["accuracy"]).copy()
    curves["method"] = curves["aggregator"].map(LABELS)
    return curves


def setup_table(setup: PfaSetup, scale: str, repeats: str | None = None) -> pd.DataFrame:
    """The tier's setup, one row per quantity (for the chapter's setup table); ``repeats``
    says how many seeds each setting runs where they differ (the setup's count
    otherwise)."""
    return pd.DataFrame({
        "tier": [scale],
        "clients M": [setup.n_clients],
        "rounds T": [setup.rounds],
        "local steps tau": [setup.local_steps],
        "batch B": [setup.batch_size],
        "learning rate (LogR, CNN)": [f"{setup.lr_logr}, {setup.lr_cnn}"],
        "rates tried per method (setting lr: MNIST-LogR)": [
            ", ".join(f"{lr:g}" for lr in setup.lr_grid) or "not run"],
        "projection dimension k (Figures 3, 4, 8)": [setup.k],
        "test examples": [setup.n_test],
        "repeats": [repeats or str(setup.repeats)],
        "Figure 4 model": [setup.fig4_model],
        "authors' defaults (T x tau, numpy seeds)": [
            f"{setup.authors.rounds} x {setup.authors.local_steps}, "
            f"{', '.join(map(str, setup.authors.seeds))}" if setup.authors else "not run"],
    }).T.rename(columns={0: ""})


def authors_example(setup: PfaSetup, seed: int) -> dict[str, Any] | None:
    """The first closed-form run config of the authors'-defaults setting (None when the
    tier has none): the ledger the chapter shows for it."""
    planned = [c for c in configs(setup, seed, figures=("authors",))
               if c["calibration"] == "closed-form"]
    return planned[0] if planned else None


def ledger_table(config: dict[str, Any], accountant_check: str = "pld") -> pd.DataFrame:
    """Per client of a setting: budget, noise multiplier (exact RDP calibration and the
    authors' closed form, both over the planned steps), rounds taken and the epsilon
    actually spent with the noise the setting's calibration uses (RDP, and under
    ``accountant_check``: NaN where it cannot compute it)."""
    budgets = setting_budgets(config)
    hyper = hyperparameters(config)
    n_examples = setting_examples_per_client(config)
    ledger, public, _ = plan_participation(budgets, n_examples, hyper, DELTA, config["seed"])
    q = hyper.batch_size / n_examples
    planned_steps = ledger.planned_rounds * hyper.local_steps
    rows = []
    for m, budget in enumerate(budgets):
        nm = float(ledger.noise_multipliers[m])
        steps = int(ledger.rounds_taken[m]) * hyper.local_steps
        rows.append({
            "client": m, "public": bool(public[m]), "budget": budget,
            "noise multiplier (RDP calibration)": calibrated_noise_multiplier(
                float(budget), q, planned_steps, DELTA),
            "noise multiplier (authors' closed form)": closed_form_noise_multiplier(
                float(budget), q, planned_steps, DELTA),
            "rounds taken": int(ledger.rounds_taken[m]),
            "epsilon spent (RDP)": ledger_epsilon(nm, q, steps, DELTA),
            f"epsilon spent ({accountant_check.upper()})": _epsilon_or_nan(
                nm, q, steps, accountant_check),
        })
    return pd.DataFrame(rows)


def _epsilon_or_nan(nm: float, q: float, steps: int, accountant: str) -> float:
    """Epsilon under ``accountant``; NaN below the noise it can compute (the closed form
    gives large budgets such noise on short runs; the RDP column still bounds them)."""
    try:
        return epsilon(nm, q, steps, DELTA, accountant=accountant)
    except ValueError:
        return float("nan")


def closed_form_rdp_epsilon(config: dict[str, Any], budget: float) -> float:
    """Epsilon (RDP) of the authors' closed-form noise for ``budget`` over the planned
    steps of ``config``."""
    hyper = hyperparameters(config)
    n_sample = max(1, round(SAMPLING_RATIO * config["n_clients"]))
    q = hyper.batch_size / setting_examples_per_client(config)
    steps = expected_rounds(hyper.rounds, n_sample, config["n_clients"]) * hyper.local_steps
    return epsilon(closed_form_noise_multiplier(budget, q, steps, DELTA), q, steps, DELTA)


def ledger_note(config: dict[str, Any], ledger: pd.DataFrame) -> str:
    """What the ledger of ``config`` (from :func:`ledger_table`) says about the smallest and
    the largest budget: the closed-form noise against the calibrated one, and what the
    closed form would spend (Markdown)."""
    parts = []
    for which, row in (("smallest", ledger["budget"].idxmin()),
                       ("largest", ledger["budget"].idxmax())):
        budget = float(ledger.loc[row, "budget"])
        closed_form = float(ledger.loc[row, "noise multiplier (authors' closed form)"])
        calibrated = float(ledger.loc[row, "noise multiplier (RDP calibration)"])
        spent = closed_form_rdp_epsilon(config, budget)
        parts.append(
            f"the {which} budget, $\\varepsilon={budget:.3f}$, gets noise multiplier "
            f"{closed_form:.3g} from the authors' closed form where the accountant needs "
            f"{calibrated:.3g}; with the closed-form noise it would spend "
            f"$\\varepsilon={spent:.3g}$ (RDP)")
    if config.get("calibration", "rdp") == "rdp":
        ending = ("Here noise comes from the accountant: no client exceeds its budget, and "
                  "clients sampled more often than planned are retired early.")
    else:
        ending = ("Here noise comes from the closed form, as in the authors' code: the "
                  "spent columns show what it really costs.")
    return (f"Over the planned rounds, {parts[0]}, and {parts[1]}. The closed form "
            f"over-noises small budgets and under-noises large ones. {ending}")


def paper_uplink_megabytes(model: str, k: int = 1, n_clients: int = 50, n_public: int = 5,
                           rounds: int = 100) -> dict[str, float]:
    """Uplink MB after ``rounds`` rounds at the paper's Figure 7 setting, every sampled
    client uploading every round: full updates versus PFA+ (public clients full, private
    clients k coefficients per layer; the warm-up round full)."""
    net = build_model(model, 0)
    sizes = {name: p.numel() for name, p in net.named_parameters()}
    n_sample = round(SAMPLING_RATIO * n_clients)
    n_private = n_sample - min(n_public, n_sample)
    full = upload_bytes(sizes, n_sample) * rounds
    plus = upload_bytes(sizes, n_sample) + (rounds - 1) * upload_bytes(
        sizes, n_sample - n_private, n_private, k)
    return {"full": full / 1e6, "pfa+": plus / 1e6}


def paper_uplink_table(k: int) -> pd.DataFrame:
    """:func:`paper_uplink_megabytes` of LogR and the CNN, one row per model."""
    paper_scale = pd.DataFrame({model: paper_uplink_megabytes(model, k)
                                for model in ("logr", "cnn")}).T
    return paper_scale.rename(columns={"full": "full updates (MB)", "pfa+": "PFA+ (MB)"})


def uplink_traffic(runs: pd.DataFrame) -> pd.DataFrame:
    """Cumulative uplink megabytes (``MB``) of every round of Figure 3's MNIST runs, with
    the aggregator's name in ``method``."""
    traffic = runs[(runs["figure"] == "fig3") & (runs["dataset"] == "mnist")].copy()
    traffic = traffic.sort_values("round")
    traffic["MB"] = traffic.groupby("run_key")["uplink_bytes"].cumsum() / 1e6
    traffic["method"] = traffic["aggregator"].map(LABELS)
    return traffic


def _arm(final: pd.DataFrame, **where: Any) -> pd.Series:
    """Final accuracy of the runs matching ``where``, one value per seed; where they are
    runs of an arm the tuning protocol could not tune, ``attrs["untuned"]`` says why."""
    values = per_seed(final, "accuracy", where=where)
    if "untuned" in final:
        reasons = final.loc[where_mask(final, where), "untuned"]
        reasons = sorted(set(reasons[reasons != ""]))
        if reasons:
            values.attrs["untuned"] = "; ".join(reasons)
    return values


PANELS = tuple((d, m) for d in ("mnist", "fashion-mnist") for m in ("logr", "cnn"))


METHOD_LABELS = {**{(a, "public"): LABELS[a] for a in MAIN_AGGREGATORS},
                 ("pfa", "random"): "PFA, random subspace (centred)",
                 ("pfa", "public-text"): "PFA as written (Alg. 3)",
                 ("pfa", "random-text"): "PFA as written, random subspace"}
"""A method's name from its aggregator and projection."""


TEXT_ARMS = (("weiavg", "public"), ("pfa", "public"), ("pfa", "public-text"))
"""The arms of the comparison of Algorithm 3 as written with the released code's PFA."""


def _text_settings(final: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The settings that run PFA as Algorithm 3 writes it beside the code's: Figure 3's
    panels and the authors' defaults under RDP (by model and budget file)."""
    settings = []
    fig3 = final[final["figure"] == "fig3"]
    for d, m in PANELS:
        panel = fig3[(fig3["dataset"] == d) & (fig3["model"] == m)]
        if (panel["projection"] == "public-text").any():
            settings.append((f"Figure 3, {d}-{m}", panel))
    authors = final[(final["figure"] == "authors") & (final["calibration"] == "rdp")]
    for model, distribution in sorted(set(zip(authors["model"], authors["distribution"],
                                              strict=True))):
        mine = authors[(authors["model"] == model) & (authors["distribution"] == distribution)]
        if (mine["projection"] == "public-text").any():
            scale = f"{int(mine['rounds'].iloc[0])} x {int(mine['local_steps'].iloc[0])}"
            settings.append((f"authors' defaults ({scale}, RDP), {MODEL_LABELS[model]}, "
                             f"{distribution}", mine))
    return settings


def text_projection_table(final: pd.DataFrame) -> pd.DataFrame:
    """Per setting of :func:`_text_settings`: final accuracy of WeiAvg, the released
    code's PFA and PFA as Algorithm 3 writes it (mean over seeds), and the differences
    text - code and text - WeiAvg with their 95% intervals (paired by seed)."""
    rows = []
    for name, frame in _text_settings(final):
        arms = {METHOD_LABELS[(a, p)]: _arm(frame, aggregator=a, projection=p)
                for a, p in TEXT_ARMS}
        text, code, weiavg = (arms[METHOD_LABELS[a]] for a in
                              (("pfa", "public-text"), ("pfa", "public"), ("weiavg", "public")))
        rows.append({"setting": name, "seeds": len(text),
                     **{label: round(float(v.mean()), 3) for label, v in arms.items()},
                     "as written - code": difference(text, code).text(),
                     "as written - WeiAvg": difference(text, weiavg).text()})
    return pd.DataFrame(rows).set_index("setting") if rows else pd.DataFrame()


def chosen_rates(validation: pd.DataFrame) -> pd.DataFrame:
    """Each method's learning rate: the rate of the grid with the highest final
    validation accuracy, averaged over seeds (ties go to the larger rate).

    ``validation``: :func:`final_validation`, one row per method, rate and seed. Every
    method must have been run at the same rates (as many configurations each).

    Returns one row per method: ``aggregator``, ``projection``, ``method``, ``lr``,
    ``val_accuracy`` (its mean over seeds) and ``rates`` (how many were tried).
    """
    columns = ["aggregator", "projection", "method", "lr", "val_accuracy", "rates"]
    if validation.empty:
        return pd.DataFrame(columns=columns)
    grids = validation.groupby(["aggregator", "projection"])["lr"].apply(
        lambda lr: tuple(sorted(set(lr))))
    if grids.nunique() != 1:
        raise ValueError("every method needs the same learning rates to choose from, got "
                         + "; ".join(f"{a}/{p}: {g}" for (a, p), g in grids.items())
                         + "; run every method at every rate of the grid")
    means = validation.groupby(["aggregator", "projection", "lr"],
                               as_index=False)["val_accuracy"].mean()
    best = (means.sort_values(["val_accuracy", "lr"], ascending=[False, False],
                              na_position="last")
            .groupby(["aggregator", "projection"], sort=False).head(1))
    best = best.assign(method=[METHOD_LABELS.get((a, p), f"{a}/{p}") for a, p in
                               zip(best["aggregator"], best["projection"], strict=True)],
                       rates=len(grids.iloc[0]))
    order = {m: i for i, m in enumerate(METHOD_LABELS)}
    best = best.sort_values("aggregator", key=lambda col: [
        order.get((a, p), len(order)) for a, p in zip(col, best["projection"], strict=True)])
    return best[columns].reset_index(drop=True)


def lr_grid_table(final: pd.DataFrame, validation: pd.DataFrame) -> pd.DataFrame:
    """Mean validation accuracy of every method (rows) at every rate (columns), and the
    chosen rate with its validation and test accuracy (means over seeds)."""
    if validation.empty:
        return pd.DataFrame()
    wide = validation.groupby(["aggregator", "projection", "lr"])["val_accuracy"].mean()
    wide = wide.unstack("lr").round(3)
    wide.index = [METHOD_LABELS.get(i, "/".join(i)) for i in wide.index]
    chosen = chosen_rates(validation).set_index("method")
    lr_runs = final[final["figure"] == "lr"]
    wide["chosen rate"] = chosen["lr"]
    wide["test accuracy at it"] = [
        round(float(_arm(lr_runs, aggregator=row.aggregator, projection=row.projection,
                         lr=float(row.lr)).mean()), 3)
        for row in chosen.reindex(wide.index).itertuples()]
    return wide.reindex([m for m in chosen.index if m in wide.index])


def spectrum_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Eigenvalues of the first layer's public updates' centred covariance (MNIST, Figure
    3's PFA runs), each with its share of their sum, and the singular values of the
    centred updates (their square roots) with their share of their sum (``sv_share``,
    what Remark 3's rule of thumb reads); ``rank`` counts the nonzero ones."""
    rows = []
    recorded = runs[(runs["figure"] == "fig3") & (runs["dataset"] == "mnist")
                    & (runs["aggregator"] == "pfa") & (runs["projection"] == "public")
                    & (runs["spectrum"] != "")]
    for _, row in recorded.iterrows():
        values = np.array([float(v) for v in row["spectrum"].split(",")])
        total = values.sum()
        singular = np.sqrt(np.clip(values, 0.0, None))
        sv_total = singular.sum()
        for i, value in enumerate(values):
            rows.append({"model": row["model"], "round": int(row["round"]), "index": i + 1,
                         "eigenvalue": value, "share": value / total if total > 0 else 0.0,
                         "singular_value": singular[i],
                         "sv_share": singular[i] / sv_total if sv_total > 0 else 0.0,
                         "rank": len(values), "seed": int(row["seed"])})
    return pd.DataFrame(rows)


PUBLIC_TABLE_AGGREGATORS = ("fedavg", "weiavg", "pfa", "pfa+")
"""The aggregators :func:`public_budgets_table` shows (as :data:`LABELS` names them)."""


def public_budgets_table(runs: pd.DataFrame, figures: tuple[str, ...] = ("fig4",),
                         model: str = "cnn", last: int = 3) -> pd.DataFrame:
    """The settings of ``figures`` with ``model``, seed by seed: the budgets of the
    setting's "public" clients (the top :data:`~fedlib.papers.pfa.training.PUBLIC_FRACTION`
    by budget, those whose updates span PFA's subspace), how many clients drew from the
    mixture's component of the largest mean (:data:`TOP_COLUMN`, by
    :func:`from_top_component`; missing where the distribution is not a Gaussian
    mixture: all public clients come from it when there are at least as many as public
    ones), the median budget of the others, the smallest budget of all (the noisiest
    update, which FedAvg weighs as much as any), and the final accuracy (mean of the last
    ``last`` evaluations) of the aggregators of
    :data:`PUBLIC_TABLE_AGGREGATORS` that ran there (NaN where one did not)."""
    columns = ["figure", "dataset", "distribution", "seed", "public budgets",
               "smallest public budget", TOP_COLUMN, "others' median budget",
               "smallest budget",
               *(LABELS[a] for a in PUBLIC_TABLE_AGGREGATORS)]
    chosen = (runs[runs["figure"].isin(figures) & (runs["model"] == model)]
              if len(runs) else runs)
    if chosen.empty:
        return pd.DataFrame(columns=columns)
    final = final_accuracy(chosen, last)
    final = final[final["projection"] == "public"]
    rows = []
    setting = ["figure", "dataset", "distribution", "seed"]
    for figure, dataset, distribution, seed, n_clients in (
            chosen[[*setting, "n_clients"]].drop_duplicates().itertuples(index=False)):
        budgets = setting_budgets({"distribution": distribution, "seed": int(seed),
                                   "n_clients": int(n_clients)})
        public = public_clients(budgets, PUBLIC_FRACTION)
        mine = final[(final["figure"] == figure) & (final["dataset"] == dataset)
                     & (final["distribution"] == distribution) & (final["seed"] == seed)]
        accuracy = {LABELS[aggregator]: float(mine.loc[mine["aggregator"] == aggregator,
                                                       "accuracy"].mean())
                    for aggregator in PUBLIC_TABLE_AGGREGATORS}
        rows.append({"figure": figure, "dataset": dataset, "distribution": distribution,
                     "seed": int(seed),
                     "public budgets": ", ".join(f"{b:.2f}" for b in np.sort(budgets[public])),
                     "smallest public budget": float(budgets[public].min()),
                     TOP_COLUMN: (int(from_top_component(distribution, budgets).sum())
                                  if distribution.startswith("mixgauss") else pd.NA),
                     "others' median budget": float(np.median(budgets[~public])),
                     "smallest budget": float(budgets.min()),
                     **accuracy})
    order = {d: i for i, d in enumerate(DISTRIBUTIONS)}
    table = pd.DataFrame(rows, columns=columns).astype({TOP_COLUMN: "Int64"})
    return table.sort_values(
        setting, key=lambda c: c.map(order) if c.name == "distribution" else c,
        ignore_index=True)


TOP_COLUMN = "clients from the top component"
"""The column of :func:`public_budgets_table` counting the clients whose budget came from
the component of the largest mean (budget 10 in every mixture of Table 1)."""


def from_top_component(distribution: str, budgets: np.ndarray) -> np.ndarray:
    """Whether each budget came from the component of ``distribution`` (a Gaussian mixture
    of Table 1) with the largest mean: the component most likely to have drawn it, each
    component's density weighted by its weight. (The nearest mean would not do: under
    MixGauss4 a budget of 5.4 is nearer the component at 1 than the one at 10, and only the
    latter can draw it.)"""
    weights, means, stds = (np.array(c) for c in zip(*_mixture(distribution), strict=True))
    budgets = np.asarray(budgets, dtype=float)
    likelihood = np.log(weights) + stats.norm.logpdf(budgets[:, None], means, stds)
    return np.argmax(likelihood, axis=1) == int(np.argmax(means))


def _mixture(distribution: str) -> tuple[tuple[float, float, float], ...]:
    """The (weight, mean, std) components of a Gaussian mixture of Table 1."""
    if not distribution.startswith("mixgauss") or distribution not in BUDGET_DISTRIBUTIONS:
        raise ValueError(f"{distribution!r} is not one of the Gaussian mixtures of "
                         f"Table 1; use one of "
                         f"{', '.join(d for d in BUDGET_DISTRIBUTIONS if 'mix' in d)}")
    return BUDGET_DISTRIBUTIONS[distribution]


def short_of_public_chance(distribution: str, n_clients: int) -> float:
    """The chance that fewer clients than the public ones (the top
    :data:`~fedlib.papers.pfa.training.PUBLIC_FRACTION`) draw their budget from the
    mixture component of ``distribution`` with the largest mean: then a client of a
    lower component counts as public. Binomial in the clients, each drawing that component
    with its weight."""
    components = _mixture(distribution)
    weights = np.array([c[0] for c in components])
    top = weights[int(np.argmax([c[1] for c in components]))] / weights.sum()
    n_public = max(1, int(round(PUBLIC_FRACTION * n_clients)))
    return float(stats.binom.cdf(n_public - 1, n_clients, top))


AUTHORS_METHODS = {("fedavg", "public"): "FedAvg", ("weiavg", "public"): "WeiAvg",
                   ("pfa", "public"): "PFA", ("pfa+", "public"): "PFA+",
                   ("pfa", "random"): "PFA, random direction",
                   ("pfa", "public-text"): "PFA as written (Alg. 3)",
                   ("pfa", "random-text"): "PFA as written, random direction",
                   ("np-fedavg", "public"): "NP-FedAvg"}
"""The methods of the comparison, in the order of its table."""


MODEL_LABELS = {"logr-authors": "their LogR", "logr": "our LogR"}


CALIBRATION_LABELS = {"closed-form": "closed form", "rdp": "RDP"}


def authors_comparison(runs: pd.DataFrame, paper_runs: pd.DataFrame | None = None,
                       last: int = 10) -> pd.DataFrame:
    """Final accuracy (mean of the last ``last`` evaluations) of every run of the
    ``"authors"`` setting and of every run of the authors' code
    (:data:`fedlib.papers.pfa.authors.AUTHORS_RUNS`, their closed-form noise, and
    :data:`fedlib.papers.pfa.authors.AUTHORS_RDP_RUNS`, the exact accountant's), one row per
    run: ``source`` (ours or the authors' code, with the model and the calibration),
    ``distribution`` (ours; the non-private runs under each, and under both of the authors'
    calibrations: they add no noise), ``method``, ``seed``, ``high_budgets`` (clients drawn
    near 10), ``scale`` (rounds x local steps) and ``accuracy``. ``paper_runs``: the
    paper tier's runs of the setting, when this build is of another tier and they are
    published (their source is then labelled with their own scale)."""
    if paper_runs is not None:
        runs = pd.concat([runs, paper_runs], ignore_index=True).drop_duplicates(
            ["run_key", "round"])
    ours = runs[runs["figure"] == "authors"]
    rows = []
    if not ours.empty:
        final = final_accuracy(ours, last)
        keys = ["model", "distribution", "calibration", "aggregator", "projection", "seed",
                "rounds", "local_steps"]
        settings = ours.drop_duplicates("run_key").set_index(keys)
        for _, row in final.iterrows():
            config = settings.loc[tuple(row[k] for k in keys)]
            budgets = setting_budgets({**config.to_dict(), "distribution": row["distribution"],
                                       "seed": row["seed"]})
            source = (f"ours, {MODEL_LABELS[row['model']]}, "
                      f"{CALIBRATION_LABELS[row['calibration']]}")
            rows.append({"source": source,
                         "distribution": row["distribution"],
                         "method": AUTHORS_METHODS[(row["aggregator"], row["projection"])],
                         "seed": int(row["seed"]), "high_budgets": int((budgets > 1).sum()),
                         "scale": f"{int(row['rounds'])} x {int(row['local_steps'])}",
                         "accuracy": row["accuracy"]})
    for calibration, recorded in (("closed-form", AUTHORS_RUNS), ("rdp", AUTHORS_RDP_RUNS)):
        source = f"authors' code, {CALIBRATION_LABELS[calibration]}"
        nonprivate = [r for r in AUTHORS_RUNS if r.distribution == "none"]
        for run in [r for r in recorded if r.distribution != "none"] + nonprivate:
            distributions = ([run.distribution] if run.distribution in AUTHORS_FILES
                             else list(AUTHORS_FILES))
            for distribution in distributions:
                rows.append({"source": source, "distribution": distribution,
                             "method": AUTHORS_METHODS[(run.aggregator, "public")],
                             "seed": run.seed, "high_budgets": run.high_budgets,
                             "scale": "100 x 100", "accuracy": run.accuracy})
    return pd.DataFrame(rows)


def _mean_sd(values: pd.Series) -> str:
    if len(values) == 1:
        return f"{values.iloc[0]:.3f} (1)"
    return f"{values.mean():.3f} ± {values.std(ddof=1):.3f} ({len(values)})"


def authors_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """:func:`authors_comparison` as the chapter shows it: one row per budget distribution
    (with the authors' file name) and method, one column per source (with its rounds x
    local steps), mean ± sd over seeds (number of seeds)."""
    if comparison.empty:
        return pd.DataFrame()
    table = comparison.assign(
        source=comparison["source"] + " (" + comparison["scale"] + ")",
        distribution=comparison["distribution"].map(
            lambda d: f"{d} ({AUTHORS_FILES[d]}.txt)"))
    wide = table.groupby(["distribution", "method", "source"])["accuracy"].agg(_mean_sd)
    wide = wide.unstack("source").fillna("")
    order = [m for m in AUTHORS_METHODS.values() if m in set(table["method"])]
    return wide.reindex(order, level="method")


def authors_by_seed(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per budget distribution and seed (the same budgets in both codes), each source's
    final accuracy of FedAvg, WeiAvg, PFA and PFA+, and how many points PFA and PFA+ are
    above WeiAvg; the clients drawn near 10 name the draw (NaN where a run is missing)."""
    private = comparison[comparison["method"].isin(["FedAvg", "WeiAvg", "PFA", "PFA+"])]
    if private.empty:
        return pd.DataFrame()
    table = private.assign(source=private["source"] + " (" + private["scale"] + ")")
    keys = ["distribution", "seed", "high_budgets", "source"]
    wide = table.pivot_table(index=keys, columns="method", values="accuracy")
    wide = wide.reindex(columns=[m for m in ("FedAvg", "WeiAvg", "PFA", "PFA+") if m in wide])
    for method in ("PFA", "PFA+"):
        if method in wide and "WeiAvg" in wide:
            wide[f"{method} - WeiAvg (points)"] = 100 * (wide[method] - wide["WeiAvg"])
    return wide.rename_axis(index={"high_budgets": "budgets near 10"})


def authors_gaps(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per source (with its scale) and budget distribution, how far PFA and PFA+ end
    above WeiAvg: mean over the seeds that ran both with its 95% interval, paired by seed
    (each seed draws the same budgets in every source)."""
    rows = []
    private = comparison[comparison["method"].isin(["WeiAvg", "PFA", "PFA+"])]
    for (source, scale, distribution), frame in private.groupby(
            ["source", "scale", "distribution"], sort=True):
        arms = {m: frame[frame["method"] == m].groupby("seed")["accuracy"].mean()
                for m in ("WeiAvg", "PFA", "PFA+")}
        row = {"source": f"{source} ({scale})", "distribution": distribution}
        for method in ("PFA", "PFA+"):
            seeds = sorted(set(arms[method].index) & set(arms["WeiAvg"].index))
            row[f"{method} - WeiAvg"] = difference(arms[method].loc[seeds],
                                                   arms["WeiAvg"].loc[seeds]).text()
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).set_index(["distribution", "source"]).sort_index()
