"""Liu et al. (2022), PFA: the chapter's figures, one function per figure of the paper.

Each function takes the tables :mod:`fedlib.papers.pfa.claims` reads off the runs
(accuracy curves, final accuracies, uplink traffic, spectra), selects its figure's
runs and returns a matplotlib Figure; captions live in the notebook.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from fedlib.papers.pfa.experiment import DISTRIBUTIONS, FIG5_SETTINGS, LABELS, MAIN_AGGREGATORS
from fedlib.render.glue import left_out_note

ORDER = [LABELS[a] for a in MAIN_AGGREGATORS]
"""The aggregators' names in the order of the legends."""

FIG3_PANELS = [(d, m) for d in ("mnist", "fashion-mnist") for m in ("logr", "cnn")]
FIG8_PANELS = [("mnist", "logr"), ("mnist", "cnn")]


def accuracy_panels(frame: pd.DataFrame, panels: Sequence[tuple[str, str]], title: str,
                    order: Sequence[str]) -> plt.Figure:
    """Test accuracy against rounds, one panel per (dataset, model), one line per method
    (the ``method`` column) in ``order``: the mean over seeds, with a band of one
    standard deviation where there are several; the legend is on the first panel."""
    figure, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4), sharey=True,
                                squeeze=False)
    for ax, (dataset, model) in zip(axes[0], panels, strict=True):
        data = frame[(frame["dataset"] == dataset) & (frame["model"] == model)]
        sns.lineplot(data=data, x="round", y="accuracy", hue="method", hue_order=list(order),
                     ax=ax, errorbar="sd", legend=ax is axes[0][0])
        name = data["data"].iloc[0] if len(data) else dataset
        ax.set_title(f"{name} / {model} ({title})")
        ax.set_ylim(0, 1)
    axes[0][0].legend(fontsize=7)
    figure.tight_layout()
    return figure


def figure_3(curves: pd.DataFrame, order: Sequence[str] = ORDER) -> plt.Figure:
    """Accuracy against rounds on MNIST and Fashion-MNIST, LogR and CNN (IID, MixGauss1).

    ``curves``: :func:`fedlib.papers.pfa.readouts.accuracy_curves`.
    """
    fig3 = curves[(curves["figure"] == "fig3") & (curves["projection"] == "public")]
    return accuracy_panels(fig3, FIG3_PANELS, "IID", order)


def figure_4(final: pd.DataFrame, order: Sequence[str] = ORDER) -> plt.Figure:
    """Final accuracy on MNIST by budget distribution, one bar per method: the mean over
    seeds, with one standard deviation where there are several.

    ``final``: :func:`fedlib.papers.pfa.readouts.final_accuracy`.
    """
    fig4 = final[final["figure"] == "fig4"].copy()
    fig4["method"] = fig4["aggregator"].map(LABELS)
    figure, ax = plt.subplots(figsize=(10, 3.6))
    sns.barplot(data=fig4, x="distribution", y="accuracy", hue="method", hue_order=list(order),
                order=[d for d in DISTRIBUTIONS if d in set(fig4["distribution"])], ax=ax,
                errorbar="sd")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, ncol=len(order), loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False)
    figure.tight_layout()
    return figure


FIG5_LABELS = {"cifar10": "CIFAR-10", "imdb": "IMDb"}
"""Figure 5's datasets as the captions name them."""


def figure_5(curves: pd.DataFrame, order: Sequence[str] = ORDER) -> plt.Figure:
    """Accuracy against rounds on CIFAR-10 and IMDb (M = 50; paper tier only), on the
    datasets ``curves`` has runs of.

    ``curves``: :func:`fedlib.papers.pfa.readouts.accuracy_curves`.
    """
    fig5 = curves[curves["figure"] == "fig5"]
    panels = [(d, m) for d, m in FIG5_SETTINGS if d in set(fig5["dataset"])]
    return accuracy_panels(fig5, panels, "IID, M=50", order)


