"""Hostile input for the tests: values holding markup (``HOSTILE``, and one of each kind
in ``HOSTILE_STRINGS``) and how to check that a page shows them as written, and a folder
this process cannot write to."""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

HOSTILE = ("<script>alert(1)</script> | cell | `code` [link](javascript:x) $x^2$ *em* "
           "{sub}`role` &lt;\n\n# heading\n- item")
"""Markup of every kind a page could take from a value: HTML, a table cell's bar, a code
span, a link, math, emphasis, a MyST role, an entity, and line breaks that would start
a heading and a list."""

MARKUP = {"script", "a", "em", "h1", "li", "span", "table", "td", "code"}
"""The elements ``HOSTILE`` would make if it were read as markup."""

HOSTILE_STRINGS = {
    "fence": "```\n<script>alert(1)</script>\n```",
    "longer fence, directive": "````{eval-rst}\n.. raw:: html\n\n   <b>raw</b>\n````",
    "tilde fence": "~~~~\n<i>tilde</i>\n~~~~",
    "colon fence": ":::{note}\na note\n:::",
    "math": "$$\nx^2\n$$ and $y$ and \\(z\\)",
    "table": "| a | b |\n|---|---|\n| c | d |",
    "links": "[link](javascript:alert(1)) <https://example.org> ![img](x.png)",
    "headings": "# heading\n## sub\nline\n===",
    "MyST syntax": "{eval-rst}`.. raw:: html` {ref}`x`\n(label)=\n% comment\n+++ break",
    "indented": "    indented code\n\t- a tab\n1. one",
    "entities and breaks": "&lt;b&gt; &amp; a\\\nb  \nc<br>",
    "everything": HOSTILE,
}
"""Values that would each make one kind of markup if written into a page as they are:
fences of backticks, tildes and colons (closing a block the page opened, or opening a
MyST directive), HTML, math, a table, links, headings, MyST roles, targets, comments
and block breaks, indented code and lists, entities and line breaks."""


def markup_of(markdown: str) -> Counter[tuple[str, str, str]]:
    """What ``markdown`` makes, read as the book reads it (MyST, with its extensions):
    each token's type, tag and fence info, counted, text and line breaks aside, and each
    HTML element of the page it renders to."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(enable_extensions={"dollarmath", "colon_fence", "amsmath"})
    tokens = create_md_parser(config, RendererHTML).parse(markdown)
    made: Counter[tuple[str, str, str]] = Counter()
    while tokens:
        token = tokens.pop()
        tokens.extend(token.children or [])
        if token.type not in {"text", "text_special", "softbreak", "inline"}:
            made[(token.type, token.tag, token.info)] += 1
    made.update(("element", tag, "") for tag in re.findall(r"<(\w+)", rendered(markdown)))
    return made


def same_markup_shown_as_written(write: Callable[[str], str], value: str,
                                 plain: str = "plain words") -> str:
    """The empty string when the page ``write(value)`` makes the same markup as
    ``write(plain)`` (:func:`markup_of`) and shows ``value`` as text (whitespace aside);
    otherwise what differs."""
    page, reference = write(value), write(plain)
    made, expected = markup_of(page), markup_of(reference)
    if made != expected:
        return (f"the page makes {dict(made - expected)} more and {dict(expected - made)} "
                f"less markup than with a plain value:\n{page}")
    shown = text_of(rendered(page))
    if " ".join(value.split()) not in shown:
        return f"the page shows {shown!r}, not the value:\n{page}"
    return ""


def rendered(markdown: str) -> str:
    """``markdown`` as HTML, rendered as the book renders it (MyST, with its extensions)."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(enable_extensions={"dollarmath", "colon_fence", "amsmath"})
    return create_md_parser(config, RendererHTML).render(markdown)


def text_of(page: str) -> str:
    """The text an HTML page shows, its line breaks as spaces."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())


def shown_as_written(page: str, value: str = HOSTILE, *, allowed: set[str] = frozenset()
                     ) -> bool:
    """True when the HTML ``page`` shows ``value`` as text (whitespace aside) and holds no
    element of :data:`MARKUP` other than ``allowed`` (those the page makes itself)."""
    tags = set(re.findall(r"<(\w+)", page))
    return " ".join(value.split()) in text_of(page) and not tags & (MARKUP - allowed)


def unwritable_folder(tmp_path: Path) -> Path:
    """An existing folder this process cannot write to (a read-only one; for root, which
    writes anyway, the kernel's /sys), or the test is skipped."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        (folder / "probe").write_text("")
    except OSError:
        return folder
    (folder / "probe").unlink()
    folder.chmod(0o700)
    if Path("/sys/kernel").is_dir():
        return Path("/sys/kernel")
    pytest.skip("no folder here refuses this process's writes")
