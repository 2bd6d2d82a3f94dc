"""Figures and tables of the frontier chapter.

Every number a figure draws comes from a tidy table computed first (:func:`points`,
:func:`cost_points`), so that the figure's CSV (written by
:func:`fedlib.render.glue.glue_figure` from the artists) holds exactly those numbers: the mean
over seeds of each point and, as the ends of its error bar, its 95% interval.

Accuracy is read on the testing seeds (:func:`tested`): each method at the configuration
its choosing seeds picked, on seeds that chose nothing. A ranking (which method leads) is
read on the choosing seeds and its margin on the testing seeds
(:func:`best_method_table`), so that the selection does not grade itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fedlib.frontier.methods import METHODS
from fedlib.verdicts.compare import difference, estimate

__all__ = [
    "DATASET_NAMES",
    "NO_PRIVACY",
    "accuracy_figure",
    "best_method_table",
    "chosen",
    "cost_figure",
    "cost_points",
    "epsilon_label",
    "fairness_figure",
    "headroom_table",
    "open_edges_table",
    "points",
    "run_cpu_seconds",
    "tested",
]

DATASET_NAMES = {"har-subjects": "HAR (subjects)", "femnist-writers": "FEMNIST (writers)",
                 "mnist-shards": "MNIST (label shards)",
                 "mnist-users": "MNIST (many users)",
                 "femnist-all-writers": "FEMNIST (every writer)"}
UNIT_NAMES = {"example": "example-level DP, untrusted server",
              "user": "user-level DP, trusted aggregator",
              "silo": "example-level DP of everything, personal models too"}
ORDER = [m.name for m in METHODS]
COLORS = dict(zip(ORDER, plt.get_cmap("tab10").colors, strict=False))
MARKERS = dict(zip(ORDER, "osD^v<>P", strict=False))
NO_PRIVACY = "none"
"""How a run without privacy is labelled where epsilon is written."""


def epsilon_label(eps: float) -> str:
    """``"1"``, ``"0.5"`` or :data:`NO_PRIVACY` for infinity."""
    return NO_PRIVACY if not math.isfinite(eps) else f"{eps:g}"


def tested(runs: pd.DataFrame) -> pd.DataFrame:
    """The testing stage's runs (each method at its chosen configuration)."""
    return runs[runs["stage"] == "test"]


def chosen(runs: pd.DataFrame) -> pd.DataFrame:
    """The choosing stage's runs (each tuned over its grid)."""
    return runs[runs["stage"] == "choose"]


def _ordered(frame: pd.DataFrame, column: str, order: Sequence[str]) -> list[str]:
    present = set(frame[column])
    return [v for v in order if v in present] + sorted(present - set(order))


def _x_positions(epsilons: Sequence[float]) -> dict[float, float]:
    """Where each epsilon goes on a log axis; no privacy one doubling past the largest."""
    finite = sorted(e for e in epsilons if math.isfinite(e))
    top = 2 * finite[-1] if finite else 1.0
    return {e: (e if math.isfinite(e) else top) for e in epsilons}


def points(runs: pd.DataFrame, value: str = "test_accuracy") -> pd.DataFrame:
    """Mean over seeds of ``value`` with its 95% interval, per dataset, unit, method and
    epsilon (one row each; ``n`` seeds)."""
    rows = []
    for (dataset, unit, name, eps), group in runs.groupby(
            ["dataset", "unit", "method", "epsilon"], sort=False):
        est = estimate(group.set_index("seed")[value])
        rows.append({"dataset": dataset, "unit": unit, "method": name, "epsilon": eps,
                     "n": est.n, "mean": est.mean, "low": est.low, "high": est.high})
    return pd.DataFrame(rows, columns=["dataset", "unit", "method", "epsilon", "n", "mean",
                                       "low", "high"])


def _panels(runs: pd.DataFrame, columns: int | None = None, size=(4.2, 3.0)):
    datasets = _ordered(runs, "dataset", list(DATASET_NAMES))
    units = _ordered(runs, "unit", list(UNIT_NAMES))
    fig, axes = plt.subplots(len(datasets), columns or len(units),
                             figsize=(size[0] * (columns or len(units)), size[1] * len(datasets)),
                             squeeze=False)
    return fig, axes, datasets, units