def show_figure_5(curves: pd.DataFrame, scale: str, left_out: dict[str, str] | None = None,
                  order: Sequence[str] = ORDER) -> None:
    """Show :func:`figure_5` and its caption, or say why it is not shown: its runs were
    left out as not all stored (``left_out``, from :func:`fedlib.sweeps.run_parts`, where
    a dataset whose runs are not all stored is named by
    :func:`fedlib.papers.pfa.paper_tier.fig5_half` when the other one's are), or the tier
    does not run it."""
    from IPython.display import Markdown, display

    from fedlib.papers.pfa.paper_tier import FIG5_PART, fig5_half
    from fedlib.render.markdown import markdown_code, markdown_text

    left_out = left_out or {}
    note = left_out_note([FIG5_PART], left_out)
    if note is not None:
        display(Markdown(note))
        return
    if curves[curves["figure"] == "fig5"].empty:
        display(Markdown(
            f"Not run at the `{scale}` tier: Figure 5 (CIFAR-10 with a 4-layer CNN, IMDb with "
            "an LSTM, 50 clients) runs at the paper tier only, and its claim is reported as "
            "not run. Run this notebook with `scale = \"paper\"` to produce it."))
        return
    figure = figure_5(curves, order)
    display(figure)
    plt.close(figure)
    drawn = [d for d, _ in FIG5_SETTINGS if fig5_half(d) not in left_out]
    display(Markdown("Test accuracy of the global model against rounds on "
                     f"{' and '.join(FIG5_LABELS[d] for d in drawn)}, 50 clients, MixGauss1 "
                     "budgets, every aggregator."))
    for dataset, _ in FIG5_SETTINGS:
        half = fig5_half(dataset)
        if half in left_out:
            display(Markdown(
                f"Not drawn: the runs of {markdown_code(half)} "
                f"({markdown_text(left_out[half])}) are not on this page. The claim judges "
                f"the other dataset on its own (its parts are in the claim's evidence) and "
                "stays not run until both are stored, unless that half fails."))


def figure_6(final: pd.DataFrame) -> plt.Figure:
    """(a) PFA+ against the projection dimension k, with WeiAvg as a reference line;
    (b) PFA with the public subspace against a random Gaussian one. Means over seeds,
    with a band of one standard deviation where there are several.

    ``final``: :func:`fedlib.papers.pfa.readouts.final_accuracy`.
    """
    fig6 = final[final["figure"] == "fig6"]
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    _mean_and_spread(axes[0], fig6[fig6["aggregator"] == "pfa+"], "PFA+")
    weiavg = fig6[fig6["aggregator"] == "weiavg"]["accuracy"].mean()
    axes[0].axhline(weiavg, color="grey", linestyle="--", label="WeiAvg")
    axes[0].set(xscale="log", xlabel="k", ylabel="accuracy", title="(a) PFA+ against k")
    axes[0].legend()
    for projection, label in SUBSPACE_LABELS.items():
        chosen = fig6[(fig6["aggregator"] == "pfa") & (fig6["projection"] == projection)]
        if not chosen.empty:
            _mean_and_spread(axes[1], chosen, label)
    axes[1].set(xscale="log", xlabel="k", title="(b) PFA: projection subspace")
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    return figure


SUBSPACE_LABELS = {"public-text": "public, linear (Alg. 3 as written)",
                   "random-text": "random, linear (as the text means it)",
                   "public": "public, centred (released code)",
                   "random": "random, centred at the public mean"}
"""Figure 6b's four subspaces: where the subspace comes from, and how it is applied."""


def figure_text_projection(final: pd.DataFrame) -> plt.Figure:
    """Final accuracy of WeiAvg, the released code's PFA (centred covariance, projection
    about the public mean) and PFA as Algorithm 3 writes it (x x^T, linear projection),
    in Figure 3's panels and at the authors' defaults under RDP: the mean over seeds and
    every seed as a dot.

    ``final``: :func:`fedlib.papers.pfa.readouts.final_accuracy`.
    """
    arms = {("weiavg", "public"): "WeiAvg", ("pfa", "public"): "PFA (released code)",
            ("pfa", "public-text"): "PFA (Alg. 3 as written)"}
    chosen = final[[(a, p) in arms for a, p in zip(final["aggregator"], final["projection"],
                                                    strict=True)]]
    fig3 = chosen[chosen["figure"] == "fig3"]
    fig3 = fig3.assign(setting="Fig. 3 " + fig3["dataset"].str.replace("fashion-mnist", "fmnist")
                       + "-" + fig3["model"])
    authors = chosen[(chosen["figure"] == "authors") & (chosen["calibration"] == "rdp")]
    authors = authors.assign(setting="authors " + authors["model"].str.replace(
        "logr-authors", "their LogR").str.replace("^logr$", "our LogR", regex=True)
        + ", " + authors["distribution"])
    data = pd.concat([fig3, authors], ignore_index=True)
    data = data.assign(method=[arms[(a, p)] for a, p in zip(data["aggregator"],
                                                            data["projection"], strict=True)])
    order = list(arms.values())
    figure, ax = plt.subplots(figsize=(10, 3.6))
    sns.barplot(data=data, x="setting", y="accuracy", hue="method", hue_order=order,
                errorbar=None, ax=ax, alpha=0.7)
    sns.stripplot(data=data, x="setting", y="accuracy", hue="method", hue_order=order,
                  dodge=True, ax=ax, size=3, palette="dark:black", legend=False)
    ax.set(xlabel="", ylabel="final accuracy", ylim=(0, 1))
    ax.tick_params(axis="x", labelrotation=25, labelsize=7)
    ax.legend(fontsize=7)
    figure.tight_layout()
    return figure


