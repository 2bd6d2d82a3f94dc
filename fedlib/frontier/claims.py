"""The frontier's findings: which method leads where, in words with numbers.

The frontier makes no paper's claim; its findings are the companion's own
(``origin="companion"``). Per federation and unit, at the smallest target of the tier
and without privacy: the method with the highest mean client test accuracy over the
choosing seeds, and its margin over the runner-up (chosen the same way) on the testing
seeds, paired seed by seed with its 95% interval; at the smallest target also the leader
of the federated methods alone (local training left out). The leader is chosen on seeds
that do not measure its margin, and the margin is declared before the runs
(:data:`MARGIN`): HOLDS, it leads by more than the margin; FAILS, the runner-up is ahead
by more or the arms tie within it; INCONCLUSIVE, the interval straddles the margin;
NOT-TESTABLE, both arms within noise of chance.
"""

from __future__ import annotations

import math

import pandas as pd

from fedlib.frontier.figures import (
    DATASET_NAMES,
    best_method_table,
    chosen,
    epsilon_label,
    tested,
)
from fedlib.verdicts.claims import Claim, ClaimSheet
from fedlib.verdicts.compare import Comparison, Trivial

__all__ = ["CHANCE", "CHAPTER", "MARGIN", "findings", "leaders_markdown",
           "left_out_markdown", "privacy_table", "setup_table", "units_table"]

CHAPTER = "frontier"
CHANCE = {"har-subjects": 1 / 6, "femnist-writers": 0.1, "mnist-shards": 0.1,
          "mnist-users": 0.1, "femnist-all-writers": 0.1}
"""Accuracy of a uniform guess per federation (the trivial baseline of a finding)."""

MARGIN = 0.01
"""The lead a finding asks for, in mean client test accuracy: one percentage point,
declared before any run (a difference a reader would choose a method by)."""


def _finding_id(dataset: str, unit: str, where: str) -> str:
    if where.startswith(FEDERATED):
        return f"{FEDERATED}leader-{dataset}-{unit}-{where.removeprefix(FEDERATED)}"
    return f"leader-{dataset}-{unit}-{where}"


FEDERATED = "federated-"
"""Prefix of the findings that rank the federated methods only (local training left out)."""

UNIT_PHRASES = {"example": "example-level DP", "user": "user-level DP",
                "silo": "example-level DP of everything, personal models too"}
"""How a finding names its privacy unit."""


def _resolution(runs: pd.DataFrame) -> float:
    """How far one test example of the smallest client moves the mean client accuracy."""
    row = runs.iloc[0]
    return 1.0 / (float(row["client_test_examples_min"]) * float(row["n_clients"]))


def findings(runs: pd.DataFrame, scale: str) -> list[Claim]:
    """Per federation and unit: the leader at the smallest finite epsilon and without
    privacy, with its margin over the runner-up, and the leader of the federated methods
    (local training left out) at the smallest epsilon (see the module's text)."""
    sheet = ClaimSheet(CHAPTER, scale)
    overall = best_method_table(runs).assign(among="")
    federated = best_method_table(runs, exclude=("local",)).assign(among=FEDERATED)
    test = tested(runs)
    for (dataset, unit), rows in overall.groupby(["dataset", "unit"], sort=False):
        theirs = federated[(federated["dataset"] == dataset) & (federated["unit"] == unit)]
        picks = []
        for where, table in (("smallest-eps", rows), (f"{FEDERATED}smallest-eps", theirs)):
            finite = table[table["epsilon"].map(math.isfinite)]
            if len(finite):
                picks.append((where, finite.loc[finite["epsilon"].idxmin()]))
        plain = rows[~rows["epsilon"].map(math.isfinite)]
        if len(plain):
            picks.append(("no-privacy", plain.iloc[0]))
        for where, row in picks:
            eps = float(row["epsilon"])
            here = test[(test["dataset"] == dataset) & (test["unit"] == unit)
                        & (test["epsilon"] == eps)]
            leader, runner = row["best"], row["runner-up"]
            arms = {name: here[here["method"] == name].set_index("seed")["test_accuracy"]
                    for name in (leader, runner)}
            name = DATASET_NAMES.get(dataset, dataset)
            at = (f"at epsilon = {epsilon_label(eps)}" if math.isfinite(eps)
                  else "without privacy")
            resolution = _resolution(here)
            verdict = Comparison(
                "mean client test accuracy", leader, runner, "greater", MARGIN,
                why=f"declared: one percentage point; one test example of the smallest "
                    f"client moves the mean by {resolution:.2g}; the leader and runner-up "
                    "were chosen on other seeds"
            ).judge(arms[leader], arms[runner],
                    trivial=Trivial("chance", CHANCE.get(dataset, 0.0)))
            ranked = runs[(runs["unit"] == unit) & (runs["dataset"] == dataset)]["method"]
            if row["among"]:
                ranked = ranked[ranked != "local"]
                of = f"of the {ranked.nunique()} federated methods (local training left out)"
            else:
                of = f"of the {ranked.nunique()} methods"
            choosing = chosen(runs)["seed"].nunique()
            edges = f"; open grid edges: {row['open edges']}" if row["open edges"] else ""
            sheet.judged(
                _finding_id(dataset, unit, where), verdict,
                f"{name}, {UNIT_PHRASES.get(unit, unit)}, {at}: {leader} has the highest mean "
                f"client test "
                f"accuracy {of}, ahead of {runner} by more than {MARGIN:g}",
                origin="companion",
                context=f"{name}, {unit} unit, {at}; leader chosen on {choosing} seeds, "
                        f"margin measured on {row['seeds']} others; each method tuned on "
                        f"validation data{edges}")
    return list(sheet)


