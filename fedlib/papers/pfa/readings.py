"""Liu et al. (2022), PFA: the numbers the chapter's paragraphs quote.

Each paragraph of the chapter that quotes measured numbers is a template in the notebook
(:func:`fedlib.render.prose.say`); the functions here compute its values from the tables
the chapter already has: the final accuracies
(:func:`fedlib.papers.pfa.readouts.final_accuracy`), the public clients' budgets
(:func:`fedlib.papers.pfa.readouts.public_budgets_table`) and the runs another tier
stored. Most return a dict whose keys are the template's fields, so that a paragraph
reads ``say(template, **reading(...))``; a value the tier did not compute is a
:class:`~fedlib.render.prose.Missing`, and a paragraph whose runs are not stored at all
gets None (the chapter then says so).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
from scipy import stats

from fedlib.papers.pfa.experiment import run as run_experiment
from fedlib.papers.pfa.paper_tier import PAPER_GRID, stored_figure_runs
from fedlib.papers.pfa.readouts import (
    TOP_COLUMN,
    final_accuracy,
    public_budgets_table,
    short_of_public_chance,
)
from fedlib.render.prose import Missing, difference_of, listing, mean_of, scaled
from fedlib.runs.published import stored_runs

UNSTORED = Missing("not available (the paper tier's runs are not stored)")
"""What a number of another tier reads as when that tier's runs are not stored."""

NONE = Missing("none")
"""What a range over no values reads as."""

Reading = dict[str, Any]
"""The values of one paragraph, by the name of its template's field."""


# The small vocabulary of the chapter's paragraphs.


def method(aggregator: str, projection: str = "public") -> dict[str, str]:
    """The columns that select one method's runs.

    Parameters
    ----------
    aggregator
        The aggregator (``"fedavg"``, ``"weiavg"``, ``"pfa"``, ``"pfa+"``, ...).
    projection
        Where PFA's subspace comes from (``"public"``, ``"random"``, ``"public-text"``,
        ``"random-text"``); ``"public"`` for every other aggregator.

    Returns
    -------
    dict
        ``{"aggregator": ..., "projection": ...}``, to be spread into
        :func:`~fedlib.render.prose.mean_of` or given to
        :func:`~fedlib.render.prose.difference_of` as an arm.
    """
    return {"aggregator": aggregator, "projection": projection}


def span(values: Iterable[object], gone: object = UNSTORED) -> tuple[Any, Any]:
    """The lowest and the highest of the values that are not missing.

    Parameters
    ----------
    values
        Numbers, some of which may be :class:`~fedlib.render.prose.Missing`.
    gone
        What both ends are when no value is left.

    Returns
    -------
    tuple
        ``(lowest, highest)`` as floats, or ``(gone, gone)``.
    """
    found = [float(v) for v in values if not isinstance(v, Missing)]  # type: ignore[arg-type]
    return (min(found), max(found)) if found else (gone, gone)


def between(values: Iterable[object], gone: object = NONE) -> str:
    """A range in words, to two decimals.

    Parameters
    ----------
    values
        Numbers, some of which may be :class:`~fedlib.render.prose.Missing`.
    gone
        What the range reads as when no value is left (its phrase).

    Returns
    -------
    str
        ``"0.12 to 0.34"``, the one value when both ends round alike (``"0.12"``), or
        ``gone``'s phrase.
    """
    low, high = span(values, gone)
    if isinstance(low, Missing) or round(low, 2) == round(high, 2):
        return f"{low:.2f}"
    return f"{low:.2f} to {high:.2f}"


def parenthesised(names: Sequence[str]) -> str:
    """``" (a; b)"`` naming ``names`` after a count, or nothing when there are none."""
    return f" ({'; '.join(names)})" if names else ""


def seeds_text(frame: pd.DataFrame) -> str:
    """``"seed 2"`` or ``"seeds 0 and 1"``: the seeds of the rows of ``frame``."""
    seeds = sorted(set(frame["seed"]))
    return ("seed " if len(seeds) == 1 else "seeds ") + listing(seeds)


# Where the runs come from.


