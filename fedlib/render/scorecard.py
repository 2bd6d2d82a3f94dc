"""The scorecard page: every chapter's claims, read from the claims folder the notebooks
write (one JSON file a chapter), checked against the executed notebooks, and drawn as a
filterable table with a summary figure; ``python -m fedlib.render.scorecard``."""

from __future__ import annotations

import html
import sys
from collections.abc import Sequence
from pathlib import Path

from fedlib.paths import atomic_path
from fedlib.render.anchors import chapter_labels, claim_anchor
from fedlib.runs.errors import DEBUG_FLAG, DEBUG_HELP, run_command
from fedlib.verdicts.claims import (
    CHAPTER_TITLES,
    COMPANION_CHAPTERS,
    WORDS,
    Claim,
    ScorecardError,
    _tiers,
    aligned_tiers,
    by_claim,
    checked_claims,
    counts_text,
    flipped,
    paper_claims,
    scorecard_text,
    stored_tier_claims,
    summary,
)
from fedlib.verdicts.compare import FAILS, HOLDS, INCONCLUSIVE, NOT_RUN, NOT_TESTABLE, STATUSES


def _html(text: str) -> str:
    """``text`` escaped for HTML (quotes too, for attributes), on one line."""
    return html.escape(" ".join(str(text).split()), quote=True)


_BADGE = {HOLDS: "holds", FAILS: "fails", INCONCLUSIVE: "inconclusive",
          NOT_TESTABLE: "not-testable", NOT_RUN: "not-run"}


STATUS_MEANINGS = {
    HOLDS: "the interval of the compared difference clears the claim's margin on the "
           "claimed side (or an exact computation agrees)",
    FAILS: "the interval excludes the difference the claim needs: the arms tie within the "
           "margin or the other arm is ahead (or an exact computation disagrees)",
    INCONCLUSIVE: "the interval contains the margin: the difference is inside the "
                  "run-to-run uncertainty",
    NOT_TESTABLE: "every compared arm is within noise of a trivial baseline (chance, the "
                  "majority class, the starting loss), or the optimum sits on an open edge "
                  "of its grid",
    NOT_RUN: "no runs, or one repeat only: the evidence says which",
}
"""What each status means, for the pages that show them."""


def _badges(group: Sequence[Claim]) -> str:
    return "".join(f'<span class="verdict {_BADGE[x.status]}">{x.status}</span>'
                   + (f'<span class="tier">{_html(x.scale)}</span>' if x.scale else "")
                   for x in group)


def _row_numbers(group: Sequence[Claim]) -> str:
    """The deciding number of a claim on one line, the value and its interval first:
    that of the paper tier where the claim is run there, else of the largest tier that
    runs it, named."""
    from fedlib.render.findings import deciding, exact_detail, measure

    c = deciding(group)
    if c.status == NOT_RUN:
        return ""
    tier = f"{c.scale}: " if c.scale else ""
    found = measure(c)
    if found is not None:
        if found.band:
            lo, hi = found.bounds
            against = f"against {(lo + hi) / 2:.3g} \u00b1 {(hi - lo) / 2:.3g}"
        else:
            against = f"margin {found.margin:.3g}"
        what = f"{found.where}: {found.what}" if found.where else found.what
        return (f'<span class="numbers" title="{_html(tier + found.sentence())}">{_html(tier)} '
                f'<span class="value">{_html(found.text)}</span> {_html(against)} \u00b7 '
                f"{_html(what)}</span>")
    detail = exact_detail(c)
    if not detail:
        return ""
    said = f"{tier}computed exactly: {detail}"
    return f'<span class="numbers" title="{_html(said)}">{_html(said)}</span>'


def _quote(group: Sequence[Claim]) -> str:
    """The sentence of the paper a claim tests, escaped, opening its evidence (the first
    tier's that quotes it; empty for a claim that quotes none, such as a finding of the
    companion)."""
    quote = next((c.quote for c in group if c.quote), "")
    if not quote:
        return ""
    return f'<p class="claim-quote"><em>In the paper\'s words:</em> {_html(quote)}</p>'