def units_table() -> pd.DataFrame:
    """Which method runs in which unit, and for a unit it cannot honour, why."""
    from fedlib.frontier.methods import METHODS
    from fedlib.frontier.privacy import PrivacyUnit

    rows = []
    for m in METHODS:
        row = {"method": m.name}
        for unit in PrivacyUnit:
            row[f"{unit.value} unit"] = ("runs" if unit in m.units
                                         else "refused: " + m.refusals[unit])
        rows.append(row)
    return pd.DataFrame(rows)


def setup_table(setup, scale: str, seed: int) -> pd.DataFrame:
    """The tier's federations, sizes, schedule, targets and seeds of each stage."""
    from fedlib.frontier.experiment import methods_in, run_seeds

    def span(seeds: tuple[int, ...]) -> str:
        return f"{seeds[0]}..{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])

    rows = []
    for part in setup.slices:
        options = ", ".join(f"{k}={v}" for k, v in part.options) or "all clients and examples"
        cells = len(part.epsilons) * sum(len(methods_in(u)) for u in setup.units)
        rows.append({
            "federation": DATASET_NAMES.get(part.dataset, part.dataset), "sizes": options,
            "rounds x local steps": f"{part.rounds} x {part.local_steps}",
            "clients per round": ("all" if part.client_rate == 1 else
                                  f"Poisson, rate {part.client_rate:g}"),
            "epsilons": ", ".join(epsilon_label(math.inf if e is None else e)
                                  for e in part.epsilons),
            "choosing seeds": span(run_seeds(setup, seed)),
            "testing seeds": span(run_seeds(setup, seed, "test")),
            "runs": 2 * setup.seeds * cells,
            "tier": scale,
        })
    return pd.DataFrame(rows)


def _span(values: pd.Series, digits: str = ".3g") -> str:
    values = values[values.map(math.isfinite)]
    if values.empty:
        return "-"
    low, high = values.min(), values.max()
    return f"{low:{digits}}" if low == high else f"{low:{digits}} to {high:{digits}}"


def privacy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per federation and unit, over every private run: how many, the largest spent
    epsilon of any client as a share of the run's target, the noise multipliers, the
    noise of a step against the largest clipped sum it is added to (the server's noise
    against the cohort's clipped updates in the user unit), and the epsilon of a
    choosing run's whole tuning (every fit it compared, composed). Every run was checked
    in code (spent <= target) before it was kept."""
    private = runs[runs["epsilon"].map(math.isfinite)]
    rows = []
    for (dataset, unit), group in private.groupby(["dataset", "unit"], sort=False):
        noisy = group[group["noise_multiplier"] > 0]
        tuning = chosen(group)
        tuning = tuning[tuning["tuning_epsilon"] > 0]
        rows.append({
            "federation": DATASET_NAMES.get(dataset, dataset), "unit": unit,
            "private runs": len(group),
            "largest spent / target": round(float((group["spent_epsilon_max"]
                                                   / group["epsilon"]).max()), 5),
            "noise multipliers": _span(noisy["noise_multiplier"]),
            "step noise / clipped sum": _span(noisy["noise_to_signal"]),
            "tuning epsilon / target": _span(tuning["tuning_epsilon"] / tuning["epsilon"],
                                             ".2f"),
        })
    return pd.DataFrame(rows)


def leaders_markdown(table: pd.DataFrame) -> str:
    """The best-method table in words: per federation and unit, the leader at each
    target with its accuracy and its margin over the runner-up (interval over seeds), or
    the tie."""
    lines = []
    for (dataset, unit), rows in table.groupby(["dataset", "unit"], sort=False):
        parts = []
        for _, row in rows.sort_values("epsilon").iterrows():
            eps = epsilon_label(float(row["epsilon"]))
            at = f"at epsilon {eps}" if eps != "none" else "without privacy"
            if math.isfinite(row["margin low"]):
                margin = (f"{row['margin']:+.3f} [{row['margin low']:+.3f}, "
                          f"{row['margin high']:+.3f}]")
            else:
                margin = f"{row['margin']:+.3f} (one seed)"
            if row["verdict"] == "leads":
                parts.append(f"{at} **{row['best']}** leads ({row['best mean']:.3f}, "
                             f"{margin} over {row['runner-up']})")
            else:
                parts.append(f"{at} **{row['best']}** and {row['runner-up']} tie "
                             f"({row['best mean']:.3f} and {row['runner-up mean']:.3f}, "
                             f"difference {margin})")
        lines.append(f"- {DATASET_NAMES.get(dataset, dataset)}, {unit} unit: "
                     + "; ".join(parts) + ".")
    return "\n".join(lines)


def left_out_markdown(left_out: dict[str, str]) -> str:
    """The federations a page leaves out, each with why (Markdown, shown as written; empty
    when none is), the reason saying whether their runs are not run at the page's tier or
    not all stored: the figures, tables and findings below have none of their rows."""
    from fedlib.render.markdown import markdown_text

    if not left_out:
        return ""
    named = "; ".join(f"{markdown_text(DATASET_NAMES.get(d, d))} ({markdown_text(why)})"
                      for d, why in left_out.items())
    return ("Not on this page: " + named + ". The figures, tables and findings below have "
            "none of their rows.")