def tier_runs(tier: str, figure: str, *, scale: str, seed: int, runs: pd.DataFrame,
              left_out: Mapping[str, str]) -> pd.DataFrame | None:
    """The runs of ``figure`` at ``tier``.

    Parameters
    ----------
    tier
        The tier whose runs are wanted.
    figure
        The setting (``"fig3"``, ``"authors"``, ...).
    scale
        The page's own tier: its runs are ``runs``.
    seed
        The chapter's seed.
    runs
        The page's runs (every figure).
    left_out
        The settings the page left out (their runs are not stored).

    Returns
    -------
    pandas.DataFrame or None
        At the page's tier its own runs of ``figure`` (None when the setting is left
        out); at another tier the stored ones, the repeats that are stored with them
        (None when the first seed's are not all stored).
    """
    if tier == scale:
        return None if figure in left_out else runs[runs["figure"] == figure]
    return stored_figure_runs(tier, seed, figure)


def stored_final(runs: pd.DataFrame | None, last: int = 3) -> pd.DataFrame | None:
    """:func:`~fedlib.papers.pfa.readouts.final_accuracy` of ``runs``, or None when there
    are none (not stored, or no rows)."""
    return None if runs is None or runs.empty else final_accuracy(runs, last)


def published_authors(scale: str, seed: int) -> pd.DataFrame | None:
    """The paper tier's stored runs of the authors' defaults (their 100 x 100), which
    another tier shows beside its own.

    Parameters
    ----------
    scale
        The page's tier: at the paper tier these are the page's own runs, and None is
        returned.
    seed
        The chapter's seed.

    Returns
    -------
    pandas.DataFrame or None
        The stored runs, or None at the paper tier or when they are not all stored.
    """
    if scale == "paper":
        return None
    return stored_runs(run_experiment, PAPER_GRID.tier("paper"), seed, of_tier="paper",
                       figures=("authors",), progress=False)


# Figure 6b, Algorithm 3 and the tuned rates.


def figure_6b_linear(final: pd.DataFrame) -> Reading | None:
    """Figure 6b read as the text writes it, at the smallest projection dimension.

    Parameters
    ----------
    final
        Final accuracies (one row per run).

    Returns
    -------
    dict or None
        ``seeds`` (how many), ``k`` (the smallest of Figure 6), ``public`` and ``random``
        (PFA's mean final accuracy with the public subspace used linearly and with a
        random one), ``gap`` (public minus random in points, with its interval); None
        when Figure 6 has no runs.
    """
    fig6 = final[final["figure"] == "fig6"]
    if fig6.empty:
        return None
    k = int(fig6["k"].min())
    public, random = method("pfa", "public-text"), method("pfa", "random-text")
    return {"seeds": fig6["seed"].nunique(), "k": k,
            "public": mean_of(fig6, "accuracy", k=k, **public),
            "random": mean_of(fig6, "accuracy", k=k, **random),
            "gap": scaled(difference_of(fig6, "accuracy", public, random, k=k), 100)}


def figure_6b_largest_gaps(final: pd.DataFrame, k_max: int = 10) -> dict[str, Any]:
    """The largest distance, in points on the mean, between PFA with the public and with
    the random subspace in Figure 6b, over the projection dimensions up to ``k_max``.

    Returns
    -------
    dict
        ``centred`` (the released code's form) and ``linear`` (the text's): the largest
        absolute difference of the means, or missing when no dimension has both arms.
    """
    fig6 = final[final["figure"] == "fig6"]
    pairs = {"centred": ("public", "random"), "linear": ("public-text", "random-text")}
    gaps: dict[str, Any] = {}
    for form, (public, random) in pairs.items():
        found = []
        for k in sorted(fig6["k"].unique()):
            if k > k_max:
                continue
            gap = scaled(difference_of(fig6, "accuracy", method("pfa", public),
                                       method("pfa", random), k=k), 100)
            if not isinstance(gap, Missing):
                found.append(abs(float(gap.mean)))
        gaps[form] = max(found) if found else Missing()
    return gaps