def _claim_row(group: Sequence[Claim], href: str) -> str:
    """One claim as a compact row: the claim in words at full width, then one line with a
    badge per tier, the measured number with its interval and a link to where the chapter
    shows it; that line unfolds the paper's words the claim tests and the evidence (a
    ``<details>``, folded)."""
    c = group[0]
    flip = '<span class="flip">flips between tiers</span>' if flipped(group) else ""
    # a combined claim's parts (" | ") one per line
    evidence = "".join(f"<p><strong>{_html(x.scale or 'evidence')}:</strong> "
                       + "<br>".join(_html(part) for part in x.evidence.split(" | "))
                       + "</p>" for x in group)
    if c.paper_value:
        evidence += f"<p><em>The paper:</em> {_html(c.paper_value)}</p>"
    if c.restated:
        evidence += f"<p><em>Restated:</em> {_html(c.restated)}</p>"
    verdicts = " ".join(f"{_html(x.scale or '-')}:{_BADGE[x.status]}" for x in group)
    return (f'<div class="claim" id="claim-{c.paper}-{c.claim_id}" data-paper="{c.paper}" '
            f'data-verdicts="{verdicts}"><p class="claim-text">{_html(c.text)}</p>'
            f"<details><summary>{_badges(group)}{flip}{_row_numbers(group)}"
            f'<a class="claim-id" href="{html.escape(href, quote=True)}" title="where the '
            f'chapter shows it (claim {_html(c.claim_id)})">chapter</a></summary>'
            f'<div class="evidence">{_quote(group)}{evidence}</div></details></div>')


def _filter_form(claims: Sequence[Claim]) -> str:
    """The scorecard's filter (paper, status, tier), hidden until its script shows it:
    without JavaScript the page shows every claim."""
    from fedlib.papers import PAPERS as ENTRIES

    papers = "".join(f'<option value="{e.id}">{_html(e.reference)}</option>'
                     for e in ENTRIES if any(c.paper == e.id for c in claims))
    papers += "".join(f'<option value="{chapter}">{_html(CHAPTER_TITLES[chapter])}</option>'
                      for chapter in COMPANION_CHAPTERS if any(c.paper == chapter
                                                               for c in claims))
    statuses = "".join(f'<option value="{_BADGE[s]}">{s}</option>' for s in STATUSES)
    tiers = "".join(f'<option value="{_html(t)}">{_html(t)}</option>'
                    for t in _tiers(claims) if t)
    return ('<form class="scorecard-filter" hidden><label>Paper <select name="paper">'
            f'<option value="">all</option>{papers}</select></label> '
            '<label>Status <select name="status"><option value="">any</option>'
            f"{statuses}</select></label> "
            '<label>at tier <select name="tier"><option value="">any</option>'
            f'{tiers}</select></label> <span class="scorecard-count"></span></form>')


_FILTER_SCRIPT = """<script>
(function () {
  var form = document.querySelector("form.scorecard-filter");
  if (!form) { return; }
  var rows = Array.prototype.slice.call(document.querySelectorAll("div.scorecard div.claim"));
  var count = form.querySelector(".scorecard-count");
  function apply() {
    var paper = form.elements.paper.value, status = form.elements.status.value;
    var tier = form.elements.tier.value, shown = 0;
    rows.forEach(function (row) {
      var verdicts = (row.getAttribute("data-verdicts") || "").split(" ");
      var match = verdicts.some(function (v) {
        var parts = v.split(":");
        return (!tier || parts[0] === tier) && (!status || parts[1] === status);
      });
      var show = match && (!paper || row.getAttribute("data-paper") === paper);
      row.hidden = !show;
      if (show) { shown += 1; }
    });
    Array.prototype.forEach.call(document.querySelectorAll("div.scorecard"), function (block) {
      block.hidden = !block.querySelector("div.claim:not([hidden])");
    });
    Array.prototype.forEach.call(document.querySelectorAll("section"), function (section) {
      if (section.contains(form) || !section.querySelector("div.claim")) { return; }
      section.hidden = !section.querySelector("div.claim:not([hidden])");
    });
    if (paper || status || tier) {
      Array.prototype.forEach.call(document.querySelectorAll("details.companion-findings"),
        function (group) { group.open = !!group.querySelector("div.claim:not([hidden])"); });
    }
    count.textContent = shown + " of " + rows.length + " claims shown";
  }
  form.hidden = false;
  form.addEventListener("change", apply);
  apply();
})();
</script>"""
"""Shows the filter and applies it; plain JavaScript, nothing fetched."""


