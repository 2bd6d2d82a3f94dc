"""DP-Ditto: what the chapter reads off the runs (each panel's arms, the rounds every
seed ran, the tuned lambda, the headline gains, the loss by rounds, the lambda grid) and
the tables it shows. The claims (:mod:`fedlib.papers.dpditto.claims`), the figures and
the chapter's prose read from here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedlib.papers.dpditto.baselines import BASELINES
from fedlib.papers.dpditto.experiment import DELTA, DittoSetup, client_data, run_seeds
from fedlib.privacy.accounting import epsilon as accounted_epsilon
from fedlib.privacy.calibration import (
    dpditto_sensitivity,
    dpditto_sigma,
    dpditto_sigma_alternative,
)
from fedlib.verdicts.compare import (
    estimate,
)

PAPER_GAIN = {"fairness": 32.71, "accuracy": 9.66}
"""The headline: DP-Ditto's smallest gains over the four DP baselines, in percent
(fairness: of the variance of the training losses, the paper's Definition 1)."""


PAPER_GAIN_SOURCE = (
    "abstract and Section VII: DP-Ditto surpasses the DP-perturbed FedAMP, pFedMe, APPLE and "
    "FedALA by over 32.71% in fairness (variance of the training losses, Definition 1, "
    "Section V) and 9.66% in accuracy, from the comparison of Section VI-A (Figs. 3 and 4); "
    "the numbers are lost from the text we have (the spec records them from the abstract), "
    "and so are the per-baseline gains listed in Section I")
"""Where the headline numbers come from."""


def privacy_table(clip: float, dataset_size: int, rounds: Sequence[int],
                  epsilons: Sequence[float], delta: float = DELTA) -> pd.DataFrame:
    """For each (T, target epsilon): the noise of the calibration used and of the
    alternative reading, and the epsilon each actually gives under exact accounting.

    A client's T uploads are T Gaussian mechanisms with sensitivity ``2 C / |D_i|``
    and no subsampling, so the noise multiplier is ``sigma / Delta S``; the epsilon
    spent at ``delta`` comes from the PLD accountant (tight) and from RDP.
    """
    sensitivity = dpditto_sensitivity(clip, dataset_size)
    rows = []
    for t in rounds:
        for eps in epsilons:
            used = dpditto_sigma(clip, dataset_size, eps, delta, t)
            alternative = dpditto_sigma_alternative(clip, dataset_size, eps, delta, t)
            row = {"T": t, "target epsilon": eps, "sigma (used)": used,
                   "sigma (alternative)": alternative,
                   "noise multiplier (used)": used / sensitivity}
            for name, sigma in (("used", used), ("alternative", alternative)):
                for accountant in ("pld", "rdp"):
                    row[f"epsilon spent, {accountant.upper()} ({name})"] = accounted_epsilon(
                        sigma / sensitivity, 1.0, t, delta, accountant)
            rows.append(row)
    return pd.DataFrame(rows)


def test_sizes(setup: DittoSetup, seed: int, panels: Sequence[str] | None = None
               ) -> dict[str, np.ndarray]:
    """Per panel (default: every panel ``setup`` runs), each client's number of test
    examples, as the runs build their clients at the panel's first seed
    (:func:`fedlib.papers.dpditto.experiment.client_data`, which reads the dataset): what
    a run's accuracy, the mean over clients of each one's accuracy on its test set,
    resolves (:func:`fedlib.papers.dpditto.claims.accuracy_resolution`)."""
    sizes = {}
    for panel in panels or setup.panels:
        clients, _ = client_data(panel, run_seeds(setup, seed, panel)[0], setup.n_clients,
                                 setup.train_cap.get(panel), setup.eval_examples,
                                 setup.test_examples)
        sizes[panel] = clients.test_mask.sum(dim=1).numpy()
    return sizes


def common_rounds(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs at the T where every seed of their panel ran: a mean over T and seeds, or a
    trend in T, then compares the same T on every seed (the paper tier repeats the DNN at
    the smaller T only; its larger T keep one seed and are drawn, not judged)."""
    if runs.empty:
        return runs
    seeds = runs.groupby("panel")["seed"].nunique()
    at = runs.groupby(["panel", "rounds"])["seed"].nunique()
    full = {(panel, t) for (panel, t), n in at.items() if n == seeds[panel]}
    keep = [(panel, t) in full for panel, t in zip(runs["panel"], runs["rounds"], strict=True)]
    return runs[keep]


ARM = ["method", "epsilon", "lam"]
"""The columns that name an arm of a panel (a method at a budget, DP-Ditto at a lambda)."""


def past_judged_rounds(runs: pd.DataFrame) -> pd.DataFrame:
    """Where the T every seed ran (:func:`common_rounds`) put an arm's best T on their
    largest, an open edge: what the larger T that fewer seeds ran (drawn, not judged) show
    on those seeds. One row per panel, arm, quantity (test accuracy, higher is better;
    mean personal training loss, lower is better) and larger T: the seeds, the arm's mean
    over them at the largest judged T and at the larger one, and whether the larger one
    is better on every one of those seeds (the optimum would move past the judged grid
    there). Empty where no larger T was run."""
    columns = ["panel", *ARM, "quantity", "seeds", "judged T", "at judged T", "larger T",
               "at larger T", "better on every seed"]
    kept = common_rounds(runs)
    rows = []
    for panel, frame in runs.groupby("panel"):
        judged_rounds = set(kept.loc[kept["panel"] == panel, "rounds"])
        larger = sorted(int(t) for t in frame["rounds"].unique()
                        if judged_rounds and t > max(judged_rounds))
        if not larger:
            continue
        top = int(max(judged_rounds))
        for quantity, lower in (("accuracy", False), ("loss", True)):
            for arm, of_arm in frame.groupby(ARM, dropna=False):
                curve = of_arm[of_arm["rounds"].isin(judged_rounds)].groupby("rounds")[
                    quantity].mean()
                if curve.empty or (curve.idxmin() if lower else curve.idxmax()) != top:
                    continue
                at_top = of_arm[of_arm["rounds"] == top].set_index("seed")[quantity]
                for t in larger:
                    above = of_arm[of_arm["rounds"] == t].set_index("seed")[quantity]
                    if above.empty:
                        continue
                    below = at_top.reindex(above.index)
                    gain = (below - above) if lower else (above - below)
                    rows.append({"panel": panel, **dict(zip(ARM, arm, strict=True)),
                                 "quantity": quantity, "seeds": sorted(above.index),
                                 "judged T": top, "at judged T": float(below.mean()),
                                 "larger T": t, "at larger T": float(above.mean()),
                                 "better on every seed": bool((gain > 0).all())})
    return pd.DataFrame(rows, columns=columns)


def past_judged_summary(past: pd.DataFrame) -> str:
    """A sentence on :func:`past_judged_rounds`: per panel and larger T, how many of the
    curves (an arm's accuracy or loss over T) whose best judged T is the largest are
    better still there on every seed that ran it ("" when none)."""
    parts = []
    for (panel, t), frame in past.groupby(["panel", "larger T"], sort=True):
        seeds = sorted({s for row in frame["seeds"] for s in row})
        top, better = frame["judged T"].iloc[0], int(frame["better on every seed"].sum())
        parts.append(f"{_label(panel)}: of the {len(frame)} curves (an arm's accuracy or "
                     "loss over T) whose best T among those every seed ran is the largest, "
                     f"T = {top}, {better} {'is' if better == 1 else 'are'} better still "
                     f"at T = {t} on "
                     f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}, "
                     f"which ran it (drawn, not judged): there, their optimum lies at "
                     f"T = {t} or beyond")
    return "; ".join(parts) + "." if parts else ""


def rounds_left_out(runs: pd.DataFrame) -> str:
    """A sentence naming, per panel, the T that :func:`common_rounds` leaves out of the
    claims and the seeds those T have ("" when none is left out)."""
    kept = common_rounds(runs)
    parts = []
    for panel, frame in runs.groupby("panel"):
        dropped = sorted(set(frame["rounds"]) - set(kept[kept["panel"] == panel]["rounds"]))
        if dropped:
            seeds = sorted(frame[frame["rounds"].isin(dropped)]["seed"].unique())
            judged = sorted(kept[kept["panel"] == panel]["rounds"].unique())
            plural = len(dropped) > 1
            parts.append(f"{_label(panel)}: T = {', '.join(map(str, dropped))} ran at seed"
                         f"{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))} only "
                         f"and {'are' if plural else 'is'} drawn, not judged; the claims "
                         "read T = "
                         f"{', '.join(map(str, judged))}, where all "
                         f"{frame['seed'].nunique()} seeds ran")
    return "; ".join(parts) + "." if parts else ""


def ditto_at(runs: pd.DataFrame, panel: str, epsilon: float) -> pd.DataFrame:
    """DP-Ditto's runs of its lambda grid at ``epsilon``, with the method's limits: the
    local models (lambda = 0), computed once without noise since they never see it (their
    rows whatever their epsilon), and DP-FedAvg (lambda = 1)."""
    return runs[(runs["panel"] == panel) & (runs["method"] == "DP-Ditto")
                & (runs["lam"] >= 0) & (runs["lam"] <= 1)
                & ((runs["epsilon"] == epsilon) | (runs["lam"] == 0))]


def ditto(runs: pd.DataFrame, panel: str, epsilon: float, lam: float) -> pd.DataFrame:
    """DP-Ditto's runs at ``epsilon`` and ``lam`` (:func:`ditto_at`'s rule: lambda = 0 at
    any epsilon)."""
    sel = ditto_at(runs, panel, epsilon)
    return sel[np.isclose(sel["lam"], lam)]


def held_out_lambdas(runs: pd.DataFrame, panel: str, epsilon: float) -> dict[int, float]:
    """Per seed, the lambda DP-Ditto is compared at: the best accuracy averaged over T and
    the *other* seeds' runs of its grid (:func:`ditto_at`), so that no run is judged at a
    lambda chosen on its own test accuracy (the runs hold no validation split). With a
    single seed there is nothing else to choose on: its own runs choose (one run decides
    nothing there anyway)."""
    grid = ditto_at(runs, panel, epsilon)
    seeds = sorted(int(s) for s in grid["seed"].unique())
    chosen = {}
    for seed in seeds:
        others = grid[grid["seed"] != seed] if len(seeds) > 1 else grid
        chosen[seed] = float(others.groupby("lam")["accuracy"].mean().idxmax())
    return chosen


def lambda_label(chosen: dict[int, float]) -> str:
    """The compared DP-Ditto's name: its lambda, or the lambdas its seeds were held out at."""
    values = sorted(set(chosen.values()))
    return "DP-Ditto (lambda=" + " or ".join(f"{v:g}" for v in values) + ")"


def held_out_ditto(runs: pd.DataFrame, panel: str, epsilon: float) -> pd.DataFrame:
    """DP-Ditto's runs at each seed's :func:`held_out_lambdas`, named by :func:`lambda_label`."""
    chosen = held_out_lambdas(runs, panel, epsilon)
    parts = [sel[sel["seed"] == seed] for seed, lam in chosen.items()
             for sel in (ditto(runs, panel, epsilon, lam),)]
    return pd.concat(parts).assign(method=lambda_label(chosen))


def comparison(runs: pd.DataFrame, panel: str, epsilon: float) -> pd.DataFrame:
    """Rows (method, rounds, seed, accuracy, fairness, loss) of every compared method at
    ``epsilon``: DP-Ditto at each seed's held-out lambda (:func:`held_out_lambdas`), the
    baselines, DP-FedAvg and Local."""
    parts = [held_out_ditto(runs, panel, epsilon),
             ditto(runs, panel, epsilon, 1.0).assign(method="DP-FedAvg"),
             ditto(runs, panel, epsilon, 0.0).assign(method="Local")]
    base = runs[(runs["panel"] == panel) & (runs["epsilon"] == epsilon)
                & runs["method"].isin(list(BASELINES))]
    frame = pd.concat([*parts, base], ignore_index=True)
    return frame[["method", "rounds", "seed", "accuracy", "fairness", "loss"]]


def headline_table(runs: pd.DataFrame, panel: str, epsilons: tuple[float, ...]) -> pd.DataFrame:
    """Relative improvement of DP-Ditto over each DP baseline, averaged over T and seeds,
    in the paper's terms (Definition 1 measures fairness by the VARIANCE of the personal
    training losses): fairness ``(var_base - var_ditto) / var_base``, accuracy
    ``(acc_ditto - acc_base) / acc_base``, in percent, beside the paper's values.
    DP-FedAvg is shown too, outside the paper's claim (``in the claim`` says which)."""
    rows = []
    for eps in epsilons:
        frame = comparison(runs, panel, eps).assign(variance=lambda f: f["fairness"] ** 2)
        means = frame.groupby("method")[["accuracy", "variance"]].mean()
        ours = means.loc[[m for m in means.index if m.startswith("DP-Ditto")][0]]
        for method in [*BASELINES, "DP-FedAvg"]:
            if method not in means.index:
                continue
            b = means.loc[method]
            rows.append({"epsilon": eps, "baseline": method,
                         "in the claim": method in BASELINES,
                         "fairness gain %":
                             100 * (b["variance"] - ours["variance"]) / b["variance"],
                         "accuracy gain %":
                             100 * (ours["accuracy"] - b["accuracy"]) / b["accuracy"],
                         "paper fairness gain %": f"> {PAPER_GAIN['fairness']}",
                         "paper accuracy gain %": f"> {PAPER_GAIN['accuracy']}"})
    return pd.DataFrame(rows)


def alternating_search(runs: pd.DataFrame, panel: str, epsilon: float, lam0: float,
                       max_iter: int = 10) -> tuple[int, float, list[tuple[int, float]]]:
    """(T*, lambda*) by alternating 1-D searches on the measured grid: T minimising the
    mean personal training loss at the current lambda, then lambda in (0, 1] minimising
    the fairness (std) at that T, until neither changes."""
    sel = runs[(runs["panel"] == panel) & (runs["method"] == "DP-Ditto")
               & (runs["epsilon"] == epsilon) & (runs["lam"] > 0)]
    grid = sel.groupby(["rounds", "lam"])[["loss", "fairness"]].mean()
    lam, path, t_star = lam0, [], None
    for _ in range(max_iter):
        t_star = int(grid.xs(lam, level="lam")["loss"].idxmin())
        new_lam = float(grid.xs(t_star, level="rounds")["fairness"].idxmin())
        path.append((t_star, new_lam))
        if new_lam == lam and len(path) > 1:
            break
        lam = new_lam
    return t_star, lam, path


def headlines(runs: pd.DataFrame, setup: DittoSetup) -> pd.DataFrame:
    """:func:`headline_table` of every compared panel at the two compared epsilons, with a
    ``panel`` column."""
    runs = common_rounds(runs)
    return pd.concat([headline_table(runs, p, setup.compare_epsilons).assign(panel=p)
                      for p in setup.compare_panels])


def run_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """The number of runs of each (panel, method)."""
    return runs.groupby(["panel", "method"]).size().rename("runs").to_frame()


def loss_by_rounds(runs: pd.DataFrame, panel: str, epsilon: float, lam: float) -> pd.Series:
    """DP-Ditto's mean personal training loss by T at ``epsilon`` and ``lam`` (Figure 5)."""
    return ditto(runs, panel, epsilon, lam).groupby("rounds")["loss"].mean()


def lambda_grid(runs: pd.DataFrame, panel: str, epsilon: float) -> pd.DataFrame:
    """DP-Ditto's mean accuracy, fairness and loss by (lambda, T) at ``epsilon``, with the
    local models (lambda = 0, no noise) (Figures 6 and 7)."""
    return ditto_at(runs, panel, epsilon).groupby(["lam", "rounds"])[
        ["accuracy", "fairness", "loss"]].mean()


SUBSTITUTES = {"mnist-dnn": "mnist-mlr"}
"""The model a tier reads a DNN claim on when it runs no DNN in that role."""


def _label(panel: str) -> str:
    dataset, _, model = panel.partition("-")
    names = {"mnist": "MNIST", "fmnist": "Fashion-MNIST", "cifar10": "CIFAR-10"}
    return f"{names.get(dataset, dataset)}-{model.upper()}"


def read_panel(panel: str, available: Sequence[str]) -> str | None:
    """The panel a tier reads a claim about ``panel`` on: itself where the tier runs it in
    that role, else its substitute (:data:`SUBSTITUTES`), else None."""
    if panel in available:
        return panel
    substitute = SUBSTITUTES.get(panel)
    return substitute if substitute in available else None


def _seeds(frame: pd.DataFrame, column: str) -> pd.Series:
    """``column`` averaged over T, one value per seed."""
    return frame.groupby("seed")[column].mean()


def method_table(runs: pd.DataFrame, panel: str, epsilon: float) -> pd.DataFrame:
    """Per compared method at ``epsilon`` (:func:`comparison`): the test accuracy and the
    std of the training losses, each averaged over T, as the mean over seeds with its 95%
    interval (over the T every seed ran: :func:`common_rounds`)."""
    frame = comparison(common_rounds(runs), panel, epsilon)
    rows = []
    for method, sel in frame.groupby("method", sort=False):
        acc, std = estimate(_seeds(sel, "accuracy")), estimate(_seeds(sel, "fairness"))
        rows.append({"method": method, "seeds": acc.n, "accuracy": acc.mean,
                     "accuracy 95% interval": f"[{acc.low:.3f}, {acc.high:.3f}]",
                     "std of train losses": std.mean,
                     "std 95% interval": f"[{std.low:.3f}, {std.high:.3f}]"})
    return pd.DataFrame(rows)
