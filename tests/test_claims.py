"""Claims files and the scorecard."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from fedlib.render.scorecard import scorecard_markdown
from fedlib.verdicts.claims import (
    PAPERS,
    Claim,
    ClaimSheet,
    ScorecardError,
    checked_claims,
    scorecard_text,
    write_claims,
)


def _put(sheet: ClaimSheet, claim_id: str, holds: bool | None, text: str,
         evidence: str) -> None:
    """An exact claim (True/False) or one not run (None)."""
    if holds is None:
        sheet.not_run(claim_id, text, evidence)
    else:
        sheet.exact(claim_id, holds, text, evidence)


def _every_paper(folder, scale: str = "quick") -> None:
    for paper in PAPERS:
        sheet = ClaimSheet(paper, scale)
        _put(sheet, "a", True, f"{paper} first claim", "1.0")
        _put(sheet, "b", paper != "pfa", f"{paper} second claim", "2.0")
        _put(sheet, "c", None, f"{paper} third claim", "no data")
        write_claims(folder / f"{paper}.json", sheet.claims)


COUNTS = "{} hold, {} fail, 0 inconclusive, 0 not testable, {} not run"


def _scorecard(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fedlib.render.scorecard", *map(str, args)],
                          capture_output=True, text=True)


def test_scorecard_lines_name_the_tier_and_count_per_tier(tmp_path) -> None:
    _every_paper(tmp_path)
    write_claims(tmp_path / "pfa.json", [Claim("pfa", "z", "HOLDS", "at scale", "3", "",
                                                "paper")])
    claims = checked_claims(tmp_path)
    text = scorecard_text(claims)
    assert text.splitlines()[:3] == [
        "hu2020 a quick HOLDS hu2020 first claim",
        "hu2020 b quick HOLDS hu2020 second claim",
        "hu2020 c quick NOT-RUN hu2020 third claim",
    ]
    assert "pfa z paper HOLDS at scale" in text.splitlines()
    assert text.splitlines()[-1] == (
        f"paper claims at quick: {COUNTS.format(8, 0, 4)}; "
        f"paper claims at paper: {COUNTS.format(1, 0, 0)}")
    page = scorecard_markdown(claims)
    assert 'id="claim-ppsgd-b"' in page and '<span class="verdict holds">HOLDS</span>' in page
    result = _scorecard(tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == text


@pytest.mark.parametrize(("damage", "message"), [
    ("empty", "no claims from hu2020, dpditto, padpfl, ppsgd, pfa"),
    ("missing", "no claims from padpfl"),
    ("stray", "stray claims files ppsgd (copy).json"),
    ("twice", "ppsgd.json lists claims twice: a"),
    ("foreign", "pfa.json holds claims of ppsgd"),
    ("broken", "hu2020.json is not a claims file"),
])
def test_a_scorecard_that_could_mislead_fails(tmp_path, damage, message) -> None:
    import json

    if damage != "empty":
        _every_paper(tmp_path)
    if damage == "missing":
        (tmp_path / "padpfl.json").unlink()
    elif damage == "stray":
        (tmp_path / "ppsgd (copy).json").write_bytes((tmp_path / "ppsgd.json").read_bytes())
    elif damage == "twice":
        items = json.loads((tmp_path / "ppsgd.json").read_text())
        (tmp_path / "ppsgd.json").write_text(json.dumps(items + items[:1]))
    elif damage == "foreign":
        (tmp_path / "pfa.json").write_bytes((tmp_path / "ppsgd.json").read_bytes())
    elif damage == "broken":
        (tmp_path / "hu2020.json").write_text("{not json")
    with pytest.raises(ScorecardError, match=re.escape(message)):
        checked_claims(tmp_path)
    result = _scorecard(tmp_path)
    assert result.returncode == 1 and message in result.stderr and not result.stdout


def test_claims_older_than_their_notebooks_last_run_are_stale(tmp_path) -> None:
    import json
    import os

    claims, runs = tmp_path / "claims", tmp_path / "runs"
    claims.mkdir()
    (runs / "tmp").mkdir(parents=True)
    _every_paper(claims)
    for paper in PAPERS:  # the claims were written at 07:59 UTC
        os.utime(claims / f"{paper}.json", (1_800_000_000 - 60, 1_800_000_000 - 60))
    def run(path, started: str) -> None:
        path.write_text(json.dumps({"metadata": {"papermill": {"start_time": started}}}))
    for paper in PAPERS:  # each notebook's successful run started before its claims
        run(runs / f"{paper}.ipynb", "2027-01-15T07:00:00+00:00")
    assert len(checked_claims(claims, runs)) == 15
    run(runs / "tmp" / "pfa.out.ipynb", "2027-01-15T09:00:00+00:00")  # a later run failed
    with pytest.raises(ScorecardError, match="pfa.json is stale.*failed or did not finish"):
        checked_claims(claims, runs)


def test_claims_are_validated(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown paper id"):
        Claim("bietti", "a", "HOLDS", "t", "e")
    with pytest.raises(ValueError, match="status"):
        Claim("ppsgd", "a", "MAYBE", "t", "e")
    with pytest.raises(ValueError, match="duplicate claim ids"):
        write_claims(tmp_path / "x.json", [Claim("ppsgd", "a", "HOLDS", "t", "e")] * 2)


def test_missing_claims_folder_is_a_clear_error(tmp_path) -> None:
    result = _scorecard(tmp_path / "none")
    assert result.returncode == 1
    assert "make rebuild-all" in result.stderr


def test_a_claim_sheet_spells_every_verdict_one_way() -> None:
    from fedlib.verdicts.compare import Comparison

    sheet = ClaimSheet("dpditto", "smoke")
    sheet.exact("x", True, "t", "e")
    sheet.exact("y", np.bool_(False), "t", "e", paper_value="32.71%")
    sheet.not_run("z", "t", "not run offline")
    tie = Comparison("accuracy", "A", "B", "greater", 0.01).judge(
        {0: 0.5, 1: 0.7, 2: 0.6}, {0: 0.6, 1: 0.5, 2: 0.7})
    sheet.judged("w", tie, "t", context="MNIST", origin="companion", restated="was: A > B")
    assert [(c.status, c.scale, c.paper) for c in sheet] == [
        ("HOLDS", "smoke", "dpditto"), ("FAILS", "smoke", "dpditto"),
        ("NOT-RUN", "smoke", "dpditto"), ("INCONCLUSIVE", "smoke", "dpditto")]
    assert sheet.claims[1].paper_value == "32.71%"
    assert sheet.claims[0].evidence == "exact (no randomness): e"
    w = sheet.claims[3]
    assert w.evidence.startswith("MNIST; the interval contains the margin; claim A - B")
    assert (w.origin, w.restated) == ("companion", "was: A > B")
    with pytest.raises(ValueError, match="already on the dpditto sheet"):
        sheet.exact("x", False, "t", "e")
    with pytest.raises(TypeError, match="holds must be a bool"):
        sheet.exact("v", 0.5, "t", "e")
    with pytest.raises(ValueError, match="origin"):
        sheet.exact("v", True, "t", "e", origin="reviewer")
    with pytest.raises(ValueError, match="unknown paper id"):
        ClaimSheet("bietti", "quick")
    with pytest.raises(ValueError, match="of paper 'pfa'"):
        sheet.extend([Claim("pfa", "w", "HOLDS", "t", "e")])


def test_scorecard_rows_link_to_the_figure_a_claim_is_about(tmp_path) -> None:
    import json as _json

    from fedlib.render.anchors import chapter_labels, claim_anchor

    notebook = tmp_path / "hu2020.ipynb"
    notebook.write_text(_json.dumps({"cells": [
        {"cell_type": "markdown", "source": ["```{glue:figure} x\n", ":name: fig-hu2020-2\n"]},
        {"cell_type": "markdown", "source": ["```{glue:figure} y\n:name: fig-hu2020-34\n"]},
        {"cell_type": "code", "source": [":name: fig-hu2020-9"]},
    ]}))
    labels = chapter_labels(notebook)
    assert labels == {"fig-hu2020-2", "fig-hu2020-34"}
    claim = lambda claim_id: Claim("hu2020", claim_id, "HOLDS", "t", "e")  # noqa: E731
    assert claim_anchor(claim("fig2-private-plateaus-above"), labels) == "fig-hu2020-2"
    assert claim_anchor(claim("fig4-nonprivate-rises"), labels) == "fig-hu2020-34"
    assert claim_anchor(claim("fig5-error-falls"), labels) == "tab-hu2020-claims"
    assert claim_anchor(claim("headline-gains"), labels) == "tab-hu2020-claims"


def test_scorecard_page_summary_figure_and_rows(tmp_path) -> None:
    import pandas as pd

    from fedlib.render.scorecard import summary_figure

    _every_paper(tmp_path)
    claims = checked_claims(tmp_path)
    page = scorecard_markdown(claims)
    assert page.count('<div class="scorecard">') == 5
    assert '<span class="verdict fails">FAILS</span>' in page  # pfa's second claim
    assert ('<div class="evidence"><p><strong>quick:</strong> exact (no '
            "randomness): 2.0</p></div></details>") in page
    for status in ("HOLDS", "FAILS", "INCONCLUSIVE", "NOT-TESTABLE", "NOT-RUN"):
        assert f"<dt><span class=\"verdict {status.lower()}\">{status}</span></dt><dd>" in page
    summary_figure(claims, tmp_path / "summary.png")
    counts = pd.read_csv(tmp_path / "summary.csv")
    assert counts[["HOLDS", "FAILS", "NOT-RUN"]].sum().tolist() == [9, 1, 5]
    assert (tmp_path / "summary.png").read_bytes()[:4] == b"\x89PNG"


def test_the_published_tier_stands_beside_the_builds_own(tmp_path) -> None:
    from fedlib.verdicts.claims import stored_tier_claims

    _every_paper(tmp_path)
    claims = checked_claims(tmp_path)
    assert stored_tier_claims(tmp_path, claims) == []  # no stored tier rendered
    published = tmp_path / "published"
    published.mkdir()
    sheet = ClaimSheet("pfa", "paper")
    _put(sheet, "a", False, "pfa first claim", "0.5 at the paper's scale")
    _put(sheet, "b", True, "pfa second claim", "2.5")  # "c" is not evaluated at this tier
    write_claims(published / "pfa.json", sheet.claims)
    (published / "padpfl.missing").write_text("12 of 40 runs of padpfl are neither cached nor "
                                              "published\n")
    both = claims + stored_tier_claims(tmp_path, claims)
    text = scorecard_text(both).splitlines()
    assert text[text.index("pfa a quick HOLDS pfa first claim") + 1] == (
        "pfa a paper FAILS pfa first claim")
    assert "padpfl b paper NOT-RUN padpfl second claim" in text
    assert text[-2] == (f"paper claims at quick: {COUNTS.format(9, 1, 5)}; "
                        f"paper claims at paper: {COUNTS.format(1, 1, 13)}")
    assert text[-1] == "verdicts that flip between tiers: pfa a, pfa b"
    padpfl_paper = [c for c in both if c.paper == "padpfl" and c.scale == "paper"]
    assert {c.evidence for c in padpfl_paper} == {
        "the paper tier is not published: 12 of 40 runs of padpfl are neither cached nor "
        "published"}
    pfa_c = next(c for c in both if (c.paper, c.claim_id, c.scale) == ("pfa", "c", "paper"))
    assert (pfa_c.status, pfa_c.text) == ("NOT-RUN", "pfa third claim")
    assert pfa_c.evidence.startswith("not evaluated at the paper tier: its grid")
    assert {c.evidence for c in both if c.paper == "ppsgd" and c.scale == "paper"} == {
        "the paper tier was not rendered in this build"}
    page = scorecard_markdown(both)
    row = next(line for line in page.splitlines() if 'id="claim-pfa-a"' in line)
    assert row.count('class="verdict') == 2 and "flips between tiers" in row
    assert ("<p><strong>paper:</strong> exact (no randomness): 0.5 at the paper&#x27;s "
            "scale") in row
    assert (f"quick: {COUNTS.format(1, 1, 1)}; paper: {COUNTS.format(1, 1, 1)}; "
            "2 verdict(s) flip between tiers") in page
    result = _scorecard(tmp_path)
    assert result.returncode == 0 and result.stdout.strip().splitlines() == text


def test_tier_comparison_counts_agreement_and_explains_every_flip() -> None:
    from fedlib.verdicts.claims import tier_comparison

    def sheet(scale: str, verdicts: dict[str, bool | None]) -> list[Claim]:
        s = ClaimSheet("pfa", scale)
        for claim_id, holds in verdicts.items():
            _put(s, claim_id, holds, f"claim {claim_id}", "measured" if holds is not None
                 else "not run: no data")
        return s.claims

    quick = sheet("quick", {"a": True, "b": False, "c": True, "d": None})
    assert tier_comparison(quick, []) == ""
    same = sheet("paper", {"a": True, "b": False, "c": None, "d": None})
    text = tier_comparison(quick, same)
    assert text.startswith(f"At the paper tier: {COUNTS.format(1, 1, 2)}. Of "
                           "the 2 claims judged at both tiers, the quick and the paper tier "
                           "agree on 2, so scale decides none of their verdicts.")
    flips = sheet("paper", {"a": False, "b": True, "c": True, "d": True})
    text = tier_comparison(quick, flips, {"a": "the paper's rounds let the noise dominate"})
    assert "agree on 1; these flip:" in text
    assert ("- `a` (HOLDS at quick, FAILS at paper): the paper's rounds let the noise "
            "dominate") in text
    assert "- `b` (FAILS at quick, HOLDS at paper): not explained yet" in text
    assert "`c`" not in text and "`d`" not in text  # agreeing, or judged at one tier only
    unrun = [Claim(c.paper, c.claim_id, "NOT-RUN", c.text, "the paper tier is not published: "
                   "3 of 9 runs are missing", scale="paper") for c in quick]
    assert tier_comparison(quick, unrun) == (
        "This build shows no paper-tier verdict for this chapter: the paper tier is not "
        "published: 3 of 9 runs are missing.")
    repeats = [Claim(c.paper, c.claim_id, "NOT-RUN", c.text, f"one repeat: no spread; {c.text} "
                     "at length", scale="paper") for c in quick[:3]]
    repeats.append(Claim("pfa", "d", "NOT-RUN", "t", "no runs of B; more", scale="paper"))
    assert tier_comparison(quick, repeats) == (
        "This build shows no paper-tier verdict for this chapter: no runs of B (1 claims); "
        "one repeat: no spread (3 claims).")
    with pytest.raises(ValueError, match=r"tier notes name claims .*\['z'\]"):
        tier_comparison(quick, flips, {"z": "no such claim"})


def test_the_tallies_count_the_papers_claims_only_the_same_set_at_every_tier(tmp_path
                                                                          ) -> None:
    from fedlib.render.scorecard import summary_figure
    from fedlib.verdicts.claims import aligned_tiers

    quick, paper = ClaimSheet("pfa", "quick"), ClaimSheet("pfa", "paper")
    _put(quick, "a", True, "claim a", "1")
    quick.exact("mine", True, "derived here", "1", origin="companion")
    _put(paper, "a", False, "claim a", "2")
    _put(paper, "only-paper", True, "claim read at the paper tier only", "3")
    claims = aligned_tiers([*quick, *paper])
    filled = next(c for c in claims if (c.claim_id, c.scale) == ("only-paper", "quick"))
    assert filled.status == "NOT-RUN" and filled.evidence.startswith(
        "not evaluated at the quick tier")
    text = scorecard_text(claims).splitlines()
    assert text[-2] == (f"paper claims at quick: {COUNTS.format(1, 0, 1)}; paper claims at "
                        f"paper: {COUNTS.format(1, 1, 0)}; 1 findings of the companion "
                        "(not tallied)")
    assert "pfa mine quick HOLDS [companion finding] derived here" in text
    page = scorecard_markdown(claims)
    findings = page.index('<details class="companion-findings"><summary class="scorecard-group">'
                          "Findings of the companion (1, not tallied)</summary>")
    assert page.index('id="claim-pfa-mine"') > findings > page.index('id="claim-pfa-a"')
    # folded under their heading: the finding's row sits inside that closed <details>
    mine = page.index('id="claim-pfa-mine"')
    assert page.index("</div>\n</details>\n</div>", mine) > mine
    summary_figure(claims, tmp_path / "s.png")
    import pandas as pd

    assert pd.read_csv(tmp_path / "s.csv")["HOLDS"].tolist() == [1, 1]  # not the finding


@pytest.mark.parametrize("claim_id", ["<script>x</script>", 'a"b', "a b", "", "-a"])
def test_a_claim_id_with_markup_is_refused(claim_id: str) -> None:
    with pytest.raises(ValueError, match="claim_id must be a word"):
        Claim("pfa", claim_id, "HOLDS", "t", "e")


def test_claim_text_and_evidence_are_escaped_on_the_scorecard() -> None:
    claim = Claim("pfa", "a", "HOLDS", "<script>alert(1)</script>", "x < y & <b>",
                  paper_value="<i>", restated="<img src=x>")
    page = scorecard_markdown([claim])
    assert "<script>alert" not in page and "<b>" not in page and "<img" not in page
    assert page.count("<script") == 1  # the filter's own, nothing of the claim's
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "x &lt; y &amp; &lt;b&gt;" in page and "&lt;img src=x&gt;" in page


def test_an_asterisk_between_words_reads_as_written_and_emphasis_stays() -> None:
    """Two products such as alpha*Q in one note would otherwise set the text between them
    in italics; an asterisk already escaped, and emphasis meant as such, are kept."""
    from markdown_it import MarkdownIt

    from fedlib.verdicts.claims import literal_asterisks

    md = MarkdownIt()
    note = "alpha*Q = 0 ends below alpha*Q = inf; (a)*(b) and 2*3, a *stressed* word, **bold**"
    assert "<em>Q" in md.render(note)
    html = md.render(literal_asterisks(note))
    assert "alpha*Q = 0 ends below alpha*Q = inf; (a)*(b) and 2*3" in html
    assert "<em>stressed</em>" in html and "<strong>bold</strong>" in html
    assert literal_asterisks("alpha\\*Q") == "alpha\\*Q"


def test_verdict_changes_are_listed_with_restated_claims() -> None:
    from fedlib.verdicts.claims import verdict_changes

    sheet = ClaimSheet("padpfl", "quick")
    sheet.exact("a", True, "t", "e")
    sheet.exact("b", False, "t", "e", restated="was: against 0-0-1 too")
    text = verdict_changes(sheet.claims, {"a": "FAILS -> HOLDS: the tie is read over seeds",
                                          "b": "HOLDS -> FAILS: restated"})
    assert text.splitlines() == ["- `a`: FAILS -> HOLDS: the tie is read over seeds",
                                 "- `b`: HOLDS -> FAILS: restated",
                                 "- `b` restated: was: against 0-0-1 too"]
    assert verdict_changes([], {}) == "No verdict changed."
    products = verdict_changes(sheet.claims, {"a": "alpha*Q = 0 beats alpha*Q = inf, *twice*"})
    assert products.splitlines() == ["- `a`: alpha\\*Q = 0 beats alpha\\*Q = inf, *twice*",
                                     text.splitlines()[2]]
    with pytest.raises(ValueError, match=r"\['z'\]"):
        verdict_changes(sheet.claims, {"z": "no such claim"})


def test_a_damaged_claims_file_is_named_with_how_to_get_it_again(tmp_path) -> None:
    from fedlib.verdicts.claims import load_claims, read_claims, stored_tier_claims

    _every_paper(tmp_path)
    (tmp_path / "pfa.json").write_text('[{"paper": "pfa", "claim_')
    with pytest.raises(ScorecardError, match=r"pfa.json is not a claims file.*notebooks/pfa.py"):
        read_claims(tmp_path)
    (tmp_path / "pfa.json").write_text('{"paper": "pfa"}')
    with pytest.raises(ScorecardError, match="a list of claims was expected"):
        load_claims(tmp_path / "pfa.json")
    published = tmp_path / "published"
    published.mkdir()
    (published / "hu2020.json").write_text("not json")
    main = [Claim("hu2020", "a", "HOLDS", "t", "e", scale="quick")]
    with pytest.raises(ScorecardError, match="hu2020.json is not a claims file"):
        stored_tier_claims(tmp_path, main)


def test_a_claim_of_an_unknown_tier_is_refused() -> None:
    with pytest.raises(ValueError, match="scale must be a run tier"):
        Claim("pfa", "a", "HOLDS", "t", "e", scale="<b>huge</b>")


def test_an_interrupted_run_left_as_a_partial_notebook_makes_its_claims_stale(tmp_path) -> None:
    import json
    import os

    claims, runs = tmp_path / "claims", tmp_path / "runs"
    claims.mkdir()
    (runs / "tmp").mkdir(parents=True)
    _every_paper(claims)
    for paper in PAPERS:
        os.utime(claims / f"{paper}.json", (1_800_000_000, 1_800_000_000))
    (runs / "tmp" / "ppsgd.out.partial.ipynb").write_text(json.dumps(
        {"metadata": {"papermill": {"start_time": "2027-06-01T00:00:00+00:00"}}}))
    with pytest.raises(ScorecardError, match="ppsgd.json is stale"):
        checked_claims(claims, runs)


@pytest.mark.parametrize("left", ["tmp/ppsgd.out.partial.ipynb", "tmp/ppsgd.out.ipynb",
                                  "ppsgd.partial.ipynb", "ppsgd.ipynb"])
@pytest.mark.parametrize("content", [b'{\n "cells": [\n  {\n   "cell_type": "mark', b"",
                                     b"\xff\xfe", b"[]"],
                         ids=["cut short", "empty", "not text", "not a notebook"])
def test_a_notebook_of_a_run_that_cannot_be_read_makes_the_scorecard_refuse(
        tmp_path, left: str, content: bytes) -> None:
    """A build interrupted while papermill saved the notebook (a full disk) leaves it cut
    short: nothing says when that run started, so the claims may be of an earlier run."""
    import os

    claims, runs = tmp_path / "claims", tmp_path / "runs"
    claims.mkdir()
    (runs / "tmp").mkdir(parents=True)
    _every_paper(claims)
    for paper in PAPERS:  # written after every readable notebook's run
        os.utime(claims / f"{paper}.json", (1_900_000_000, 1_900_000_000))
    (runs / left).write_bytes(content)
    named = re.escape(str(runs / left))
    with pytest.raises(ScorecardError, match=rf"{named} cannot be read .*notebooks/ppsgd\.py "
                                             r"was cut short.*ppsgd\.json may hold the claims "
                                             r"of an earlier run"):
        checked_claims(claims, runs)
    result = _scorecard(claims, "--runs", runs)
    assert result.returncode == 1 and str(runs / left) in result.stderr and not result.stdout
    (runs / left).unlink()
    assert len(checked_claims(claims, runs)) == 15


def test_a_finding_stays_a_finding_at_a_tier_that_was_not_rendered(tmp_path) -> None:
    from fedlib.verdicts.claims import stored_tier_claims

    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "pfa.missing").write_text("3 of 9 runs are missing\n")
    mine = ClaimSheet("pfa", "quick")
    mine.exact("derived", True, "t", "e", origin="companion", restated="was: x")
    mine.exact("stated", True, "t", "e")
    stored = stored_tier_claims(tmp_path, mine.claims)
    assert [(c.claim_id, c.origin, c.restated) for c in stored] == [
        ("derived", "companion", "was: x"), ("stated", "paper", "")]


def test_a_chapter_whose_own_tier_is_not_stored_is_listed_from_its_stored_tier(
        tmp_path) -> None:
    from fedlib.verdicts.claims import stored_tier_claims

    _every_paper(tmp_path)
    (tmp_path / "pfa.json").unlink()
    (tmp_path / "pfa.missing").write_text("243 of 387 runs of pfa-heterogeneous are neither "
                                          "cached nor published\n")
    with pytest.raises(ScorecardError, match="no claims from pfa"):
        checked_claims(tmp_path)  # nothing stored at either tier: nothing to list
    published = tmp_path / "published"
    published.mkdir()
    sheet = ClaimSheet("pfa", "paper")
    _put(sheet, "a", False, "pfa first claim", "0.5 at the paper's scale")
    _put(sheet, "d", True, "pfa fourth claim", "4.0")
    write_claims(published / "pfa.json", sheet.claims)
    claims = checked_claims(tmp_path)
    pfa_quick = [c for c in claims if c.paper == "pfa"]
    assert [(c.claim_id, c.scale, c.status) for c in pfa_quick] == [
        ("a", "quick", "NOT-RUN"), ("d", "quick", "NOT-RUN")]
    assert pfa_quick[0].evidence == (
        "the quick tier's runs are not all stored: 243 of 387 runs of pfa-heterogeneous are "
        "neither cached nor published")
    both = claims + stored_tier_claims(tmp_path, claims)
    pfa_paper = {c.claim_id: c.status for c in both if c.paper == "pfa" and c.scale == "paper"}
    assert pfa_paper == {"a": "FAILS", "d": "HOLDS"}


def test_a_claim_quotes_the_papers_words_through_sheet_file_and_scorecard(tmp_path) -> None:
    """The sentence a claim tests goes from the sheet to the claims file, back, to every
    copy another tier makes of the claim, and onto its scorecard row beside its text,
    escaped like the rest."""
    from fedlib.verdicts.claims import aligned_tiers, load_claims, quoted, stored_tier_claims

    said = quoted(("PFA+ attains a model performance <very> close to PFA", "Section 5.2.1"))
    assert said == "\u201cPFA+ attains a model performance <very> close to PFA\u201d, Section 5.2.1"
    sheet = ClaimSheet("pfa", "quick")
    sheet.exact("a", True, "first", "1.0", quote=said)
    sheet.not_run("b", "second", "no runs", quote=quoted(("x", "Section 1"), ("y", "Sec. 2")))
    from fedlib.verdicts.compare import Verdict

    sheet.judged("c", Verdict("HOLDS", "e"), "third", origin="companion")
    assert [c.quote for c in sheet][2] == ""
    write_claims(tmp_path / "pfa.json", sheet.claims)
    back = load_claims(tmp_path / "pfa.json")
    assert back == sheet.claims and back[0].quote == said
    # a claims file written before the field existed reads as quoting nothing
    (tmp_path / "old.json").write_text('[{"paper": "pfa", "claim_id": "a", "status": "HOLDS", '
                                       '"text": "t", "evidence": "e"}]')
    assert load_claims(tmp_path / "old.json")[0].quote == ""
    # the copies other tiers make keep it
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "pfa.missing").write_text("3 of 9 runs are not stored")
    stored = stored_tier_claims(tmp_path, back)
    assert {(c.scale, c.quote) for c in stored if c.claim_id == "a"} == {("paper", said)}
    aligned = aligned_tiers([*back, Claim("pfa", "d", "HOLDS", "t", "e", scale="paper",
                                          quote=said)])
    assert next(c for c in aligned if c.claim_id == "d" and c.scale == "quick").quote == said
    page = scorecard_markdown(back)
    row = next(line for line in page.splitlines() if 'id="claim-pfa-a"' in line)
    # folded with the evidence, which it opens
    assert row.index("<details>") < row.index('class="claim-quote"') < row.index("<strong>")
    assert ("In the paper's words:</em> \u201cPFA+ attains a model performance &lt;very&gt; "
            "close to PFA\u201d, Section 5.2.1") in row
    assert 'class="claim-quote"' not in next(line for line in page.splitlines()
                                             if 'id="claim-pfa-c"' in line)


def test_a_quote_is_a_string_and_a_finding_of_the_companion_quotes_no_one() -> None:
    from fedlib.verdicts.claims import quoted

    with pytest.raises(TypeError, match="quote must be a string"):
        Claim("pfa", "a", "HOLDS", "t", "e", quote=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finding of the companion"):
        Claim("pfa", "a", "HOLDS", "t", "e", origin="companion", quote="\u201cx\u201d, S 1")
    with pytest.raises(ValueError, match="needs words and where they are"):
        quoted(("some words", ""))


def test_the_sheet_fills_in_what_the_metric_resolves() -> None:
    """A margin's rationale may hold the mark of what the metric resolves, which only the
    claim's runs can tell: the sheet fills it in, refuses to record it unfilled, and,
    where a claim of several comparisons dropped the rationales, closes the evidence with
    it."""
    from fedlib.verdicts.claims import RESOLUTION
    from fedlib.verdicts.compare import Comparison, combine

    why = f"1 point, far above what the metric resolves ({RESOLUTION})"
    single = Comparison("accuracy", "A", "B", "greater", 0.01, why).judge(
        {0: 0.9, 1: 0.91, 2: 0.92}, {0: 0.5, 1: 0.52, 2: 0.51})
    sheet = ClaimSheet("pfa", "quick")
    with pytest.raises(ValueError, match="still holds the mark"):
        sheet.judged("a", single, "t")
    claim = sheet.judged("a", single, "t", resolution="1/2,000 per test example")
    assert "(1 point, far above what the metric resolves (1/2,000 per test example))" in (
        claim.evidence) and RESOLUTION not in claim.evidence
    both = combine([("x", single), ("y", single)])
    claim = sheet.judged("b", both, "t", resolution="1/2,000 per test example")
    assert claim.evidence.endswith("; what the metric resolves: 1/2,000 per test example")
    assert sheet.judged("c", both, "t").evidence == both.evidence
