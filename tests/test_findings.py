"""The landing page's findings in prose, the numbers read back from the evidence, and
the scorecard's compact rows."""

from __future__ import annotations

import re

import pytest

from fedlib.render.findings import Links as FindingLinks
from fedlib.render.findings import context, findings_markdown, measure, measures, paper_findings
from fedlib.render.markdown import markdown_text
from fedlib.render.scorecard import scorecard_markdown
from fedlib.verdicts.claims import Claim, ClaimSheet, aligned_tiers, stored_tier_claims
from fedlib.verdicts.compare import Comparison, combine, near_value

SEEDS = (0, 1, 2)


def _loss(*values: float) -> dict[int, float]:
    return dict(zip(SEEDS, values, strict=True))


def _lower(a: str, b: str, margin: float = 0.02) -> Comparison:
    return Comparison("final training loss", a, b, "less", margin)


def _visible(markdown: str) -> str:
    """What a reader sees of the Markdown: link targets and HTML attributes removed."""
    text = re.sub(r"\]\([^)]*\)", "]", markdown)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\{ref\}`([^<`]*)<[^>]*>`", r"\1", text)
    return re.sub(r"\\(.)", r"\1", text)  # an escaped character reads as itself


def _paper_tier_sheet() -> tuple[list[Claim], list[Claim]]:
    """PADPFL at two tiers: a claim that holds clearly, one that holds barely, one that
    fails; the paper tier judges all three."""
    claims = {}
    for scale, shift in (("quick", 0.01), ("paper", 0.0)):
        sheet = ClaimSheet("padpfl", scale)
        sheet.judged("fig2-clear-win", _lower("adaptive", "1-1-1").judge(
            _loss(0.70 + shift, 0.71, 0.72), _loss(1.00, 1.02, 1.01)),
            "adaptive factors give a lower final loss than equal factors")
        sheet.judged("fig4-narrow-win", _lower("0-1-2", "1-1-1").judge(
            _loss(0.95, 0.96, 0.95), _loss(0.98, 0.99, 0.98)),
            "0-1-2 gives a lower final loss than equal factors")
        sheet.judged("fig6-tie", _lower("1-3-5", "1-1-1").judge(
            _loss(0.862, 0.863, 0.861), _loss(0.862, 0.862, 0.862)),
            "weight on the large clients lowers the final loss")
        claims[scale] = sheet.claims
    return claims["quick"], claims["paper"]


def test_a_paper_judged_at_the_paper_tier_names_its_clearest_hold_and_fail() -> None:
    quick, paper = _paper_tier_sheet()
    text = paper_findings(aligned_tiers([*quick, *paper]), "Talaei and Izadi",
                          "Enhancing federated learning (PADPFL)", FindingLinks())
    assert "At the papers' scale (the paper tier), of its 3 claims 2 hold and 1 fails." in text
    clear = measure(paper[0])
    assert clear is not None and clear.text == "-0.300 [-0.325, -0.275]"
    assert ("Holds most clearly, at the paper tier: *adaptive factors give a lower final loss "
            "than equal factors*; " + markdown_text(
                "measured final training loss, adaptive minus 1-1-1: -0.300 [-0.325, -0.275], "
                "95% interval over 3 paired seeds, margin 0.02")) in text
    assert "Fails most clearly, at the paper tier: *weight on the large clients" in text
    assert "[chapter](generated/published/padpfl.ipynb)" in text
    assert '<a href="generated/scorecard.html#claim-padpfl-fig2-clear-win">scorecard</a>' in text
    assert "0-1-2 gives" not in _visible(text)  # the narrow win is not the clearest
    seen = _visible(text)
    assert "`" not in seen and not any(c.claim_id in seen for c in paper)


def test_the_clearest_claim_is_chosen_by_its_numbers_not_its_place() -> None:
    def sheet(first: tuple[float, float, float], second: tuple[float, float, float]):
        s = ClaimSheet("pfa", "paper")
        s.judged("a", _lower("A", "B").judge(_loss(*first), _loss(1.0, 1.0, 1.01)), "claim A")
        s.judged("b", _lower("C", "B").judge(_loss(*second), _loss(1.0, 1.0, 1.01)), "claim C")
        return s.claims

    wide, narrow = (0.5, 0.52, 0.51), (0.9, 0.91, 0.9)
    assert "Holds most clearly, at the paper tier: *claim A*" in paper_findings(
        sheet(wide, narrow), "Liu et al. 2022", "PFA", FindingLinks())
    assert "Holds most clearly, at the paper tier: *claim C*" in paper_findings(
        sheet(narrow, wide), "Liu et al. 2022", "PFA", FindingLinks())


