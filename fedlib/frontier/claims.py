"""The frontier's findings: which method leads where, in words with numbers.

The frontier makes no paper's claim; its findings are the companion's own
(``origin="companion"``). Per federation and unit, at the smallest target of the tier
and without privacy: the method with the highest mean client test accuracy over the
seeds, and its margin over the runner-up, paired seed by seed with its 95% interval; at
the smallest target also the leader of the federated methods alone (local training, which
spends nothing, left out). The
leader is chosen from the same runs that measure its margin (a finding, not a claim
declared before the runs), so the verdict is read as: HOLDS, it leads (the interval lies
above 0); INCONCLUSIVE, a tie (the interval contains 0); NOT-TESTABLE, both arms within
noise of chance.
"""

from __future__ import annotations

import math

import pandas as pd

from fedlib.frontier.figures import DATASET_NAMES, best_method_table, epsilon_label
from fedlib.verdicts.claims import Claim, ClaimSheet
from fedlib.verdicts.compare import Comparison, Trivial

__all__ = ["CHANCE", "CHAPTER", "findings", "leaders_markdown", "left_out_markdown",
           "privacy_table", "setup_table", "units_table"]

CHAPTER = "frontier"
CHANCE = {"har-subjects": 1 / 6, "femnist-writers": 0.1, "mnist-shards": 0.1}
"""Accuracy of a uniform guess per federation (the trivial baseline of a finding)."""


def _finding_id(dataset: str, unit: str, where: str) -> str:
    if where.startswith(FEDERATED):
        return f"{FEDERATED}leader-{dataset}-{unit}-{where.removeprefix(FEDERATED)}"
    return f"leader-{dataset}-{unit}-{where}"


FEDERATED = "federated-"
"""Prefix of the findings that rank the federated methods only (local training left out)."""


def findings(runs: pd.DataFrame, scale: str) -> list[Claim]:
    """Per federation and unit: the leader at the smallest finite epsilon and without
    privacy, with its margin over the runner-up, and the leader of the federated methods
    (local training left out) at the smallest epsilon (see the module's text)."""
    sheet = ClaimSheet(CHAPTER, scale)
    overall = best_method_table(runs).assign(among="")
    federated = best_method_table(runs, exclude=("local",)).assign(among=FEDERATED)
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
            here = runs[(runs["dataset"] == dataset) & (runs["unit"] == unit)
                        & (runs["epsilon"] == eps)]
            leader, runner = row["best"], row["runner-up"]
            arms = {name: here[here["method"] == name].set_index("seed")["test_accuracy"]
                    for name in (leader, runner)}
            name = DATASET_NAMES.get(dataset, dataset)
            at = (f"at epsilon = {epsilon_label(eps)}" if math.isfinite(eps)
                  else "without privacy")
            verdict = Comparison("mean client test accuracy", leader, runner, "greater", 0.0,
                                 why="the leader is read off the same runs: HOLDS means it "
                                     "leads, INCONCLUSIVE a tie"
                                 ).judge(arms[leader], arms[runner],
                                         trivial=Trivial("chance", CHANCE.get(dataset, 0.0)))
            ranked = runs[(runs["unit"] == unit) & (runs["dataset"] == dataset)]["method"]
            if row["among"]:
                ranked = ranked[ranked != "local"]
                of = f"of the {ranked.nunique()} federated methods (local training left out)"
            else:
                of = f"of the {ranked.nunique()} methods"
            sheet.judged(
                _finding_id(dataset, unit, where), verdict,
                f"{name}, {unit}-level DP, {at}: {leader} has the highest mean client test "
                f"accuracy {of}, ahead of {runner}",
                origin="companion",
                context=f"{name}, {unit} unit, {at}, {row['seeds']} seeds, each method tuned "
                        "on validation data")
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
    """The tier's federations, sizes, schedule, targets and seeds."""
    from fedlib.frontier.experiment import methods_in, run_seeds

    seeds = run_seeds(setup, seed)
    rows = []
    for part in setup.slices:
        options = ", ".join(f"{k}={v}" for k, v in part.options) or "all clients and examples"
        rows.append({
            "federation": DATASET_NAMES.get(part.dataset, part.dataset), "sizes": options,
            "rounds x local steps": f"{part.rounds} x {part.local_steps}",
            "epsilons": ", ".join(epsilon_label(math.inf if e is None else e)
                                  for e in part.epsilons),
            "seeds": f"{seeds[0]}..{seeds[-1]}" if len(seeds) > 1 else str(seeds[0]),
            "runs": len(seeds) * len(part.epsilons) * sum(len(methods_in(u))
                                                         for u in setup.units),
            "tier": scale,
        })
    return pd.DataFrame(rows)


def privacy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per federation and unit, over every private run: how many, the largest spent
    epsilon of any client as a share of the run's target, and the noise multipliers.
    Every run was checked in code (spent <= target) before it was kept."""
    private = runs[runs["epsilon"].map(math.isfinite)]
    rows = []
    for (dataset, unit), group in private.groupby(["dataset", "unit"], sort=False):
        noisy = group[group["noise_multiplier"] > 0]
        rows.append({
            "federation": DATASET_NAMES.get(dataset, dataset), "unit": unit,
            "private runs": len(group),
            "largest spent / target": round(float((group["spent_epsilon_max"]
                                                   / group["epsilon"]).max()), 5),
            "noise multipliers": (f"{noisy['noise_multiplier'].min():.3g} to "
                                  f"{noisy['noise_multiplier'].max():.3g}" if len(noisy)
                                  else "-"),
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

