"""Read-outs of the PADPFL runs and the claims of Figures 2-9, evaluated in code.

Tables of the setup and the scenarios, the noise the paper's formulas prescribe,
the final losses and their summary, the privacy accounting of the clients'
uploads, and :func:`evaluate`, which judges every claim of the chapter on the
seed-mean final training loss.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fedlib.claims import Claim, ClaimSheet
from fedlib.papers.padpfl.experiment import (
    DELTA,
    EPSILONS,
    EQUAL,
    SCENARIOS,
    PadpflSetup,
    run_seeds,
)
from fedlib.privacy import epsilon as exact_epsilon
from fedlib.privacy.calibration import classic_gaussian_c, padpfl_client_sigma


def setup_table(setup: PadpflSetup, scale: str, seed: int) -> pd.DataFrame:
    """The settings of this build, one row per setting (the inferred ones marked)."""
    return pd.DataFrame({
        "tier": [scale],
        "seeds": [", ".join(map(str, run_seeds(setup, seed)))],
        "rounds T": [setup.rounds],
        "hidden width (inferred)": [setup.hidden],
        "local steps (inferred)": [setup.local_steps],
        "mu (inferred)": [setup.mu],
        "clipping bound B (inferred)": [setup.clip],
        "learning rate": [setup.lr],
        "small R (inferred)": [setup.small_exposures],
        "clients per part": [", ".join(f"{s}: {spec.clients}" for s, spec in SCENARIOS.items())],
    }).T.rename(columns={0: ""})


def scenario_table() -> pd.DataFrame:
    """The scenarios (the paper's Table I), with the assignments and private runs compared."""
    return pd.DataFrame([
        {"scenario": s, "what differs": spec.description,
         "examples per client": " / ".join(map(str, spec.samples)),
         "densities": " / ".join(f"{d:g}" for d in spec.densities)
         + ("" if spec.late_densities is None
            else " then " + " / ".join(f"{d:g}" for d in spec.late_densities)),
         "assignments (non-private)": ", ".join(spec.assignments),
         "private runs": f"{spec.private_assignment} at eps 5 and 20; 1-1-1 at eps 20"}
        for s, spec in SCENARIOS.items()
    ]).set_index("scenario")


def noise_table(runs: pd.DataFrame) -> pd.DataFrame:
    """sigma_C and the round-1 sigma_S of every private run, per scenario, R and assignment."""
    noise = (runs[runs["round"] == 1].dropna(subset=["epsilon"])
             .groupby(["scenario", "exposures", "assignment", "epsilon"])
             [["client_sigma", "server_sigma"]].first().reset_index())
    noise["exposures"] = noise["exposures"].astype(int)
    return noise.rename(columns={"exposures": "R", "client_sigma": "sigma_C",
                                 "server_sigma": "sigma_S (round 1)"})


def curve_label(row: pd.Series) -> str:
    """Legend label of a run: assignment, and epsilon when private."""
    if pd.isna(row["epsilon"]):
        return f"{row['assignment']}, non-private"
    return f"{row['assignment']}, eps={row['epsilon']:g}"


def final_losses(runs: pd.DataFrame) -> pd.DataFrame:
    """Loss at the last round per run, with the run's labels."""
    last = runs[runs["round"] == runs["round"].max()]
    return last[["scenario", "seed", "assignment", "epsilon", "exposures", "train_loss",
                 "test_accuracy"]].reset_index(drop=True)


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Final loss (mean and range over seeds) and final test accuracy (mean) per scenario,
    R ("-" when non-private) and run label, rounded to three decimals."""
    finals = final_losses(runs)
    return (finals.assign(label=finals.apply(curve_label, axis=1),
                          R=finals["exposures"].map(lambda r: "-" if pd.isna(r) else f"{r:g}"))
            .groupby(["scenario", "R", "label"])
            .agg(final_loss=("train_loss", "mean"), spread=("train_loss", np.ptp),
                 test_accuracy=("test_accuracy", "mean"))
            .round(3))


def _select(frame: pd.DataFrame, scenario: str, assignment: str, epsilon: float | None,
            exposures: int | None) -> pd.DataFrame:
    sel = frame[(frame["scenario"] == scenario) & (frame["assignment"] == assignment)]
    sel = sel[sel["epsilon"].isna()] if epsilon is None else sel[sel["epsilon"] == epsilon]
    if exposures is not None:
        sel = sel[sel["exposures"] == exposures]
    return sel


def _mean_final(finals: pd.DataFrame, scenario: str, assignment: str,
                epsilon: float | None = None, exposures: int | None = None) -> tuple[float, str]:
    sel = _select(finals, scenario, assignment, epsilon, exposures)["train_loss"]
    if sel.empty:
        raise KeyError(f"no runs for {scenario} {assignment} eps={epsilon} R={exposures}")
    spread = f"{sel.mean():.3f} [{sel.min():.3f}, {sel.max():.3f}]"
    return float(sel.mean()), spread


def evaluate(runs: pd.DataFrame, setup: PadpflSetup, scale: str) -> list[Claim]:
    """Evaluate the claims of Figures 2-9 on the seed-mean final training loss.

    Private claims are judged at R = T, the reading in which every upload is
    exposed (the paper's formulas then add no server noise); the evidence also
    gives the small-R runs.

    Parameters
    ----------
    runs
        The runs of every scenario (one row per run and round), as ``experiment.run``
        returns them.
    setup
        The tier the runs come from (its T and small R).
    scale
        The tier's name, recorded with each claim.
    """
    finals = final_losses(runs)
    big, small = setup.rounds, setup.small_exposures
    high, low = max(EPSILONS), min(EPSILONS)
    sheet = ClaimSheet("padpfl", scale)

    def nonprivate_ranking(scenario: str) -> list[tuple[str, float, str]]:
        spec = SCENARIOS[scenario]
        rows = [(a, *_mean_final(finals, scenario, a)) for a in spec.assignments]
        return sorted(rows, key=lambda r: r[1])

    def ranking_text(rows: list[tuple[str, float, str]]) -> str:
        return "; ".join(f"{a}: {s}" for a, _, s in rows)

    # Figure 2 (S1, non-private).
    rows = nonprivate_ranking("S1")
    sheet.add("fig2-equal-worst", rows[-1][0] == EQUAL,
              "S1 non-private: equal impact factors give the highest final loss of the "
              "assignments",
              "final loss mean [min, max] over seeds, best first: " + ranking_text(rows))
    sheet.add("fig2-012-best", rows[0][0] == "0-1-2",
              "S1 non-private: '0-1-2' gives the lowest final loss",
              "best: " + rows[0][0] + "; " + ranking_text(rows))

    # Private comparisons shared by Figures 3, 5, 7, 9.
    def private_pair(scenario: str, exposures: int) -> tuple[float, float, float, str]:
        a = SCENARIOS[scenario].private_assignment
        lo, lo_s = _mean_final(finals, scenario, a, low, exposures)
        hi, hi_s = _mean_final(finals, scenario, a, high, exposures)
        eq, eq_s = _mean_final(finals, scenario, EQUAL, high, exposures)
        text = (f"R={exposures}: {a} eps={low:g} {lo_s}, {a} eps={high:g} {hi_s}, "
                f"equal eps={high:g} {eq_s}")
        return lo, hi, eq, text

    def both(scenario: str) -> tuple[tuple[float, float, float], str]:
        lo, hi, eq, text_big = private_pair(scenario, big)
        _, _, _, text_small = private_pair(scenario, small)
        return (lo, hi, eq), text_big + " | " + text_small

    (lo, hi, eq), text = both("S1")
    sheet.add("fig3-eps20-below-eps5", hi < lo,
              "S1 private, p = (0, 1/60, 1/30): the final loss at eps=20 is below that at eps=5",
              text)
    sheet.add("fig3-equal-eps20-worse-than-weighted-eps5", eq > lo,
              "S1 private: equal factors at eps=20 end above the weighted run at eps=5", text)

    # Figure 4 (S2, non-private).
    rows = nonprivate_ranking("S2")
    sheet.add("fig4-021-best", rows[0][0] == "0-2-1",
              "S2 non-private: '0-2-1' gives the lowest final loss", ranking_text(rows))
    sheet.add("fig4-equal-poor", [r[0] for r in rows].index(EQUAL) >= len(rows) - 2,
              "S2 non-private: equal factors are among the two worst assignments",
              ranking_text(rows))

    # Figure 5 (S2, private).
    (lo, hi, eq), text = both("S2")
    sheet.add("fig5-weighted-beats-equal", hi < eq,
              "S2 private at eps=20: p = (0, 2/75, 1/75) ends below equal factors", text)

    # Figure 6 (S3, non-private).
    rows = nonprivate_ranking("S3")
    order = [r[0] for r in rows]
    sheet.add("fig6-weight-on-large-clients", order == ["1-3-5", "1-1-1", "5-3-1"],
              "S3 non-private: the more weight on the clients with more data, the lower the "
              "final loss (1-3-5 < 1-1-1 < 5-3-1)", ranking_text(rows))

    # Figure 7 (S3, private).
    (lo, hi, eq), text = both("S3")
    sheet.add("fig7-135-beats-equal-eps20", hi < eq,
              "S3 private at eps=20: 1:3:5 factors end below equal factors, although their "
              "aggregate noise is larger", text)

    # Figure 8 (S4, non-private).
    rows = nonprivate_ranking("S4")
    area = {}
    for a in SCENARIOS["S4"].assignments:
        sel = _select(runs, "S4", a, None, None)
        area[a] = float(sel.groupby("seed")["train_loss"].mean().mean())
    fastest = min(area, key=area.get)
    sheet.add("fig8-adaptive-best", rows[0][0] == "adaptive" and fastest == "adaptive",
              "S4 non-private: adaptive factors (heaviest on the slightly noisy part) give the "
              "lowest final loss and the lowest mean loss over the rounds",
              ranking_text(rows) + "; mean over rounds: "
              + ", ".join(f"{a}: {v:.3f}" for a, v in area.items()))

    # Figure 9 (S4, private, adaptive).
    (lo, hi, eq), text = both("S4")
    start = float(runs[(runs["scenario"] == "S4") & (runs["round"] == 0)]["train_loss"].mean())
    sheet.add("fig9-eps20-below-eps5", hi < lo,
              "S4 private, adaptive factors: the final loss at eps=20 is below that at eps=5",
              text)
    sheet.add("fig9-adaptive-converges", hi < start and lo < start,
              "S4 private, adaptive factors: the loss ends below its starting value at both "
              "epsilons",
              f"start {start:.3f}; " + text)
    return sheet.claims


def accounting_table(
    scenario: str, setup: PadpflSetup, exposures: int, epsilon: float
) -> pd.DataFrame:
    """Per client part: the paper's epsilon and what exact accountants give.

    Each upload is a Gaussian mechanism of sensitivity 2B/m_i (the paper's
    bound) and noise sigma_C, i.e. noise multiplier sigma_C m_i / (2B). The
    paper composes the classic bound linearly over R exposures; the exact
    accountants compose the same mechanism over R exposures and over all T
    uploads.
    """
    spec = SCENARIOS[scenario]
    samples = [math.ceil(s / setup.sample_divisor) for s in spec.samples]
    min_m = min(samples)
    clip = setup.clip
    sigma_c = padpfl_client_sigma(clip, exposures, min_m, epsilon, DELTA)
    rows = []
    for part, m in enumerate(samples):
        multiplier = sigma_c * m / (2 * clip)
        per_upload = 2 * clip * classic_gaussian_c(DELTA) / (m * sigma_c)
        rows.append({
            "part": part + 1,
            "examples per client": m,
            "sigma_C": sigma_c,
            "noise multiplier": multiplier,
            "paper: eps per upload": per_upload,
            "paper: eps (R uploads, linear)": per_upload * exposures,
            f"PLD: eps over R={exposures}": exact_epsilon(multiplier, 1.0, exposures, DELTA,
                                                          accountant="pld"),
            f"RDP: eps over R={exposures}": exact_epsilon(multiplier, 1.0, exposures, DELTA,
                                                          accountant="rdp"),
            f"PLD: eps over T={setup.rounds}": exact_epsilon(multiplier, 1.0, setup.rounds, DELTA,
                                                         accountant="pld"),
        })
    return pd.DataFrame(rows)


def accounting(setup: PadpflSetup, scenario: str = "S3") -> pd.DataFrame:
    """:func:`accounting_table` at R = T and at the small R, each at every epsilon, stacked
    with columns ``R`` and ``epsilon``."""
    return pd.concat([
        accounting_table(scenario, setup, exposures, eps).assign(R=exposures, epsilon=eps)
        for exposures in dict.fromkeys((setup.rounds, setup.small_exposures))
        for eps in EPSILONS
    ], ignore_index=True)


def accounting_note(table: pd.DataFrame) -> str:
    """What the :func:`accounting` table says, as Markdown: the per-upload budget the paper's
    bound is applied at for the smallest clients (part 1)."""
    smallest = table[table["part"] == 1]
    per_upload = {(int(r.R), r.epsilon): r["paper: eps per upload"]
                  for _, r in smallest.iterrows()}
    valid = [f"R={r}, eps={e:g}: {v:.2f}" for (r, e), v in per_upload.items()]
    return (
        "Clients with more data than the smallest get more noise than their own sensitivity "
        "needs ($\\sigma_C$ is set by $\\min_j m_j$), so their exact $\\varepsilon$ is far "
        "below the budget. For the smallest clients, the per-upload budget the paper's bound "
        "is applied at is " + "; ".join(valid) + " (the bound is only proven below 1). "
        "Where all $T$ uploads are observed and $R<T$, the exact guarantee is much weaker "
        "than the $\\varepsilon$ the run is labelled with."
    )