def text_settings(final: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The settings that run PFA as Algorithm 3 writes it, named as the chapter's prose
    names them: Figure 3's panels (``"Figure 3, mnist-logr"``), then the authors' defaults
    under the accountant by model and budget file (``"the authors' defaults,
    logr-authors, mixgauss2"``), each in sorted order."""
    fig3 = final[final["figure"] == "fig3"]
    authors = final[(final["figure"] == "authors") & (final["calibration"] == "rdp")]
    settings = [(f"Figure 3, {d}-{m}", frame)
                for (d, m), frame in fig3.groupby(["dataset", "model"])]
    settings += [(f"the authors' defaults, {m}, {d}", frame)
                 for (m, d), frame in authors.groupby(["model", "distribution"])]
    return [(name, frame) for name, frame in settings
            if (frame["projection"] == "public-text").any()]


def text_against_code(final: pd.DataFrame) -> Reading:
    """PFA as Algorithm 3 writes it against the released code's PFA and against WeiAvg, in
    every setting of :func:`text_settings` (differences in points, paired by seed).

    Returns
    -------
    dict
        ``n`` (settings); ``code_lo``/``code_hi`` (the range of text minus code over
        them), ``code_zero`` (how many of these intervals hold zero); ``weiavg_lo``/
        ``weiavg_hi`` (the range of text minus WeiAvg), ``n_below`` (how many lie below
        zero beyond their interval) and ``below`` (those settings, as
        :func:`parenthesised` names them). Missing where no setting has both arms.
    """
    settings = text_settings(final)
    text = method("pfa", "public-text")
    code = [e for _, frame in settings
            for e in [scaled(difference_of(frame, "accuracy", text, method("pfa")), 100)]
            if not isinstance(e, Missing)]
    weiavg = [(name, e) for name, frame in settings
              for e in [scaled(difference_of(frame, "accuracy", text, method("weiavg")), 100)]
              if not isinstance(e, Missing)]
    below = [name for name, e in weiavg if e.high < 0]
    return {
        "code_lo": min(e.mean for e in code) if code else Missing(),
        "code_hi": max(e.mean for e in code) if code else Missing(),
        "n": len(settings),
        "code_zero": sum(e.low <= 0 <= e.high for e in code) if code else Missing(),
        "weiavg_lo": min(e.mean for _, e in weiavg) if weiavg else Missing(),
        "weiavg_hi": max(e.mean for _, e in weiavg) if weiavg else Missing(),
        "n_below": len(below) if weiavg else Missing(),
        "below": parenthesised(below),
    }


def authors_hundred(paper_runs: pd.DataFrame | None) -> Reading | None:
    """The paper tier's runs at the authors' 100 x 100 (RDP, their LogR, MixGauss2): the
    runs of the most rounds, each ending at the mean of its last 10 evaluations.

    Returns
    -------
    dict or None
        ``seeds`` (sorted), and the mean over them of ``text`` (PFA as Algorithm 3
        writes it), ``code`` (the released code's PFA), ``weiavg`` and ``random`` (the
        text's PFA with a random subspace); None when the runs are not stored.
    """
    if paper_runs is None or paper_runs.empty:
        return None
    longest = paper_runs[paper_runs["rounds"] == paper_runs["rounds"].max()]
    final = final_accuracy(longest, last=10)
    final = final[(final["calibration"] == "rdp") & (final["model"] == "logr-authors")
                  & (final["distribution"] == "mixgauss2")]
    if final.empty:
        return None
    return {"seeds": sorted(int(x) for x in final["seed"].unique()),
            "text": mean_of(final, "accuracy", **method("pfa", "public-text")),
            "code": mean_of(final, "accuracy", **method("pfa")),
            "weiavg": mean_of(final, "accuracy", **method("weiavg")),
            "random": mean_of(final, "accuracy", **method("pfa", "random-text"))}


def tuned_rates(final: pd.DataFrame, chosen: pd.DataFrame) -> Reading | None:
    """The learning rates the validation data choose and the gaps between methods each
    at its own rate (Figure 3's MNIST-LogR setting ``"lr"``).

    Parameters
    ----------
    final
        Final accuracies (one row per run); the rows of figure ``"lr"`` are read.
    chosen
        :func:`~fedlib.papers.pfa.readouts.chosen_rates`.

    Returns
    -------
    dict or None
        ``rates`` (``"0.1 for PFA, PFA+; 0.05 for WeiAvg"``: each rate, largest first,
        with the methods choosing it), and in points, each method at its rate: ``pfa``
        and ``plus`` (PFA and PFA+ minus WeiAvg), ``fedavg`` and ``minimum`` (WeiAvg
        minus FedAvg and minus Minimum); None when no rate was chosen.
    """
    if chosen.empty:
        return None
    rate_of = {(r.aggregator, r.projection): float(r.lr) for r in chosen.itertuples()}
    by_rate = chosen.groupby("lr")["method"].apply(list).sort_index(ascending=False)
    lr_final = final[final["figure"] == "lr"]

    def at_rate(aggregator: str) -> dict[str, object]:
        return {**method(aggregator), "lr": rate_of.get((aggregator, "public"), Missing())}

    def gap(first: str, second: str) -> Any:
        return scaled(difference_of(lr_final, "accuracy", at_rate(first), at_rate(second)),
                      100)

    return {"rates": "; ".join(f"{lr:g} for " + ", ".join(names)
                               for lr, names in by_rate.items()),
            "pfa": gap("pfa", "weiavg"), "plus": gap("pfa+", "weiavg"),
            "fedavg": gap("weiavg", "fedavg"), "minimum": gap("weiavg", "minimum")}


# Reading the verdicts.


def _span_over(frame: pd.DataFrame, by: str, aggregator: str) -> tuple[Any, Any]:
    """The range of ``aggregator``'s mean final accuracy over the groups of ``by``
    (missing ends when there are none)."""
    return span([mean_of(group, "accuracy", **method(aggregator))
                 for _, group in frame.groupby(by)], Missing())


def pfa_against_weiavg(final: pd.DataFrame) -> Reading:
    """Where plain averaging ends and whether PFA beats WeiAvg, over Figure 3's panels
    and Figure 4's budget distributions.

    Returns
    -------
    dict
        ``fedavg_lo``/``fedavg_hi`` and ``minimum_lo``/``minimum_hi``: the range of FedAvg's
        and Minimum's mean final accuracy over Figure 3's CNN panels; ``fedavg4_*`` and
        ``minimum4_*`` the same over Figure 4's distributions, ``model4`` Figure 4's
        model(s); ``seeds3`` and ``seeds4`` the seeds of each figure; ``n`` the settings
        where PFA minus WeiAvg is measured, ``n_ahead`` and ``n_behind`` those where it is
        above or below zero beyond its interval, ``ahead`` and ``behind`` their names (as
        :func:`parenthesised` gives them).
    """
    fig3 = final[final["figure"] == "fig3"]
    fig4 = final[final["figure"] == "fig4"]
    cnn3 = fig3[fig3["model"] == "cnn"]
    compared = [(f"Figure 3, {d}-{m}", frame) for (d, m), frame in
                fig3.groupby(["dataset", "model"])]
    compared += [(f"Figure 4, {d}", frame) for d, frame in fig4.groupby("distribution")]
    measured = [(name, e) for name, frame in compared
                for e in [scaled(difference_of(frame, "accuracy", method("pfa"),
                                               method("weiavg")), 100)]
                if not isinstance(e, Missing)]
    ahead = [name for name, e in measured if e.low > 0]
    behind = [name for name, e in measured if e.high < 0]
    ranges = {"fedavg": _span_over(cnn3, "dataset", "fedavg"),
              "minimum": _span_over(cnn3, "dataset", "minimum"),
              "fedavg4": _span_over(fig4, "distribution", "fedavg"),
              "minimum4": _span_over(fig4, "distribution", "minimum")}
    return {**{f"{name}_{end}": value for name, (low, high) in ranges.items()
               for end, value in (("lo", low), ("hi", high))},
            "model4": ", ".join(sorted(fig4["model"].unique())) or Missing(),
            "seeds3": fig3["seed"].nunique() or Missing(),
            "seeds4": fig4["seed"].nunique() or Missing(),
            "n_ahead": len(ahead), "n": len(measured), "ahead": parenthesised(ahead),
            "n_behind": len(behind), "behind": parenthesised(behind)}


def projection_adds_little(final: pd.DataFrame) -> Reading:
    """FedAvg and PFA under the alike budgets of Figure 4, and how far apart the public
    and the random subspace end in Figure 6b.

    Returns
    -------
    dict
        ``fedavg_u``, ``fedavg_g``, ``pfa_u``, ``pfa_g``: mean final accuracy of FedAvg
        and PFA under Uniform and Gauss budgets; ``centred`` and ``linear``:
        :func:`figure_6b_largest_gaps`.
    """
    fig4 = final[final["figure"] == "fig4"]
    values = {f"{name}_{d[0]}": mean_of(fig4, "accuracy", distribution=d, **method(a))
              for name, a in (("fedavg", "fedavg"), ("pfa", "pfa"))
              for d in ("uniform", "gauss")}
    return {**values, **figure_6b_largest_gaps(final)}


# The paper tier beside the page's.


def cnn_peak_and_end(runs: pd.DataFrame, final: pd.DataFrame,
                     early: int = 20) -> tuple[list[float], list[float]]:
    """WeiAvg, PFA and PFA+ on Figure 3's CNN panels: how high they climb early and where
    they end.

    Parameters
    ----------
    runs
        Figure 3's runs, one row per run and evaluated round.
    final
        Their final accuracies.
    early
        The rounds the peak is looked for in (``round <= early``).

    Returns
    -------
    tuple of lists
        The highest accuracy within the first ``early`` rounds and the final accuracy,
        each averaged over the seeds, one value per panel and aggregator (sorted by
        dataset, then aggregator).
    """
    aggregators = ["weiavg", "pfa", "pfa+"]
    cnn = runs[(runs["model"] == "cnn") & runs["aggregator"].isin(aggregators)
               & (runs["projection"] == "public")].dropna(subset=["accuracy"])
    peaks = (cnn[cnn["round"] <= early].groupby(["dataset", "aggregator", "seed"])["accuracy"]
             .max().groupby(["dataset", "aggregator"]).mean())
    ends = final[(final["model"] == "cnn") & final["aggregator"].isin(aggregators)
                 & (final["projection"] == "public")].groupby(["dataset", "aggregator"])[
        "accuracy"].mean()
    return list(peaks), list(ends)


def private_cnn(final: pd.DataFrame) -> pd.Series:
    """Final accuracy of FedAvg, WeiAvg, PFA, PFA+ and Minimum on Figure 3's CNN panels,
    mean over seeds, indexed by dataset and aggregator."""
    chosen = final[(final["model"] == "cnn") & final["aggregator"].isin(
        ["fedavg", "weiavg", "pfa", "pfa+", "minimum"]) & (final["projection"] == "public")]
    return chosen.groupby(["dataset", "aggregator"])["accuracy"].mean()


def figure_3_across_tiers(quick_runs: pd.DataFrame | None,
                          paper_runs: pd.DataFrame | None) -> Reading | None:
    """Figure 3 at the paper tier, beside the quick tier.

    Parameters
    ----------
    quick_runs, paper_runs
        Figure 3's runs at each tier (None when not stored).

    Returns
    -------
    dict or None
        ``logr_lo``/``logr_hi``: the range of the LogR panels' final accuracies (every
        method, mean over seeds); ``peak_lo``/``peak_hi`` and ``end_lo``/``end_hi``: the
        ranges of :func:`cnn_peak_and_end`; ``n_cnn``: the arms of :func:`private_cnn` at
        the paper tier, ``below``: how many of them end below the same arm at the quick
        tier; ``paper_lo``/``paper_hi`` and ``quick_lo``/``quick_hi``: their ranges at each
        tier. Missing where the quick tier is not stored; None when the paper tier is
        not.
    """
    quick, paper = stored_final(quick_runs), stored_final(paper_runs)
    if paper is None or paper_runs is None:
        return None
    peaks, ends = cnn_peak_and_end(paper_runs, paper)
    logr = list(paper[paper["model"] == "logr"].groupby(
        ["dataset", "aggregator", "projection"])["accuracy"].mean())
    cnn_paper = private_cnn(paper)
    cnn_quick = None if quick is None else private_cnn(quick)
    below = (UNSTORED if cnn_quick is None
             else int((cnn_paper < cnn_quick.reindex(cnn_paper.index)).sum()))
    ranges = {"logr": span(logr), "peak": span(peaks), "end": span(ends),
              "paper": span(list(cnn_paper)),
              "quick": span([] if cnn_quick is None else list(cnn_quick))}
    return {**{f"{name}_{end}": value for name, (low, high) in ranges.items()
               for end, value in (("lo", low), ("hi", high))},
            "below": below, "n_cnn": len(cnn_paper)}


MIXTURE_AGGREGATORS = {"fedavg": "fedavg", "weiavg": "weiavg", "pfa": "pfa", "plus": "pfa+",
                       "minimum": "minimum", "maximum": "maximum", "np": "np-fedavg"}
"""The aggregators :func:`figure_4_paper_tier` gives across the mixtures, by the prefix
of their field."""


def figure_4_paper_tier(final: pd.DataFrame) -> Reading:
    """Figure 4 at the paper tier: every aggregator under the alike and the spread-out
    budgets.

    Parameters
    ----------
    final
        The final accuracies of Figure 4's runs at the paper tier.

    Returns
    -------
    dict
        ``model``; ``seeds_main`` and ``seeds_rest``: the seeds of PFA and of Minimum
        (the four aggregators the claims read run more of them); ``fedavg_u``,
        ``weiavg_u``, ``pfa_u``, ``plus_u`` (Uniform) and the same ending ``_g`` (Gauss):
        mean final accuracies; ``<name>_m`` for every aggregator of
        :data:`MIXTURE_AGGREGATORS`: the range (:func:`between`) of its mean over the
        seeds across the mixtures MixGauss1, 2 and 4.
    """
    mixtures = final[final["distribution"].str.startswith("mixgauss")
                     & (final["projection"] == "public")]
    by_mixture = mixtures.groupby(["aggregator", "distribution"])["accuracy"].mean()
    seeds_of = final.groupby("aggregator")["seed"].nunique()
    alike = {f"{name}_{d[0]}": mean_of(final, "accuracy", distribution=d, **method(a))
             for d in ("uniform", "gauss")
             for name, a in (("fedavg", "fedavg"), ("weiavg", "weiavg"), ("pfa", "pfa"),
                             ("plus", "pfa+"))}
    spread = {f"{name}_m": between(by_mixture[a] if a in by_mixture.index else [], UNSTORED)
              for name, a in MIXTURE_AGGREGATORS.items()}
    return {"model": ", ".join(sorted(final["model"].unique())),
            "seeds_main": seeds_of.get("pfa", Missing()),
            "seeds_rest": seeds_of.get("minimum", Missing()), **alike, **spread}


# The public clients' budgets (Figure 4 at the paper tier, seed by seed).


def public_count(table: pd.DataFrame) -> int:
    """How many public clients each setting of a
    :func:`~fedlib.papers.pfa.readouts.public_budgets_table` has (the same in all)."""
    return len(table["public budgets"].iloc[0].split(", "))


def public_range(table: pd.DataFrame) -> tuple[Any, Any]:
    """The lowest and the highest public client's budget over the rows of a
    :func:`~fedlib.papers.pfa.readouts.public_budgets_table` (``"none"`` without rows)."""
    return span([float(b) for listed in table["public budgets"] for b in listed.split(", ")],
                Missing("none"))


def public_budgets_shown(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`~fedlib.papers.pfa.readouts.public_budgets_table` as the chapter shows
    it: without the figure and dataset, to three decimals, the count of clients from the
    top component reading "not a mixture" where there is none."""
    shown = table.drop(columns=["figure", "dataset"]).round(3)
    shown[TOP_COLUMN] = shown[TOP_COLUMN].astype("string").fillna("not a mixture")
    return shown


def _split_by_top(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The mixture settings of ``table``, those whose public clients all drew from the
    top component, and the others."""
    mixtures = table[table["distribution"].str.startswith("mixgauss")]
    n_public = public_count(table)
    return (mixtures, mixtures[mixtures[TOP_COLUMN] >= n_public],
            mixtures[mixtures[TOP_COLUMN] < n_public])


def public_budgets_reading(table: pd.DataFrame, n_clients: int) -> Reading:
    """How PFA's accuracy follows the budgets of its public clients, seed by seed.

    Parameters
    ----------
    table
        :func:`~fedlib.papers.pfa.readouts.public_budgets_table` of Figure 4's runs.
    n_clients
        The clients of a setting.

    Returns
    -------
    dict
        ``n_public`` (public clients a setting has), ``n_mix`` (mixture settings),
        ``n_full`` and ``n_short`` (those where at least ``n_public`` clients drew from
        the top component, and the others), their ``seeds_full``/``seeds_short``
        (:func:`seeds_text`) and the ranges (:func:`between`) of PFA and FedAvg in each
        (``pfa_full``, ``fedavg_full``, ``pfa_short``, ``fedavg_short``), ``low_budgets``
        (the range of the smallest public budget where short), ``n_clients``,
        ``chance`` (:func:`~fedlib.papers.pfa.readouts.short_of_public_chance` under
        MixGauss1), ``gauss_low``/``gauss_high`` and ``uniform_low``/``uniform_high``
        (:func:`public_range` under Gauss and Uniform), ``pfa_gauss`` and ``pfa_uniform``
        (the range of PFA under each).
    """
    mixtures, full, short = _split_by_top(table)
    alike = {d: table[table["distribution"] == d] for d in ("uniform", "gauss")}
    gauss_low, gauss_high = public_range(alike["gauss"])
    uniform_low, uniform_high = public_range(alike["uniform"])
    return {"n_public": public_count(table), "n_full": len(full), "n_mix": len(mixtures),
            "n_short": len(short), "seeds_full": seeds_text(full),
            "seeds_short": seeds_text(short), "pfa_full": between(full["PFA"]),
            "fedavg_full": between(full["FedAvg"]), "pfa_short": between(short["PFA"]),
            "fedavg_short": between(short["FedAvg"]),
            "low_budgets": between(short["smallest public budget"]),
            "n_clients": n_clients,
            "chance": short_of_public_chance("mixgauss1", n_clients),
            "gauss_low": gauss_low, "gauss_high": gauss_high,
            "uniform_low": uniform_low, "uniform_high": uniform_high,
            "pfa_gauss": between(alike["gauss"]["PFA"]),
            "pfa_uniform": between(alike["uniform"]["PFA"])}


def by_top_count(table: pd.DataFrame) -> str:
    """WeiAvg and PFA over the mixture settings of a
    :func:`~fedlib.papers.pfa.readouts.public_budgets_table`, by how many clients drew
    from the top component: ``"2 (seed 1): WeiAvg 0.40, PFA 0.20; 3 (seeds 0 and 2):
    ..."``, the counts in increasing order."""
    mixtures = table[table["distribution"].str.startswith("mixgauss")]
    return "; ".join(f"{count} ({seeds_text(group)}): WeiAvg {between(group['WeiAvg'])}, "
                     f"PFA {between(group['PFA'])}"
                     for count, group in mixtures.groupby(TOP_COLUMN))


SIGNIFICANCE = 0.05
"""The p-value below which the rank correlation of :func:`fedavg_spread_under_gauss`
reads as one."""


def fedavg_spread_under_gauss(table: pd.DataFrame) -> Reading:
    """FedAvg seed by seed under Gauss budgets, against the smallest budget of all.

    Parameters
    ----------
    table
        :func:`~fedlib.papers.pfa.readouts.public_budgets_table` of Figure 4's runs.

    Returns
    -------
    dict
        ``by_seed`` (``"0.55 at seed 0 (smallest budget 0.01); ..."``), ``n`` (seeds),
        ``rank`` and ``p_value`` (Spearman's rank correlation of FedAvg's accuracy with
        the smallest budget, and its p-value; ``rank`` is None with fewer than three
        seeds, or where it is not defined), ``correlated`` (whether the p-value is at
        most :data:`SIGNIFICANCE`) and ``weiavg`` (WeiAvg's range, :func:`between`).
    """
    gauss = table[table["distribution"] == "gauss"]
    rank, p_value = (stats.spearmanr(gauss["FedAvg"], gauss["smallest budget"])
                     if len(gauss) >= 3 else (float("nan"), float("nan")))
    return {"by_seed": "; ".join(f"{accuracy:.2f} at seed {seed} (smallest budget {low:.2f})"
                                 for seed, accuracy, low in zip(
                                     gauss["seed"], gauss["FedAvg"], gauss["smallest budget"],
                                     strict=True)),
            "n": len(gauss), "rank": None if pd.isna(rank) else float(rank),
            "p_value": float(p_value), "correlated": not p_value > SIGNIFICANCE,
            "weiavg": between(gauss["WeiAvg"])}


def cnn_beside(figure_runs: Iterable[pd.DataFrame | None]) -> Reading | None:
    """The CNN settings of Figures 3 and 8 at the paper tier, split as Figure 4's are by
    whether every public client drew from the top component of MixGauss1.

    Parameters
    ----------
    figure_runs
        The stored runs of each figure (None or empty where not stored).

    Returns
    -------
    dict or None
        ``n_seeds``; ``pfa_full`` and ``seeds_full`` where all public clients drew from
        the top component, ``pfa_short`` and ``seeds_short`` where one did not;
        ``fedavg``: FedAvg's range over all of them. None when no runs are stored.
    """
    found = [runs for runs in figure_runs if runs is not None and not runs.empty]
    if not found:
        return None
    table = public_budgets_table(pd.concat(found), ("fig3", "fig8"))
    table = table[table["distribution"].str.startswith("mixgauss")]
    _, full, short = _split_by_top(table)
    return {"n_seeds": table["seed"].nunique(), "pfa_full": between(full["PFA"]),
            "seeds_full": seeds_text(full), "pfa_short": between(short["PFA"]),
            "seeds_short": seeds_text(short), "fedavg": between(table["FedAvg"])}

