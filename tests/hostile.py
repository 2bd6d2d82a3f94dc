"""Hostile input for the tests: a value holding markup (``HOSTILE``) and how to check
that a page shows it as written, and a folder this process cannot write to."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

HOSTILE = ("<script>alert(1)</script> | cell | `code` [link](javascript:x) $x^2$ *em* "
           "{sub}`role` &lt;\n\n# heading\n- item")
"""Markup of every kind a page could take from a value: HTML, a table cell's bar, a code
span, a link, math, emphasis, a MyST role, an entity, and line breaks that would start
a heading and a list."""

MARKUP = {"script", "a", "em", "h1", "li", "span", "table", "td", "code"}
"""The elements ``HOSTILE`` would make if it were read as markup."""


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
