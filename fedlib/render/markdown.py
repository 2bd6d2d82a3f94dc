"""Text for the book's pages: values shown as written (escaped Markdown and code
spans), and the tier badges and meanings a page opens with."""

from __future__ import annotations

import re

from fedlib.verdicts.claims import (
    COMPANION_CHAPTERS,
)

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_text(text: object) -> str:
    """``text`` as Markdown (MyST) that shows it as written: every ASCII punctuation
    character backslash-escaped (so no emphasis, link, HTML, math, role or table cell
    starts in it), its line breaks as spaces (so it stays in its paragraph, list item or
    table row) and no whitespace at its ends (which would indent a line into code, or
    end it with a line break)."""
    return _PUNCTUATION.sub(r"\\\1", " ".join(str(text).splitlines()).strip())


def _fence(text: str, least: int) -> str:
    """A run of backticks longer than any in ``text``, and at least ``least`` long: no run
    inside ``text`` can close a code span or block it opens."""
    return "`" * max(least, max(map(len, re.findall("`+", text)), default=0) + 1)


def markdown_code(text: object) -> str:
    """``text`` as a Markdown code span, however many backticks it holds (the fence is
    longer than its longest run of them), on one line."""
    text = " ".join(str(text).splitlines())
    if not text.strip():
        return markdown_text(text)
    fence = _fence(text, 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_block(text: object) -> str:
    """``text`` as a fenced block of plain text (MyST), its lines kept and shown as
    written: the fence is longer than any run of backticks in it, so no line of it
    (a fence of backticks or tildes, a directive, HTML, math) ends the block or becomes
    markup."""
    lines = str(text).splitlines() or [""]
    fence = _fence("\n".join(lines), 3)
    return "\n".join([f"{fence}text", *lines, fence])


TIER_MEANINGS = {
    "smoke": "a tiny scale that runs every code path in seconds; its numbers are not results",
    "quick": "the papers' experiments at reduced scale (fewer clients, rounds, repeats or "
             "settings), rerun in minutes",
    "paper": "the papers' own scale",
}
"""What each run tier is, in the words a page opens with."""


COMPANION_TIER_MEANINGS = {
    "quick": "the comparison at reduced scale (fewer clients and examples, a shorter "
             "schedule), rerun in minutes",
    "paper": "the comparison's larger scale, whose sizes the chapter states (no paper "
             "sets them)",
}
"""What a tier is in a chapter of the companion's own (it has no paper's scale)."""


def tier_meaning(scale: str, chapter: str) -> str:
    """What tier ``scale`` is in ``chapter``, in the words a page opens with."""
    meanings = (COMPANION_TIER_MEANINGS if chapter in COMPANION_CHAPTERS else {})
    return meanings.get(scale) or TIER_MEANINGS.get(scale, f"the {scale} tier")


def tier_badge(scale: str) -> str:
    """HTML of the badge that says which tier a figure or table belongs to."""
    from html import escape

    word = re.sub(r"[^a-z0-9-]", "", str(scale).lower())
    return f'<span class="tier-badge tier-{word}">{escape(str(scale))} tier</span>'


def with_tier_caption(table_html: str, scale: str) -> str:
    """``table_html`` (an HTML table) with a caption holding the tier badge of ``scale``."""
    match = re.search(r"<table\b[^>]*>", table_html)
    if match is None:
        raise ValueError("with_tier_caption needs the HTML of a table (no <table> tag in "
                         f"{table_html[:60]!r})")
    caption = f'<caption class="tier-caption">{tier_badge(scale)}</caption>'
    return table_html[:match.end()] + caption + table_html[match.end():]


_CAPTIONED = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?:glue:figure|figure|table)\}")


def badge_captions(markdown: str, scale: str) -> str:
    """``markdown`` (MyST) with the tier badge of ``scale`` (:func:`tier_badge`) opening the
    caption of every figure and table directive (``{glue:figure}``, ``{figure}``,
    ``{table}``); a directive without a caption gets the badge as its caption. A badge
    already there is not added again."""
    lines = markdown.split("\n")
    badge = tier_badge(scale)
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        opened = _CAPTIONED.match(line.strip())
        if opened is None:
            continue
        fence = opened.group("fence")
        while index < len(lines) and lines[index].strip().startswith(":") \
                and not lines[index].strip().startswith(fence[0] * 3):
            out.append(lines[index])  # an option, e.g. :name:
            index += 1
        blank = index
        while index < len(lines) and not lines[index].strip():
            index += 1
        if index < len(lines) and lines[index].strip().startswith(fence) \
                and not lines[index].strip().lstrip(fence[0]):
            out.extend(["", badge])  # no caption: the badge is one
            continue
        out.extend(lines[blank:index])
        if index < len(lines) and badge not in lines[index]:
            out.append(f"{badge} {lines[index]}")
            index += 1
    return "\n".join(out)
