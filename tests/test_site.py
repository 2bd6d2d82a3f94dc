"""The site as a reader sees it, in headless Chromium at a laptop's size (1280 x 900):
nothing scrolls sideways, each chapter opens on the papers' own scale with its figures
labelled by tier, the landing page tells its findings in prose, and the scorecard is
short with its evidence folded.

The site is the one ``make site`` builds from the runs stored with the project
(``site_book`` in conftest.py); the tests skip, saying why, without Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import HEIGHT

from fedlib.papers import PAPERS
from fedlib.runs.gaps import GAPS_SUFFIX, tier_gaps

# Every element that scrolls sideways, or the page itself: what a reader would have to
# scroll to see. An element scrolls when its overflow lets it and its content is wider
# than its box (hidden elements have no box and are skipped).
SIDEWAYS = """() => {
  const found = [];
  const root = document.scrollingElement;
  if (root.scrollWidth > window.innerWidth) {
    found.push(`the page: ${root.scrollWidth} px wide in a ${window.innerWidth} px window`);
  }
  for (const e of document.querySelectorAll('body *')) {
    const overflow = getComputedStyle(e).overflowX;
    if (!['auto', 'scroll'].includes(overflow) || e.clientWidth === 0) continue;
    if (e.scrollWidth > e.clientWidth + 1) {
      const name = e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
        (e.className && typeof e.className === 'string'
          ? '.' + e.className.trim().split(/\\s+/).join('.') : '');
      found.push(`${name}: ${e.scrollWidth} px of content in ${e.clientWidth} px ` +
                 `(${(e.innerText || '').trim().slice(0, 80)})`);
    }
  }
  return found;
}"""


def _open(page, html: Path, name: str) -> None:
    """Load ``name`` (a page of the site, without .html) and wait for its math."""
    page.goto((html / f"{name}.html").as_uri())
    page.wait_for_load_state("load")
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")


def _pages(html: Path) -> list[str]:
    """Every page of the site (not the redirect at index.html, nor search and index)."""
    skip = {"index", "search", "genindex"}
    return sorted(p.relative_to(html).with_suffix("").as_posix()
                  for p in html.rglob("*.html")
                  if not p.relative_to(html).parts[0].startswith("_")
                  and p.relative_to(html).with_suffix("").as_posix() not in skip)


@pytest.mark.slow
def test_no_page_scrolls_sideways_at_1280_pixels(site_book: Path, page) -> None:
    html = site_book / "_build" / "html"
    pages = _pages(html)
    assert {"intro", "reproducing", "generated/scorecard", "generated/status"} <= set(pages)
    problems = {}
    for name in pages:
        _open(page, html, name)
        found = page.evaluate(SIDEWAYS)
        if found:
            problems[name] = found[:5]
    assert not problems, "pages that scroll sideways at 1280 px:\n" + "\n".join(
        f"{name}: {'; '.join(found)}" for name, found in problems.items())


@pytest.mark.slow
def test_each_chapter_opens_on_the_paper_tier_with_its_figures_labelled(
        site_book: Path, page) -> None:
    html = site_book / "_build" / "html"
    _open(page, html, "intro")
    chapters = page.evaluate("""() => [...document.querySelectorAll(
        'nav.bd-docs-nav li.toctree-l1')].map(li => ({
          href: li.querySelector(':scope > a').getAttribute('href'),
          sections: [...li.querySelectorAll(':scope li.toctree-l2 > a')].map(a => ({
            href: a.getAttribute('href'), text: a.textContent.trim()}))}))""")
    for paper in PAPERS:
        lead = [c for c in chapters if c["href"].endswith(f"generated/published/{paper.id}.html")]
        assert lead, f"{paper.id}: no chapter in the navigation opens on its paper tier"
        sections = lead[0]["sections"]
        assert sections and sections[0]["href"].endswith(f"generated/{paper.id}.html"), (
            f"{paper.id}: the quick tier is not the page after the paper tier: {sections}")
        assert re.search(r"quick tier", sections[0]["text"], re.I) and \
            re.search(r"reduced scale", sections[0]["text"], re.I), sections[0]["text"]

        for name, tier in ((f"generated/published/{paper.id}", "paper"),
                           (f"generated/{paper.id}", "quick")):
            _open(page, html, name)
            opening = page.locator("article h1 ~ *").first.inner_text()
            figures = page.locator("article figure")
            if figures.count() == 0:
                # the runs of this tier are not all stored (or its data is not at hand
                # where the site was built): the page says so
                assert f"The {tier} tier of this chapter is not shown: " in opening, (
                    f"{name}: {opening[:300]!r}")
                continue
            assert f"This page is the {tier} tier" in opening, f"{name}: {opening[:300]!r}"
            badge = figures.first.locator("figcaption .tier-badge")
            assert badge.count() == 1 and badge.inner_text().strip().lower() == \
                f"{tier} tier", f"{name}: its first figure does not say it is of the {tier} tier"
            unlabelled = page.evaluate("""() => [...document.querySelectorAll(
                'article figure')].filter(f => !f.querySelector('figcaption .tier-badge'))
                .map(f => f.id)""")
            assert not unlabelled, f"{name}: figures without a tier badge: {unlabelled}"


@pytest.mark.slow
def test_every_quick_tier_page_finds_every_run_it_reads_in_the_store(site_book: Path) -> None:
    """The site is rendered from the stored runs alone. At the quick tier, the book's own,
    every run a page reads must be there: a run missing from the store does not fail the
    build, it drops a section or a federation from the page with a line saying so, which a
    reader would take for the chapter's design. (The paper tier may leave parts out, and
    says why; its cost is hours.) Each render records the sweeps it could not have."""
    renders = sorted((site_book / "generated" / "claims").glob(f"*{GAPS_SUFFIX}"))
    chapters = {p.stem for p in (site_book.parent / "notebooks").glob("*.py")}
    assert {p.name.split(".", 1)[0] for p in renders} == chapters, (
        f"the quick-tier renders of {sorted(chapters)} did not all record their gaps: "
        f"{[p.name for p in renders]}")
    # Another tier's runs that a page quotes are recorded with that tier; a sweep before
    # the page set its tier would be recorded with none, and counts as the page's own.
    missing = {**tier_gaps(renders, ""), **tier_gaps(renders, "quick")}
    assert not missing, f"quick-tier pages whose runs are not all stored: {missing}"


def _claim_ids(site_book: Path) -> set[str]:
    ids = set()
    for path in (site_book / "generated" / "claims").rglob("*.json"):
        ids |= {c["claim_id"] for c in json.loads(path.read_text())}
    return ids


@pytest.mark.slow
def test_the_landing_page_states_findings_in_prose(site_book: Path, page) -> None:
    html = site_book / "_build" / "html"
    _open(page, html, "intro")
    paragraphs = page.evaluate("""() => [...document.querySelectorAll('article p')].map(p => ({
        text: p.innerText.trim(),
        links: [...p.querySelectorAll('a')].map(a => a.getAttribute('href') || '')}))""")
    chapters = {p.id for p in PAPERS}
    findings = [p for p in paragraphs if len(p["text"]) > 120 and any(
        re.search(r"generated/(published/)?(" + "|".join(chapters) + r")\.html", link)
        for link in p["links"])]
    linked = {m.group(2) for p in findings for link in p["links"]
              if (m := re.search(r"generated/(published/)?([a-z0-9]+)\.html", link))}
    assert len(findings) >= 3 and len(linked & chapters) >= 3, (
        "the landing page does not state findings in prose paragraphs that link to the "
        f"chapters ({len(findings)} such paragraphs, linking {sorted(linked)})")
    shown = set(page.evaluate(
        "() => [...document.querySelectorAll('article code')].map(c => c.innerText.trim())"))
    listed = sorted(shown & _claim_ids(site_book))
    assert not listed, f"the landing page lists claim ids in code font: {listed[:10]}"


@pytest.mark.slow
def test_the_scorecard_with_its_evidence_folded_is_under_eight_screens(
        site_book: Path, page) -> None:
    html = site_book / "_build" / "html"
    _open(page, html, "generated/scorecard")
    opened = page.evaluate("() => [...document.querySelectorAll('details[open]')].length")
    assert opened == 0, f"the scorecard opens with {opened} evidence blocks unfolded"
    height = page.evaluate("() => document.scrollingElement.scrollHeight")
    assert height < 8 * HEIGHT, (
        f"the scorecard is {height} px tall, {height / HEIGHT:.1f} screens of {HEIGHT} px "
        "with its evidence folded (at most 8)")