def accuracy_figure(runs: pd.DataFrame, value: str = "test_accuracy",
                    ylabel: str = "mean client test accuracy") -> plt.Figure:
    """``value`` on the testing seeds against epsilon, one panel per dataset (rows) and
    unit (columns), one line per method: the mean over seeds, with its 95% interval as an
    error bar whose ends are drawn as ticks (so that the figure's CSV holds them). The
    run without privacy sits one doubling right of the largest epsilon, labelled "none"."""
    runs = tested(runs)
    table = points(runs, value)
    fig, axes, datasets, units = _panels(runs)
    for r, dataset in enumerate(datasets):
        for c, unit in enumerate(units):
            ax = axes[r][c]
            here = table[(table["dataset"] == dataset) & (table["unit"] == unit)]
            where = _x_positions(sorted(set(here["epsilon"])))
            for name in _ordered(here, "method", ORDER):
                line = here[here["method"] == name].sort_values("epsilon")
                x = line["epsilon"].map(where).to_numpy(float)
                color = COLORS.get(name)
                ax.plot(x, line["mean"], marker=MARKERS.get(name, "o"), color=color,
                        label=name, lw=1.4, ms=4)
                finite = np.isfinite(line["low"].to_numpy(float))
                if finite.any():
                    ax.vlines(x[finite], line["low"][finite], line["high"][finite],
                              color=color, lw=0.8, alpha=0.7)
                    ax.plot(x[finite], line["low"][finite], ls="none", marker="_",
                            color=color, label=f"_{name} 95% low")
                    ax.plot(x[finite], line["high"][finite], ls="none", marker="_",
                            color=color, label=f"_{name} 95% high")
            ax.set_xscale("log")
            ticks = sorted(where.values())
            ax.set_xticks(ticks, [epsilon_label(e) for e in sorted(where)])
            ax.minorticks_off()
            ax.set_title(f"{DATASET_NAMES.get(dataset, dataset)}: {unit} unit", fontsize=10)
            ax.set_xlabel("target epsilon (delta = 1e-5)")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, ncols=2)
    fig.tight_layout()
    return fig


def fairness_figure(runs: pd.DataFrame) -> plt.Figure:
    """The accuracy of the worst tenth of the clients (``worst_decile_accuracy``) on the
    testing seeds against epsilon, laid out as :func:`accuracy_figure`, with its 95%
    interval over the seeds."""
    return accuracy_figure(runs, "worst_decile_accuracy", "worst-decile client accuracy")


def run_cpu_seconds(runs: pd.DataFrame, experiment: str = "frontier") -> pd.Series:
    """CPU seconds of each run (its tuning's fits, and its rows) as the sweep recorded
    them when it computed the run: from the published manifest, else from the local
    cache's record; NaN where neither says. Aligned with ``runs``."""
    from fedlib.runs.cache import ResultStore
    from fedlib.runs.published import PublishedStore

    published = PublishedStore(experiment).runs()
    store = ResultStore(experiment)
    values = []
    for key in runs["run_key"]:
        entry = published.get(key, {})
        if isinstance(entry.get("cpu_seconds"), int | float):
            values.append(float(entry["cpu_seconds"]))
            continue
        record = store.provenance(key) if store.has(key) else {}
        total, size = record.get("group_cpu_seconds"), record.get("group_size") or 1
        values.append(float(total) / size if isinstance(total, int | float) else math.nan)
    return pd.Series(values, index=runs.index, name="cpu_seconds")


