"""Hu et al. (2020) on HAR: the chapter's figures, one function per figure of the paper.

Figures 3 and 4 share one figure (two panels, one y axis), as the chapter shows them.
Captions live in the notebook.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fedlib.papers.hu2020.experiment import EPSILON, FIG2_SETTINGS
from fedlib.plots import error_vs_parameter, loss_curve_panels


def _setting(frame: pd.DataFrame) -> np.ndarray:
    """Legend label of every row: private (at the chapter's epsilon) or non-private."""
    return np.where(frame["epsilon"].notna(), f"private (eps={EPSILON:g})", "non-private")


def figure_2(runs: pd.DataFrame) -> plt.Figure:
    """Primal objective against rounds, private and non-private, one panel per setting.

    ``runs`` holds every recorded round of the runs (those of Figure 2 are used).
    """
    curves = runs[runs["figure"].str.startswith("fig2")].assign(
        label=lambda f: _setting(f), seed=lambda f: f["repeat"])
    panels = [(f"({p}) tau={t:g}, P_drop={d:g}", curves[curves["figure"] == "fig2" + p])
              for p, (t, d) in FIG2_SETTINGS.items()]
    return loss_curve_panels(curves, panels, value="primal", ylabel="primal objective",
                             log_y=True)


def figures_3_and_4(last: pd.DataFrame) -> plt.Figure:
    """Test error against tau (Figure 3) and against P_drop (Figure 4), private and not.

    ``last`` holds one row per finished run (its final round).
    """
    fig3 = last[last["figure"] == "fig3"]
    fig4 = last[last["figure"] == "fig4"]
    return error_vs_parameter([
        ("device variability tau", fig3.assign(setting=_setting), "tau"),
        ("drop probability P_drop", fig4.assign(setting=_setting), "p_drop"),
    ], log_x=[False, False])


def figure_5(fig5: pd.DataFrame, best_drop: float) -> plt.Figure:
    """Private test error against epsilon at drop probability ``best_drop``.

    ``fig5`` holds one row per finished run of Figure 5 (its final round).
    """
    return error_vs_parameter([
        ("epsilon", fig5.assign(setting=f"private, tau=1, P_drop={best_drop:g}"), "epsilon"),
    ], log_x=[True])