def test_a_paper_whose_paper_tier_is_not_run_says_so_and_names_the_quick_tier(tmp_path
                                                                               ) -> None:
    quick = ClaimSheet("ppsgd", "quick")
    quick.judged("fig1c-local-poor", Comparison(
        "final test accuracy", "alpha*Q=inf", "alpha*Q=0", "greater", 0.01).judge(
        _loss(0.70, 0.71, 0.705), _loss(0.13, 0.12, 0.125)),
        "local learning does poorly: alpha*Q=0 ends below alpha*Q=inf")
    quick.exact("fig1-epsilon", False, "the printed epsilon is the accountant's",
                "RDP gives 8.07 where the paper prints 6.1")
    quick.not_run("fig1b-stackoverflow", "Stack Overflow: alpha*Q=10 is best",
                  "the data are not available offline")
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "ppsgd.missing").write_text("487 of 679 runs are missing\n")
    claims = aligned_tiers([*quick, *stored_tier_claims(tmp_path, quick.claims)])
    text = paper_findings(claims, "Bietti et al. 2022", "PPSGD", FindingLinks())
    assert text.startswith("**[Bietti et al\\. 2022](generated/ppsgd.ipynb)**, *PPSGD*. The "
                           "paper tier is not yet run for this paper (its runs are not all "
                           "computed yet); at the quick tier, of its 3 claims 1 holds, 1 "
                           "fails and 1 is not run.")
    assert ("Holds most clearly, at the quick tier: *"
            + markdown_text("local learning does poorly: alpha*Q=0 ends below alpha*Q=inf")
            + "*; " + markdown_text("measured final test accuracy, alpha*Q=inf minus "
                                    "alpha*Q=0: 0.580 [0.555, 0.605]")) in text
    assert ("Fails most clearly, at the quick tier: *"
            + markdown_text("the printed epsilon is the accountant's") + "*; "
            + markdown_text("computed exactly: RDP gives 8.07 where the paper prints 6.1")
            + " ([chapter](generated/ppsgd.ipynb), ") in text
    assert "fig1c" not in _visible(text)


def test_the_companion_findings_are_told_apart_with_their_numbers() -> None:
    sheet = ClaimSheet("dpditto", "paper")
    sheet.exact("fig2-interior-optimum", True, "the bound has an interior optimum T*",
                "T* per epsilon: eps=1: 17, eps=10: 28", origin="companion")
    sheet.judged("fig5-approaches", _lower("eps=100", "eps=1", 0.001).judge(
        _loss(0.001, 0.0012, 0.0011), _loss(0.011, 0.012, 0.0115)),
        "the loss approaches the noiseless curve as eps grows")
    page = findings_markdown(sheet.claims)
    head, found = page.split("### What the companion found")
    assert "T\\*" not in head and "At the papers' scale (the paper tier), of its 1 claim " \
        "1 holds." in head
    assert (f"- {markdown_text('DP-Ditto')}: *the bound has an interior optimum T\\**"
            " holds at the paper tier; " + markdown_text(
                "computed exactly: T* per epsilon: eps=1: 17, eps=10: 28")
            + " ([chapter](generated/published/dpditto.ipynb), <a href=\"generated/"
            "scorecard.html#claim-dpditto-fig2-interior-optimum\">scorecard</a>).") in found
    assert "interior-optimum" not in _visible(page)


def test_claim_text_cannot_inject_markup_into_the_prose() -> None:
    sheet = ClaimSheet("pfa", "paper")
    sheet.exact("a", True, "<img src=x> *bold* $x$ [link](y)", "1")
    text = paper_findings(sheet.claims, "Liu", "PFA", FindingLinks())
    assert not re.search(r"(?<!\\)[<*$\[]", text.split("tier: *")[1].split("*; computed")[0])
    assert markdown_text("<img src=x> *bold* $x$ [link](y)") in text


def test_numbers_are_read_back_from_combined_and_banded_evidence() -> None:
    parts = [("eps=10", _lower("A", "B").judge(_loss(0.5, 0.5, 0.51), _loss(1, 1, 1.01))),
             ("eps=100", _lower("A", "B").judge(_loss(1, 1, 1.01), _loss(1, 1, 1.01)))]
    verdict = combine(parts)
    found = measures(verdict.evidence, verdict.status)
    assert [(m.status, m.where) for m in found] == [("HOLDS", "eps=10"), ("FAILS", "eps=100")]
    claim = Claim("pfa", "x", verdict.status, "t", "evaluated on MNIST; " + verdict.evidence)
    chosen = measure(claim)
    assert chosen is not None and chosen.where == "eps=100" and chosen.status == "FAILS"
    assert context(claim) == "evaluated on MNIST"
    band = near_value("error", _loss(0.46, 0.47, 0.465), 0.097, 0.03)
    value = measure(Claim("hu2020", "y", band.status, "t", band.evidence))
    assert value is not None and value.band and value.bounds == pytest.approx((0.067, 0.127))
    assert value.sentence().endswith("95% interval over 3 runs, against 0.097 within 0.03")
    assert measure(Claim("hu2020", "z", "NOT-RUN", "t", "no data")) is None


