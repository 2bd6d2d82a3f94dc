"""The whole pipeline at the smoke tier: Makefile -> papermill -> Jupyter Book -> browser.

Every test of the smoke build (the ``built_book`` fixture) lives in this file, so that a
parallel run builds it once, on one worker (tests/conftest.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_in_clone

from fedlib.papers import PAPERS
from fedlib.runs.environment import platform_name
from fedlib.verdicts.claims import read_claims
from fedlib.verdicts.compare import STATUSES

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parent.parent
NOTEBOOKS = [ROOT / p.notebook for p in PAPERS]


@pytest.mark.slow
def test_book_has_every_page(built_book: Path) -> None:
    html = built_book / "_build" / "html"
    chapters = [f"generated/{p.id}" for p in PAPERS]
    paper_tier = [f"generated/published/{p.id}" for p in PAPERS]
    for page in ("index", *chapters, *paper_tier, "generated/scorecard", "reproducing",
                 "generated/status", "references"):
        assert (html / f"{page}.html").is_file(), f"page {page} was not built"
    for page in paper_tier:
        assert "the paper tier" in (html / f"{page}.html").read_text(), page
    scorecard = (html / "generated" / "scorecard.html").read_text()
    assert "fig1a-global-plateau" in scorecard and "fig2-equal-worst" in scorecard
    for page in (html / "generated").rglob("*.html"):
        text = page.read_text()
        for unwanted in (str(ROOT), str(built_book.parent), "Warning:"):
            at = text.find(unwanted)
            assert at < 0, f"{page.name} shows {unwanted!r}: ...{text[at - 200:at + 300]}..."
    status = (html / "generated" / "status.html").read_text()
    assert "ppsgd" in status and "smoke" in status
    if (ROOT / "requirements" / platform_name() / "lock.txt").is_file():
        # The site names the lock it was built from (the clone's own).
        assert f"lock {platform_name()} sha256:" in status


@pytest.mark.slow
def test_the_book_step_builds_at_the_quick_tier_from_the_default_paths(
        built_book: Path, tmp_path: Path) -> None:
    """``make rebuild-all``'s book step at the default tier (quick), run in a fresh clone
    with the default book folder and venv, on the notebooks executed at the smoke tier:
    the step alone (its prerequisites taken as made), so that nothing is computed. The
    navigation then comes from book/_toc.yml, passed to jupyter-book by a path that must
    hold from the book's own folder too."""
    clone = tmp_path / "clone"
    shutil.copytree(built_book.parent, clone, symlinks=True)
    shutil.rmtree(clone / "book" / "_build")
    done = run_in_clone(clone, "make", "book", "SCALE=quick",
                        "--old-file=book/generated/scorecard.md",
                        "--old-file=book/generated/status.md")
    assert "fedlib.render.execute" not in done.stdout  # the book step alone: nothing executed
    html = clone / "book" / "_build" / "html"
    for page in ("index", *(f"generated/{p.id}" for p in PAPERS), "generated/scorecard"):
        assert (html / f"{page}.html").is_file(), f"page {page} was not built"
    assert "Quick tier: reduced scale" in (html / "intro.html").read_text()