def figure_lr_grid(validation: pd.DataFrame, chosen: pd.DataFrame) -> plt.Figure:
    """Final validation accuracy against the learning rate, one line per method (mean over
    seeds), each method's chosen rate circled.

    ``validation``: :func:`fedlib.papers.pfa.readouts.final_validation`; ``chosen``:
    :func:`fedlib.papers.pfa.readouts.chosen_rates`.
    """
    figure, ax = plt.subplots(figsize=(7, 3.6))
    for row in chosen.itertuples():
        mine = validation[(validation["aggregator"] == row.aggregator)
                          & (validation["projection"] == row.projection)]
        curve = mine.groupby("lr")["val_accuracy"].mean()
        line, = ax.plot(curve.index, curve.values, marker="o", label=row.method)
        ax.scatter([row.lr], [row.val_accuracy], s=140, facecolors="none",
                   edgecolors=line.get_color(), linewidths=1.5)
    ax.set(xscale="log", xlabel="learning rate", ylabel="final validation accuracy",
           ylim=(0, 1), title="MNIST-LogR, MixGauss1: each method's rate (circled)")
    ax.legend(fontsize=7)
    figure.tight_layout()
    return figure


def _mean_and_spread(ax: plt.Axes, final: pd.DataFrame, label: str) -> None:
    """Final accuracy against k: the mean over seeds, and a band of one standard
    deviation (none with one seed)."""
    by_k = final.groupby("k")["accuracy"]
    mean, spread = by_k.mean(), by_k.std(ddof=1).fillna(0.0)
    line, = ax.plot(mean.index, mean.values, marker="o", label=label)
    ax.fill_between(mean.index, mean - spread, mean + spread, color=line.get_color(),
                    alpha=0.2, linewidth=0)


def figure_7(traffic: pd.DataFrame) -> plt.Figure:
    """Cumulative uplink megabytes of FedAvg and PFA+ on MNIST, LogR and CNN.

    ``traffic``: :func:`fedlib.papers.pfa.readouts.uplink_traffic`.
    """
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    drawn = ["fedavg", "pfa+"]
    for ax, model in zip(axes, ("logr", "cnn"), strict=True):
        data = traffic[(traffic["model"] == model) & traffic["aggregator"].isin(drawn)]
        sns.lineplot(data=data, x="round", y="MB", hue="method",
                     hue_order=[LABELS[a] for a in drawn], ax=ax, errorbar=None)
        ax.set_title(f"mnist / {model}: cumulative uplink")
    figure.tight_layout()
    return figure


def figure_8(curves: pd.DataFrame, order: Sequence[str] = ORDER) -> plt.Figure:
    """Accuracy against rounds on MNIST with the non-IID shard partition.

    ``curves``: :func:`fedlib.papers.pfa.readouts.accuracy_curves`.
    """
    fig8 = curves[curves["figure"] == "fig8"]
    return accuracy_panels(fig8, FIG8_PANELS, "non-IID", order)


def figure_13(spectra: pd.DataFrame) -> plt.Figure:
    """Share of the variance of each eigenvalue of the public updates, one bar colour per
    model and round: the mean over seeds, with one standard deviation where there are
    several (a note instead when no round had two public updates).

    ``spectra``: :func:`fedlib.papers.pfa.readouts.spectrum_table`.
    """
    figure, ax = plt.subplots(figsize=(6, 3.4))
    if spectra.empty:
        ax.text(0.5, 0.5, "no round had two public updates: no spectrum", ha="center")
        ax.set_axis_off()
    else:
        bars = spectra.assign(**{"model, round": spectra["model"] + ", round "
                                 + spectra["round"].astype(str)})
        sns.barplot(data=bars, x="index", y="share", hue="model, round", ax=ax,
                    errorbar="sd")
        ax.set(xlabel="eigenvalue (largest first)", ylabel="share of the variance")
    figure.tight_layout()
    return figure