def scorecard_markdown(claims: Sequence[Claim], runs: Path | None = None) -> str:
    """The scorecard as a MyST page: what the statuses mean, the counts and their figure,
    a filter (paper, status, tier), then per paper one compact row per claim (the claim,
    a badge per tier, the deciding number with its interval, a link to where the chapter
    shows it, the evidence folded), the companion's own findings after the papers', folded
    under their own heading (the filter unfolds them when it is set)."""
    from fedlib.papers import PAPERS as ENTRIES

    lines = [
        "# Scorecard",
        "",
        "Every claim the chapters check, evaluated in code on the last build. A claim that "
        "compares methods or settings is declared before any result is read (the quantity, "
        "the direction and a margin that means something in the paper's terms) and judged "
        "on the mean over repeats with its 95% interval. Each row gives the claim, its "
        "verdict per tier and the number it was judged on (at the paper tier where that tier "
        "runs it); click the row's line of badges for the evidence. The statuses:",
        "",
        '<dl class="statuses">' + "".join(
            f'<div><dt><span class="verdict {_BADGE[s]}">{s}</span></dt><dd>{_html(meaning)}.'
            "</dd></div>" for s, meaning in STATUS_MEANINGS.items()) + "</dl>",
        "",
        "The tallies count the papers' claims only, the same set at every tier (the "
        "companion's own findings are listed apart under each paper, folded: click their "
        f"heading): **{summary(claims)}.**",
        "",
    ]
    if not claims:
        lines.append("No chapter has written claims yet.")
        return "\n".join(lines) + "\n"
    lines += ["```{figure} scorecard_summary.png", ":name: fig-scorecard-summary",
              ":alt: the papers' claims per status, per paper and tier", ":width: 40%", "",
              "The papers' claims per paper and tier, by status.", "```", "",
              _filter_form(claims), ""]
    for entry in ENTRIES:
        mine = [c for c in claims if c.paper == entry.id]
        if not mine:
            continue
        labels = chapter_labels(Path(runs) / f"{entry.id}.ipynb") if runs else set()
        papers = paper_claims(mine)
        counts = "; ".join(f"{tier}: " + counts_text(c for c in papers if c.scale == tier)
                           for tier in _tiers(papers))
        groups = by_claim(mine)
        flips = sum(flipped(g) for g in groups)
        lines += [f"## {entry.reference}", "",
                  f"*{entry.title}*. {counts}"
                  + (f"; {flips} verdict(s) flip between tiers" if flips else "")
                  + f" ([chapter]({entry.id}.ipynb)).", ""]
        hrefs = {id(g): f"{entry.id}.html#{claim_anchor(g[0], labels)}" for g in groups}
        rows = [_claim_row(g, hrefs[id(g)]) for g in groups if g[0].origin == "paper"]
        own = [g for g in groups if g[0].origin == "companion"]
        if own:
            # folded: the landing page states them; the filter unfolds them when it is set
            rows += ['<details class="companion-findings"><summary class="scorecard-group">'
                     f"Findings of the companion ({len(own)}, not tallied)</summary>",
                     *(_claim_row(g, hrefs[id(g)]) for g in own), "</details>"]
        lines += ['<div class="scorecard">', *rows, "</div>", ""]
    for chapter in COMPANION_CHAPTERS:
        lines += _companion_section(chapter, [c for c in claims if c.paper == chapter], runs)
    lines.append(_FILTER_SCRIPT)
    return "\n".join(lines) + "\n"


def _companion_section(chapter: str, mine: Sequence[Claim], runs: Path | None) -> list[str]:
    """The scorecard's section of a companion chapter: its findings, folded as the
    papers' companion findings are (none: no section)."""
    if not mine:
        return []
    labels = chapter_labels(Path(runs) / f"{chapter}.ipynb") if runs else set()
    groups = by_claim(mine)
    rows = ['<details class="companion-findings"><summary class="scorecard-group">'
            f"Findings of the companion ({len(groups)}, not tallied)</summary>",
            *(_claim_row(g, f"{chapter}.html#{claim_anchor(g[0], labels)}") for g in groups),
            "</details>"]
    return [f"## {CHAPTER_TITLES[chapter]}", "",
            "No paper's claim: the companion's own findings from running the papers' methods "
            f"side by side ([chapter]({chapter}.ipynb)).", "",
            '<div class="scorecard">', *rows, "</div>", ""]


def summary_figure(claims: Sequence[Claim], path: Path) -> None:
    """Horizontal bars per paper and tier: how many of the paper's claims have each
    status. Writes the PNG and the counts beside it as CSV."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from fedlib.papers import PAPERS as ENTRIES

    rows = []
    for entry in ENTRIES:
        for tier in _tiers([c for c in claims if c.paper == entry.id]):
            at = [c for c in paper_claims(claims) if c.paper == entry.id and c.scale == tier]
            rows.append({"paper": entry.reference, "tier": tier,
                         **{s: sum(c.status == s for c in at) for s in STATUSES}})
    table = pd.DataFrame(rows, columns=["paper", "tier", *STATUSES])
    labels = [f"{r.paper} ({r.tier})" for r in table.itertuples()]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * max(len(table), 1) + 0.9))
    left = [0] * len(table)
    colors = {HOLDS: "#2e7d32", FAILS: "#c62828", INCONCLUSIVE: "#ef8f00",
              NOT_TESTABLE: "#6a5acd", NOT_RUN: "#9e9e9e"}
    for status in STATUSES:
        values = table[status].tolist()
        ax.barh(labels, values, left=left, color=colors[status], label=WORDS[status])
        for y, (x0, width) in enumerate(zip(left, values, strict=True)):
            if width:
                ax.text(x0 + width / 2, y, str(width), ha="center", va="center",
                        color="white", fontsize=9)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("claims")
    ax.legend(ncols=5, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    with atomic_path(path.with_suffix(".csv")) as tmp:
        table.to_csv(tmp, index=False)
    plt.close(fig)


NOT_DRAWN = "The scorecard is not drawn in this build"
"""What the scorecard's page, its summary line and its figure say when it cannot be drawn."""