@pytest.mark.slow
def test_failing_notebook_fails_the_build(tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(ROOT / "book", book, ignore=shutil.ignore_patterns("_build", "generated"))
    # An invalid tier makes the notebook raise; make must fail and leave no output.
    result = subprocess.run(
        ["make", "book", "SCALE=huge", f"BOOK={book}", f"VENV={VENV}"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode != 0
    assert not (book / "generated" / "ppsgd.ipynb").exists()
    assert not (book / "_build" / "html" / "index.html").exists()


CHAPTER_CHECKS = [
    ("ppsgd", "fig-ppsgd-1a", "Excess risk of PPSGD", "tab-ppsgd-claims",
     "fig1a-global-plateau"),
    ("ppsgd", "fig-ppsgd-2", "Accuracy-privacy trade-off", "tab-ppsgd-claims",
     "fig2-emnist-envelope-dominates"),
    ("padpfl", "fig-padpfl-3", "S1 with privacy", "tab-padpfl-claims", "fig2-equal-worst"),
    ("dpditto", "fig-dpditto-5", "privacy budgets", "tab-dpditto-claims",
     "fig2-interior-optimum"),
    ("pfa", "fig-pfa-3", "Test accuracy of the global model", "tab-pfa-claims",
     "fig3-ordering"),
    ("hu2020", "fig-hu2020-2", "Primal objective against rounds", "tab-hu2020-claims",
     "fig4-nonprivate-rises"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("chapter", "figure_id", "caption_text", "table_id", "claim_id"),
                         CHAPTER_CHECKS, ids=[f"{c[0]}-{c[1]}" for c in CHAPTER_CHECKS])
def test_chapter_shows_its_figure_and_claims_in_a_browser(
    built_book: Path, page, chapter: str, figure_id: str, caption_text: str, table_id: str,
    claim_id: str,
) -> None:
    page.goto((built_book / "_build" / "html" / "generated" / f"{chapter}.html").as_uri())
    page.wait_for_load_state("load")
    figure = page.locator(f"#{figure_id}")
    assert figure.count() == 1, f"{figure_id} is not on the {chapter} page"
    size = figure.locator("img").evaluate("img => [img.naturalWidth, img.naturalHeight]")
    assert size[0] > 400 and size[1] > 150, f"figure image did not render: {size}"
    assert caption_text in figure.inner_text()
    claims = page.locator(f"#{table_id}")
    assert claims.count() == 1 and claim_id in claims.inner_text()
    page.screenshot(path=str(built_book / f"{chapter}-page.png"), full_page=False)


@pytest.mark.slow
def test_pages_fit_a_1280_pixel_window_and_lead_with_results(built_book: Path, page) -> None:
    html = built_book / "_build" / "html"
    # index.html only redirects to the landing page, intro.html
    pages = ["intro", "generated/scorecard", *[f"generated/{p.id}" for p in PAPERS]]
    for name in pages:
        page.goto((html / f"{name}.html").as_uri())
        page.wait_for_load_state("load")
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{name} scrolls sideways by {overflow} px at 1280 px"
        if name.startswith("generated/") and name != "generated/scorecard":
            # every code cell is folded behind a toggle: the page opens on prose and results
            visible = page.evaluate(
                "() => [...document.querySelectorAll('div.cell_input')]"
                ".filter(e => !e.closest('details') || e.closest('details').open).length")
            assert visible == 0, f"{name} shows {visible} code cells unfolded"
    for name in ("generated/scorecard", "intro"):
        page.goto((html / f"{name}.html").as_uri())
        page.wait_for_load_state("load")
        page.wait_for_timeout(500)
        page.screenshot(path=str(built_book / f"{name.split('/')[-1]}-page.png"))


@pytest.mark.slow
def test_every_reproduced_figure_carries_the_papers_number(built_book: Path, page) -> None:
    import re

    html = built_book / "_build" / "html" / "generated"
    for paper in PAPERS:
        page.goto((html / f"{paper.id}.html").as_uri())
        page.wait_for_load_state("load")
        figures = page.locator(f"figure[id^='fig-{paper.id}-']")
        assert figures.count(), f"no figure on the {paper.id} page"
        number = r"Figures? [0-9][0-9a-z ,and]*\(" + re.escape(paper.reference) + r"\)"
        for index in range(figures.count()):
            figure = figures.nth(index)
            label = figure.get_attribute("id")
            caption = figure.locator("figcaption").inner_text()  # what a reader sees
            badge = figure.locator("figcaption .tier-badge")
            assert badge.count() == 1 and badge.inner_text().strip() == "smoke tier", (
                f"{paper.id}: {label} does not say which tier it is of")
            caption = caption.strip().removeprefix(badge.inner_text().strip())
            assert re.match(r"\s*(" + number + r", reproduced|Not in the paper)", caption), (
                f"{paper.id}: the caption of {label} does not open with the figure of the "
                f"paper it reproduces: {caption.strip()[:160]!r}")
            assert not re.search(r"Fig\. \d+", caption), f"{label} shows a book number"


@pytest.mark.slow
def test_scorecard_rows_link_to_anchors_that_exist(built_book: Path) -> None:
    import re

    html = built_book / "_build" / "html" / "generated"
    scorecard = (html / "scorecard.html").read_text()
    links = re.findall(r'<div class="claim" id="claim-[^"]+".*?<a class="claim-id" '
                       r'href="([a-z0-9]+)\.html#([^"]+)"', scorecard)
    assert len(links) >= 5 * 3, "the scorecard lists too few claims"
    ids: dict[str, set[str]] = {}
    for chapter, anchor in links:
        if chapter not in ids:
            ids[chapter] = set(re.findall(r'id="([^"]+)"', (html / f"{chapter}.html").read_text()))
        assert anchor in ids[chapter], f"scorecard link {chapter}.html#{anchor} goes nowhere"
    assert (html / "scorecard_summary.png").is_file() or "scorecard_summary" in scorecard


@pytest.mark.slow
def test_every_figure_offers_its_plotted_numbers(built_book: Path) -> None:
    import re

    site = built_book / "_build" / "html"
    for paper in PAPERS:
        text = (site / "generated" / f"{paper.id}.html").read_text()
        links = re.findall(r'href="\.\./data/([^"]+\.csv)"', text)
        assert links, f"the {paper.id} page offers no CSV"
        for name in links:
            path = site / "data" / name
            assert path.is_file(), f"{paper.id}: the link to {name} does not resolve"
            assert path.read_text().startswith("panel,x label,y label,series,x,y")


@pytest.mark.slow
@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_at_smoke_tier(source: Path, built_book: Path) -> None:
    """The smoke build of the book executed every notebook through papermill."""
    executed = built_book / "generated" / f"{source.stem}.ipynb"
    claims = [c for c in read_claims(built_book / "generated" / "claims")
              if c.paper == source.stem]
    assert claims, "the notebook wrote no claims"
    assert {c.scale for c in claims} == {"smoke"}
    assert all(c.status in STATUSES and c.evidence for c in claims)
    outputs = [o for cell in json.loads(executed.read_text())["cells"]
               for o in cell.get("outputs", [])]
    # Figures are glued for the book (their mime type then carries myst-nb's prefix).
    assert any(key.endswith("image/png") for o in outputs for key in o.get("data", {})), (
        "no figure was drawn")
    assert not [o for o in outputs if o.get("output_type") == "error"]


@pytest.mark.slow
def test_the_frontier_chapter_ran_at_the_smoke_tier(built_book: Path) -> None:
    """The companion's frontier chapter as the smoke build executed it: companion findings
    only, no error, every figure's numbers kept."""
    generated = built_book / "generated"
    findings = [c for c in read_claims(generated / "claims") if c.paper == "frontier"]
    assert findings and {c.origin for c in findings} == {"companion"}
    assert {c.scale for c in findings} == {"smoke"}
    outputs = [o for cell in json.loads((generated / "frontier.ipynb").read_text())["cells"]
               for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    for name in ("frontier_accuracy", "frontier_fairness", "frontier_costs"):
        assert (generated / "extra" / "data" / f"{name}.csv").is_file()