def cost_points(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, unit and method, over the choosing runs: uplink bytes per round (mean
    over targets and seeds, with the smallest and largest) and CPU seconds of a run,
    tuning included (``cpu_seconds``, the median over the runs, with the smallest and
    largest: the first run of each federation and seed also paid for loading it)."""
    groups = chosen(runs).groupby(["dataset", "unit", "method"], sort=False)
    bytes_, cpu = groups["uplink_bytes_per_round"], groups["cpu_seconds"]
    return pd.concat([bytes_.mean(), bytes_.min().rename("uplink_bytes_per_round_low"),
                      bytes_.max().rename("uplink_bytes_per_round_high"), cpu.median(),
                      cpu.min().rename("cpu_seconds_low"),
                      cpu.max().rename("cpu_seconds_high")], axis=1).reset_index()


def cost_figure(runs: pd.DataFrame) -> plt.Figure:
    """Uplink bytes per round (top row) and CPU seconds per run, tuning's fits included
    (bottom row), per method, one column per dataset, one bar per unit, its whisker from
    the smallest to the largest run (:func:`cost_points`; ``runs`` needs a
    ``cpu_seconds`` column, see :func:`run_cpu_seconds`)."""
    table = cost_points(runs)
    datasets = _ordered(runs, "dataset", list(DATASET_NAMES))
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.4 * len(datasets), 6.4),
                             squeeze=False)
    units = _ordered(table, "unit", list(UNIT_NAMES))
    width = 0.8 / max(len(units), 1)
    for c, dataset in enumerate(datasets):
        here = table[table["dataset"] == dataset]
        names = _ordered(here, "method", ORDER)
        for r, (column, label) in enumerate((("uplink_bytes_per_round", "uplink bytes per round"),
                                             ("cpu_seconds", "CPU seconds per run"))):
            ax = axes[r][c]
            for k, unit in enumerate(units):
                part = here[here["unit"] == unit].set_index("method")
                xs = [i + (k - (len(units) - 1) / 2) * width
                      for i, name in enumerate(names) if name in part.index]
                ys = [float(part.loc[name, column]) for name in names if name in part.index]
                color = ("#4c72b0", "#dd8452", "#55a868")[k % 3]
                ax.bar(xs, ys, width=width, label=unit, color=color)
                lows = [float(part.loc[name, f"{column}_low"]) for name in names
                        if name in part.index]
                highs = [float(part.loc[name, f"{column}_high"]) for name in names
                         if name in part.index]
                ax.vlines(xs, lows, highs, color="black", lw=0.8)
                ax.plot(xs, lows, ls="none", marker="_", color="black",
                        label=f"_{unit} smallest")
                ax.plot(xs, highs, ls="none", marker="_", color="black",
                        label=f"_{unit} largest")
            ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
            ax.set_ylabel(label)
            ax.set_title(DATASET_NAMES.get(dataset, dataset), fontsize=10)
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=7, title="unit", title_fontsize=7)
    fig.tight_layout()
    return fig


def best_method_table(runs: pd.DataFrame, value: str = "test_accuracy",
                      exclude: Sequence[str] = ()) -> pd.DataFrame:
    """Per dataset, unit and epsilon: the method with the highest mean ``value`` over the
    choosing seeds (each tuned there), the runner-up likewise, and the leader's margin
    over it on the testing seeds (each at its chosen configuration), paired seed by seed,
    with its 95% interval. ``verdict`` is ``leads`` when the interval lies above 0 and
    ``tie`` when it contains 0 (or cannot be formed: one seed); ``open edges`` names the
    leader's and runner-up's choices still on an open edge of their grids. Methods in
    ``exclude`` (e.g. ``local``) are left out of the ranking."""
    runs = runs[~runs["method"].isin(list(exclude))]
    test = tested(runs)
    rows = []
    for (dataset, unit, eps), group in chosen(runs).groupby(["dataset", "unit", "epsilon"],
                                                            sort=False):
        means = group.groupby("method")[value].mean().sort_values(ascending=False,
                                                                   kind="stable")
        if len(means) < 2:
            continue
        leader, runner = means.index[0], means.index[1]
        here = test[(test["dataset"] == dataset) & (test["unit"] == unit)
                    & (test["epsilon"] == eps)]
        by_seed = {name: here[here["method"] == name].set_index("seed")[value]
                   for name in (leader, runner)}
        d = difference(by_seed[leader], by_seed[runner])
        lead = math.isfinite(d.low) and d.low > 0
        edges = []
        for name in (leader, runner):
            marks = set(" ".join(here.loc[here["method"] == name, "open_edges"]).split())
            edges += [f"{name}: {m}" for m in sorted(marks)]
        rows.append({"dataset": dataset, "unit": unit, "epsilon": eps,
                     "best": leader, "best mean": float(by_seed[leader].mean()),
                     "runner-up": runner, "runner-up mean": float(by_seed[runner].mean()),
                     "margin": d.mean, "margin low": d.low, "margin high": d.high,
                     "seeds": d.n, "verdict": "leads" if lead else "tie",
                     "open edges": "; ".join(edges)})
    return pd.DataFrame(rows, columns=["dataset", "unit", "epsilon", "best", "best mean",
                                       "runner-up", "runner-up mean", "margin", "margin low",
                                       "margin high", "seeds", "verdict", "open edges"])


def headroom_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per federation, without privacy: the best federated method (chosen on the choosing
    seeds) minus local training, on the testing seeds, paired seed by seed, with its 95%
    interval: the most collaboration gains here before any privacy is paid for. Without
    privacy the units run the same computation, so each method is read in the first unit
    that admits it (silo admits every method)."""
    plain = runs[~runs["epsilon"].map(math.isfinite)]
    rows = []
    for dataset, group in plain.groupby("dataset", sort=False):
        first = {}
        for unit in ("silo", "example", "user"):
            for name in set(group.loc[group["unit"] == unit, "method"]):
                first.setdefault(name, unit)
        keep = group[[first.get(m) == u for m, u in zip(group["method"], group["unit"],
                                                        strict=True)]]
        means = chosen(keep).groupby("method")["test_accuracy"].mean()
        federated = means.drop("local", errors="ignore").sort_values(ascending=False)
        if federated.empty or "local" not in means.index:
            continue
        best = federated.index[0]
        test = tested(keep)
        arms = {name: test[test["method"] == name].set_index("seed")["test_accuracy"]
                for name in (best, "local")}
        d = difference(arms[best], arms["local"])
        rows.append({"dataset": dataset, "best federated": best,
                     "its accuracy": float(arms[best].mean()),
                     "local accuracy": float(arms["local"].mean()),
                     "headroom": d.mean, "low": d.low, "high": d.high, "seeds": d.n})
    return pd.DataFrame(rows, columns=["dataset", "best federated", "its accuracy",
                                       "local accuracy", "headroom", "low", "high", "seeds"])


def shown_headroom_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`headroom_table` as a page shows it."""
    return pd.DataFrame({
        "federation": table["dataset"].map(lambda d: DATASET_NAMES.get(d, d)),
        "best federated method": table["best federated"],
        "its accuracy": table["its accuracy"].round(3),
        "local accuracy": table["local accuracy"].round(3),
        "headroom [95% interval]": [
            f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" if math.isfinite(lo) else f"{m:+.3f}"
            for m, lo, hi in zip(table["headroom"], table["low"], table["high"], strict=True)],
    })


def open_edges_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Every cell (federation, unit, method, epsilon) whose chosen configuration still
    sits on an open edge of its grid after the extensions, with the edges: such a cell is
    not tuned to its optimum, and the pages say so."""
    test = tested(runs)
    cells = test[test["open_edges"] != ""].drop_duplicates(
        ["dataset", "unit", "method", "epsilon"])
    return pd.DataFrame({
        "federation": cells["dataset"].map(lambda d: DATASET_NAMES.get(d, d)),
        "unit": cells["unit"], "method": cells["method"],
        "epsilon": cells["epsilon"].map(epsilon_label),
        "open edges": cells["open_edges"].str.replace(":", " ", regex=False),
    }).reset_index(drop=True)


def shown_best_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`best_method_table` as a page shows it: epsilon written out, the margin with
    its interval in one column."""
    def interval(row: pd.Series) -> str:
        if not math.isfinite(row["margin low"]):
            return f"{row['margin']:+.3f} (one seed, no interval)"
        return f"{row['margin']:+.3f} [{row['margin low']:+.3f}, {row['margin high']:+.3f}]"

    return pd.DataFrame({
        "dataset": table["dataset"].map(lambda d: DATASET_NAMES.get(d, d)),
        "unit": table["unit"], "epsilon": table["epsilon"].map(epsilon_label),
        "best": table["best"], "accuracy": table["best mean"].round(3),
        "runner-up": table["runner-up"], "runner-up accuracy": table["runner-up mean"].round(3),
        "margin [95% interval]": table.apply(interval, axis=1), "verdict": table["verdict"],
        "open edges": table["open edges"],
    })