def _scorecard_claims() -> list[Claim]:
    quick, paper = _paper_tier_sheet()
    extra = ClaimSheet("padpfl", "quick")
    extra.exact("fig2-best-of-five", False, "0-1-2 is best of <five> & \"all\"",
                "0-0-1 is lower", origin="companion")
    return aligned_tiers([*quick, *paper, *extra])


def test_the_scorecard_has_one_compact_row_per_claim_with_its_evidence_folded() -> None:
    claims = _scorecard_claims()
    page = scorecard_markdown(claims)
    rows = [line for line in page.splitlines() if line.startswith('<div class="claim"')]
    assert len(rows) == 4  # three claims of the paper, one finding, each at both tiers
    for row in rows:
        assert row.count("<details>") == 1 and "<details open" not in row
        assert row.index('<p class="claim-text">') < row.index("<details><summary>")
        assert row.count('class="verdict') == 2  # a badge per tier
        assert row.index("</summary>") < row.index('<div class="evidence">')
    clear = next(r for r in rows if 'id="claim-padpfl-fig2-clear-win"' in r)
    assert ('data-verdicts="quick:holds paper:holds"' in clear
            and '<span class="numbers" title="paper: final training loss, adaptive minus '
                '1-1-1: -0.300 [-0.325, -0.275], 95% interval over 3 paired seeds, margin '
                '0.02">paper: <span class="value">-0.300 [-0.325, -0.275]</span> margin 0.02 '
                "\u00b7 final training loss, adaptive minus 1-1-1</span>" in clear)
    finding = next(r for r in rows if "best-of-five" in r)
    assert "0-1-2 is best of &lt;five&gt; &amp; &quot;all&quot;" in finding
    assert page.count("## ") == 1 and "## Talaei and Izadi" in page


def test_the_scorecard_filter_is_plain_javascript_and_hidden_without_it() -> None:
    page = scorecard_markdown(_scorecard_claims())
    form = next(line for line in page.splitlines() if line.startswith("<form"))
    assert form.startswith('<form class="scorecard-filter" hidden>')
    assert '<option value="padpfl">Talaei and Izadi</option>' in form
    assert '<option value="pfa">' not in form  # only papers with claims
    for status in ("holds", "fails", "inconclusive", "not-testable", "not-run"):
        assert f'<option value="{status}">' in form
    assert '<option value="quick">quick</option><option value="paper">paper</option>' in form
    script = page[page.index("<script>"):page.index("</script>")]
    assert "form.hidden = false" in script and "http" not in script and "src=" not in script
    assert page.index("<form") < page.index('<div class="claim"') < page.index("<script>")


def test_a_paper_tier_run_once_is_said_to_judge_nothing_yet() -> None:
    quick, paper = ClaimSheet("hu2020", "quick"), ClaimSheet("hu2020", "paper")
    comparison = _lower("private", "non-private")
    quick.judged("fig4-rises", comparison.judge(_loss(0.5, 0.52, 0.51), _loss(1, 1, 1.01)),
                 "the private error is lower")
    paper.judged("fig4-rises", comparison.judge({0: 0.5}, {0: 1.0}), "the private error is lower")
    text = paper_findings([*quick, *paper], "Hu et al. 2020", "HAR", FindingLinks())
    assert ("The paper tier judges none of its claims yet (it has one repeat only, too few to "
            "judge a difference); at the quick tier, of its 1 claim 1 holds.") in text
    assert "Holds most clearly, at the quick tier: *the private error is lower*" in text
    assert "[chapter](generated/hu2020.ipynb)" in text


def test_a_combined_claims_evidence_unfolds_one_part_a_line() -> None:
    verdict = combine([("eps=10", _lower("A", "B").judge(_loss(0.5, 0.5, 0.51),
                                                         _loss(1, 1, 1.01))),
                       ("eps=100", _lower("A", "B").judge(_loss(1, 1, 1.01),
                                                          _loss(1, 1, 1.01)))])
    claim = Claim("pfa", "x", verdict.status, "A beats B at both epsilons", verdict.evidence,
                  scale="quick")
    row = next(line for line in scorecard_markdown([claim]).splitlines()
               if line.startswith('<div class="claim"'))
    assert "<p><strong>quick:</strong> eps=10: HOLDS (A 0.503, B 1.003, difference" in row
    assert "<br>eps=100: FAILS (the arms tie within the margin" in row
    # A difference the same at every seed is written as exact, not as an interval.
    assert ('quick: <span class="value">0.000 exactly</span> margin 0.02 \u00b7 '
            "eps=100: A minus B</span>") in row