def not_drawn_markdown(reason: str) -> str:
    """The scorecard's page when it cannot be drawn: why (``reason``, the error, shown as
    written in a block of its own), and where the chapters say what is missing."""
    from fedlib.render.markdown import markdown_block

    return "\n".join(["# Scorecard", "", f"{NOT_DRAWN}:", "", markdown_block(reason), "",
                      "Each chapter's pages say which of their runs are not stored.", ""])


def not_drawn_figure(path: Path) -> None:
    """The scorecard's summary figure when it cannot be drawn: a line saying so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(6, 0.6))
    figure.text(0.5, 0.5, NOT_DRAWN, ha="center", va="center")
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png")
    plt.close(figure)


def write_not_drawn(markdown: Path, reason: str) -> None:
    """Put the pages of a scorecard that cannot be drawn where the drawn ones would be:
    ``markdown`` (:func:`not_drawn_markdown`), ``summary.md`` and the summary figure
    beside it (:func:`not_drawn_figure`)."""
    markdown = Path(markdown)
    with atomic_path(markdown) as tmp:
        tmp.write_text(not_drawn_markdown(reason))
    with atomic_path(markdown.parent / "summary.md") as tmp:
        tmp.write_text(f"{NOT_DRAWN}: see its page.\n")
    not_drawn_figure(markdown.parent / "scorecard_summary.png")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fedlib.render.scorecard [FOLDER] [--runs DIR] [--markdown OUT]
    [--not-drawn-page]``.

    With ``--markdown`` also writes, beside OUT, the summary figure
    (``scorecard_summary.png`` and its ``.csv``) and the landing page's findings in
    prose (``summary.md``, :func:`fedlib.render.findings.findings_markdown`). A scorecard
    that cannot be trusted (:func:`fedlib.verdicts.claims.checked_claims`) is refused:
    the reason goes to stderr and the exit status is 1; with ``--not-drawn-page`` the
    pages say why instead (:func:`write_not_drawn`) and the exit status is 0."""
    import argparse

    from fedlib.paths import claims_dir

    parser = argparse.ArgumentParser(description="Print or render the reproduction scorecard.")
    parser.add_argument("folder", type=Path, nargs="?", default=None,
                        help="folder of per-paper claims JSON files (default: the book's)")
    parser.add_argument("--runs", type=Path,
                        help="folder of the executed notebooks: claims older than their "
                        "notebook's last run are reported as stale")
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)
    parser.add_argument("--markdown", type=Path, help="write the scorecard page here")
    parser.add_argument("--not-drawn-page", action="store_true",
                        help="when the scorecard cannot be drawn, write a page saying why "
                        "in its place (with --markdown), and exit 0")
    args = parser.parse_args(argv)
    if args.not_drawn_page and args.markdown is None:
        parser.error("--not-drawn-page writes the page given by --markdown; give it")
    folder = args.folder or claims_dir()
    try:
        _draw(folder, args.runs, args.markdown)
    except ScorecardError as error:
        print(str(error), file=sys.stderr)
        if not args.not_drawn_page:
            return 1
        write_not_drawn(args.markdown, str(error))
    except Exception as error:
        if not args.not_drawn_page:
            raise
        import traceback

        traceback.print_exc()
        write_not_drawn(args.markdown, f"{type(error).__name__}: {error}")
    return 0


def _draw(folder: Path, runs: Path | None, markdown: Path | None) -> None:
    """Read and check the claims of ``folder`` (against the executed notebooks in
    ``runs``), then write the scorecard's pages (``markdown``: the page, and beside it
    the summary figure and the findings) or print it."""
    claims = checked_claims(folder, runs)
    claims = aligned_tiers(claims + stored_tier_claims(folder, claims))
    if markdown is None:
        print(scorecard_text(claims))
        return
    with atomic_path(markdown) as tmp:
        tmp.write_text(scorecard_markdown(claims, runs))
    summary_figure(claims, markdown.parent / "scorecard_summary.png")
    from fedlib.render.findings import findings_markdown

    with atomic_path(markdown.parent / "summary.md") as tmp:
        tmp.write_text(findings_markdown(claims, runs))


if __name__ == "__main__":
    raise SystemExit(run_command(main))
