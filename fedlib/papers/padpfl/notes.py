"""PADPFL: why the chapter's verdicts moved, in words whose every number is read from the
runs the page is built from (:func:`verdict_notes`).

The notes compare each claim's verdict with the reading it replaced, and both readings
are computed here from the same runs: the private claims were judged at R = T (now the
ablation) and are judged at the tier's R < T; '0-1-2' was compared with equal factors
alone and is now the paper's "optimal ratio" over the five assignments; '0-2-1' now meets
the open-edge rule; the convergence of Figure 9's adaptive runs is now a finding of the
companion. No note quotes a number that is not computed from the runs it is shown with.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedlib.papers.padpfl import claims as pc
from fedlib.papers.padpfl import studies
from fedlib.papers.padpfl.experiment import EQUAL, SCENARIOS, PadpflSetup
from fedlib.verdicts.claims import Claim
from fedlib.verdicts.compare import Comparison, Verdict, best_of, difference


def _arms_text(runs: pd.DataFrame, finals: pd.DataFrame, claim: pc.PrivateClaim,
               exposures: int) -> str:
    """Both arms' mean final loss and test accuracy at R = ``exposures``, and the initial
    loss, e.g. ``0-1-2 eps=20 1.735 (accuracy 0.599), 0-1-2 eps=5 2.348 (0.099); initial
    loss 2.316``."""
    parts = []
    for k, arm in enumerate((claim.a, claim.b)):
        loss = pc.arm_values(finals, claim.scenario, *arm, exposures).mean()
        accuracy = pc.arm_values(finals, claim.scenario, *arm, exposures,
                                 "test_accuracy").mean()
        parts.append(f"{pc._label(*arm)} {loss:.3f} ({'accuracy ' if k == 0 else ''}"
                     f"{accuracy:.3f})")
    start = float(pc.start_loss(runs, claim.scenario).mean())
    return ", ".join(parts) + f"; initial loss {start:.3f}"


def _reading(verdict: Verdict) -> str:
    """A verdict in one clause: its status and its brief (or evidence)."""
    return f"{verdict.status} ({verdict.brief or verdict.evidence})"


def _private_notes(runs: pd.DataFrame, finals: pd.DataFrame, setup: PadpflSetup
                   ) -> dict[str, str]:
    r, t = setup.small_exposures, setup.rounds
    at_r = pc.exposure_readings(runs, setup, r)
    at_t = pc.exposure_readings(runs, setup, t)
    notes = {}
    for claim in pc.private_claims():
        before, now = at_t[claim.claim_id], at_r[claim.claim_id]
        notes[claim.claim_id] = (
            f"{before.status} -> {now.status}: judged at R = T = {t} before, where the server "
            f"adds no noise (now the ablation): {_reading(before)}; final loss (and test "
            f"accuracy): {_arms_text(runs, finals, claim, t)}. Judged at R = {r}, where "
            f"the server adds noise as the paper says: {_reading(now)}; "
            f"{_arms_text(runs, finals, claim, r)}.")
    before, now = at_t[pc.CONVERGES], at_r[pc.CONVERGES]
    adaptive = SCENARIOS["S4"].private_assignment
    ends = ", ".join(
        f"eps={e:g} {pc.arm_values(finals, 'S4', adaptive, e, r).mean():.3f}"
        for e in sorted(finals["epsilon"].dropna().unique()))
    notes[pc.CONVERGES] = (
        f"a claim of the paper before, now a finding of the companion: the paper's text "
        f"states no such claim (its Figure 9 shows the curves). {before.status} at R = T = "
        f"{t} -> {now.status} at R = {r}, where the adaptive runs end at {ends} against an "
        f"initial loss of {float(pc.start_loss(runs, 'S4').mean()):.3f}.")
    return notes


def _fig2_note(runs: pd.DataFrame, finals: pd.DataFrame, setup: PadpflSetup,
               claims: dict[str, Claim]) -> str:
    arms = pc._nonprivate(finals, "S1")
    why = pc.loss_why(setup, "S1")
    pair = Comparison(pc.LOSS, "0-1-2", EQUAL, "less", pc.LOSS_MARGIN, why).judge(
        arms["0-1-2"], arms[EQUAL], trivial=pc.initial_loss(runs, "S1"))
    means = {a: float(v.mean()) for a, v in arms.items()}
    best = min(means, key=lambda a: means[a])
    edge = pc.open_edge(best, list(arms))
    placed = ("enclosed by the grid or a natural bound" if edge is None
              else f"on an open edge of the ratio grid ({edge} leaves it)")
    against = ("'0-1-2' itself" if best == "0-1-2" else
               f"'0-1-2' minus '{best}': {difference(arms['0-1-2'], arms[best]).text()}")
    return (f"{pair.status} -> {claims['fig2-012-best'].status}, restated (below): judged "
            f"before on '0-1-2' against equal factors alone, {_reading(pair)}. Of the five "
            f"assignments the lowest mean final loss is '{best}' ({means[best]:.3f}), "
            f"{placed}; {against}, margin {pc.LOSS_MARGIN:g}.")


def _fig4_note(finals: pd.DataFrame, setup: PadpflSetup, claims: dict[str, Claim]) -> str:
    arms = pc._nonprivate(finals, "S2")
    plain = best_of(pc.LOSS, "0-2-1", arms, direction="less", margin=pc.LOSS_MARGIN,
                    why=pc.loss_why(setup, "S2"))
    means = pd.Series({a: float(v.mean()) for a, v in arms.items()}).sort_values()
    best = str(means.index[0])
    edge = pc.open_edge(best, list(arms))
    placed = ("enclosed by the grid or a natural bound" if edge is None
              else f"on an open edge of the ratio grid ({edge} leaves it)")
    three = means.iloc[:3]
    return (f"{plain.status} -> {claims['fig4-021-best'].status}, now with the open-edge "
            f"rule: the lowest mean final loss is '{best}' ({means.iloc[0]:.3f}), {placed}. "
            f"The three best assignments ({', '.join(map(repr, three.index))}) end within "
            f"{three.iloc[-1] - three.iloc[0]:.3f} nats of each other, inside the "
            f"{pc.LOSS_MARGIN:g} margin: '0-2-1' minus '{best}' is "
            f"{difference(arms['0-2-1'], arms[best]).text()}"
            + (", a tie that no point beyond the edge can turn into a win for '0-2-1'."
               if edge is not None and claims['fig4-021-best'].status == "FAILS" else "."))


def _fig6_note(finals: pd.DataFrame, claims: dict[str, Claim]) -> str:
    arms = pc._nonprivate(finals, "S3")
    means = np.array([float(v.mean()) for v in arms.values()])
    return (f"{claims['fig6-weight-on-large-clients'].status} as a tie: the three "
            f"assignments end within {means.max() - means.min():.3f} nats of each other "
            f"(1-3-5 minus 1-1-1: {difference(arms['1-3-5'], arms[EQUAL]).text()}), inside "
            f"the {pc.LOSS_MARGIN:g} margin, rather than in the claimed order.")


def verdict_notes(claims: Sequence[Claim], runs: pd.DataFrame, setup: PadpflSetup
                  ) -> dict[str, str]:
    """Claim id -> how its verdict moved and why, every number computed from ``runs``
    (the runs ``claims`` were judged on, :func:`fedlib.papers.padpfl.claims.evaluate`).

    Notes are given for the claims of the paper's figures whose reading changed (the
    private claims, judged at R = T before; '0-1-2' and '0-2-1', now read alike as best
    settings; the convergence finding) and for fig6, whose failure is a tie. With one
    seed no claim is judged, and there is no note."""
    by_id = {c.claim_id: c for c in claims}
    if runs["seed"].nunique() < 2:
        return {}
    finals = pc.final_losses(runs)
    notes = {"fig2-012-best": _fig2_note(runs, finals, setup, by_id),
             "fig4-021-best": _fig4_note(finals, setup, by_id),
             "fig6-weight-on-large-clients": _fig6_note(finals, by_id)}
    if setup.small_exposures < setup.rounds:
        notes.update(_private_notes(runs, finals, setup))
    return {k: notes[k] for k in by_id if k in notes}


def regime_notes(claims: Sequence[Claim], search: studies.RegimeSearch) -> dict[str, str]:
    """Claim id -> why the findings judged on the regime search's runs (whether S1's private
    runs learn there, and the private claims judged again there) read as they do now: at
    the point the chapter's tuning step chooses. Every number and verdict is read from
    ``search`` and ``claims``."""
    best = search.best
    edges = search.open_edges()
    placed = (f"on an open edge ({'; '.join(edges)}), so a run that does not learn there "
              "decides nothing" if edges else "every factor an optimum along its axis")
    why = (f"read at the point the tuning step chooses on validation images over "
           f"{len(studies.REGIME_BUDGET.seeds)} seeds no verdict reads (hidden width "
           f"{best['hidden']}, {best['local_steps']} local steps, B = {best['clip']:g}; mean "
           f"private validation accuracy {search.choice['val_accuracy']:.3f}), {placed}. "
           "The first form of the search scored one seed on the test images, moved each "
           "factor alone and combined the best values: it chose between points closer "
           "than one seed's noise, on the images the verdicts read, and the claims were "
           "judged at its point.")
    return {c.claim_id: f"{c.status} now, {why}" for c in claims
            if c.claim_id.startswith("regime-private-learns")
            or c.claim_id.endswith("-in-regime")}
