"""The PFA chapter's verdict-change notes: a history in words, with every number they show
read from the page's claims when rendered, and only about claims the chapter has."""

from __future__ import annotations

import re

import pytest

from fedlib.papers.pfa import claims as pfa_claims
from fedlib.papers.pfa import notes as pfa_notes
from fedlib.verdicts.claims import Claim, verdict_changes

MEASURED = re.compile(
    r"\d*\.\d+"                                      # a decimal: 0.805, .5
    r"|\[\s*[-+]?[\d.]+\s*,\s*[-+]?[\d.]+\s*\]"      # an interval: [-0.063, 0.032]
    r"|\d+(?:\.\d+)?\s*%")                           # a percentage
"""A number a note may not write by hand: one with a decimal point, an interval, a
percentage. Whole numbers that are facts of the design (seeds, k, budget files, figure
numbers, the declared margins in points) are not matched."""

CLAIM_ID = re.compile(r"\bfig\d+[a-z]?-[a-z0-9+-]*[a-z0-9+]")


def _templates() -> dict[str, str]:
    """Every text of the module written by hand, by name."""
    texts = {"_ONE_REPEAT": pfa_notes._ONE_REPEAT, "_RECOMPUTED": pfa_notes._RECOMPUTED,
             "_FIG4_RECOMPUTED": pfa_notes._FIG4_RECOMPUTED,
             "_OWN_NOISE": pfa_notes._OWN_NOISE}
    for name in ("_PAPER_CHANGES", "_QUICK_CHANGES", "VERDICT_CHANGES", "TIER_NOTES"):
        texts.update({f"{name}[{k}]": v for k, v in getattr(pfa_notes, name).items()})
    return texts


def _claims(evidence: str = "x 0.123 [0.045, 0.201] (n=5 paired seeds)", scale="quick",
            status="INCONCLUSIVE") -> list[Claim]:
    return [Claim(paper="pfa", claim_id=claim_id, status=status, text=s.text,
                  evidence=evidence, scale=scale)
            for claim_id, s in pfa_claims.STATEMENTS.items()]


@pytest.mark.parametrize("text", ["0.805 against 0.770", "-0.016 [-0.063, 0.032]",
                                  "[1, 2]", "about 8.5 CPU-hours", "90%", "shrinks by .29"])
def test_the_pattern_finds_hand_written_numbers(text):
    assert MEASURED.search(text)


@pytest.mark.parametrize("text", ["k=1 - k=256", "five seeds", "seeds 1 to 4",
                                  "the 2-point margin", "Figure 3.", "seed 10, MixGauss2"])
def test_the_pattern_leaves_facts_of_the_design(text):
    assert not MEASURED.search(text)


def test_no_note_writes_a_measured_number_by_hand():
    found = {name: MEASURED.findall(text) for name, text in _templates().items()}
    assert not {name: hits for name, hits in found.items() if hits}, (
        "a note quotes a number by hand: say it in words, or read it from the claims in "
        "verdict_changes_notes")


def test_every_note_and_every_claim_it_names_is_the_chapters():
    ids = set(pfa_claims.STATEMENTS)
    assert set(pfa_notes.VERDICT_CHANGES) <= ids
    assert set(pfa_notes.TIER_NOTES) <= ids
    named = {m for text in _templates().values() for m in CLAIM_ID.findall(text)}
    assert named and named <= ids, sorted(named - ids)


def test_the_history_keeps_the_verdicts_in_words():
    notes = pfa_notes.VERDICT_CHANGES
    assert set(pfa_notes._QUICK_CHANGES) <= set(pfa_notes._PAPER_CHANGES)
    assert notes["fig3-ordering"].startswith("Paper: FAILS -> NOT-RUN: one repeat")
    assert "Quick: FAILS -> INCONCLUSIVE -> FAILS" in notes["fig3-ordering"]
    assert "each client's own noise stream" in notes["fig8-pfa-best"]
    assert all(re.search(r"HOLDS|FAILS|INCONCLUSIVE|NOT-RUN|NOT-TESTABLE", text)
               for text in notes.values())


def test_notes_are_completed_from_the_claims_they_are_shown_with():
    notes = pfa_notes.verdict_changes_notes(_claims())
    assert set(notes) == set(pfa_notes.VERDICT_CHANGES)
    for claim_id, note in notes.items():
        history = pfa_notes.VERDICT_CHANGES[claim_id]
        assert note.startswith(history)
        now = note[len(history):]
        assert now == (" Now, at the quick tier of this page: INCONCLUSIVE "
                       "(x 0.123 [0.045, 0.201] (n=5 paired seeds)).")
        # Every number the note shows is the evidence's.
        assert MEASURED.findall(note) == MEASURED.findall(now)
    text = verdict_changes(_claims(), notes)
    assert "- `fig13-few-directions`: Paper: HOLDS -> NOT-RUN" in text
    assert "0.123 [0.045, 0.201]" in text


def test_a_long_evidence_is_left_to_the_claims_table():
    long = " | ".join(["mnist-logr PFA vs WeiAvg: HOLDS (difference 0.200 [0.190, 0.210])"]
                      * 20)
    notes = pfa_notes.verdict_changes_notes(_claims(long, scale="paper", status="HOLDS"))
    note = notes["fig3-ordering"]
    assert note.endswith("Now, at the paper tier of this page: HOLDS (the claims table "
                         "gives its evidence).")
    assert not MEASURED.search(note)


def test_a_claim_the_page_lacks_gets_no_note():
    claims = [c for c in _claims() if c.claim_id != "fig8-pfa-best"]
    notes = pfa_notes.verdict_changes_notes(claims)
    assert "fig8-pfa-best" not in notes and "fig3-ordering" in notes
    verdict_changes(claims, notes)  # no note on a claim the page does not have
