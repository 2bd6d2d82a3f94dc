"""The paper's words a claim quotes, checked against the paper's text: the passages of a
:attr:`fedlib.verdicts.claims.Claim.quote` and whether each is in the text word for word."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

PAPERS = Path(os.environ.get("FEDLIB_PAPER_TEXTS", "")
              or Path(__file__).resolve().parents[2] / "shared" / "papers")
"""The papers' texts (beside the checkout, or where ``FEDLIB_PAPER_TEXTS`` says)."""


def passages(quote: str) -> list[str]:
    """The quoted passages of a claim's quote (the words inside its quotation marks)."""
    return re.findall("\u201c(.*?)\u201d", quote)


def _flat(text: str) -> str:
    return " ".join(text.replace("*", "").split())


def not_in_paper(paper: str, quotes: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pieces of the ``(claim id, quote)`` pairs not found word for word in the text of
    ``paper`` (a file name in :data:`PAPERS`; a passage's ``...`` separates its pieces).
    Skips the test when the text is not there."""
    path = PAPERS / paper
    if not path.is_file():
        pytest.skip(f"no paper text at {path}: set FEDLIB_PAPER_TEXTS to its folder")
    text = _flat(path.read_text())
    return [(claim_id, piece) for claim_id, quote in quotes for passage in passages(quote)
            for piece in passage.split("...") if _flat(piece) not in text]
