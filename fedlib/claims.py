"""Claims of the papers, evaluated in code, and the reproduction scorecard.

Each paper's ``claims.py`` evaluates its claims on a :class:`ClaimSheet`; the
notebook writes them to a JSON file (one per paper) in the claims folder, and
the scorecard reads every file there.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from fedlib.papers import PAPER_IDS
from fedlib.paths import atomic_path

PAPERS = PAPER_IDS
STATUSES = ("HOLDS", "FAILS", "NOT-RUN")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and the verdict of this reproduction.

    Parameters
    ----------
    paper
        Paper id, one of :data:`PAPERS`.
    claim_id
        Short id, unique within the paper (e.g. ``fig1a-global-plateau``).
    status
        ``HOLDS``, ``FAILS`` or ``NOT-RUN``.
    text
        The claim, stated so that it can be checked.
    evidence
        What was measured (numbers), or why it was not run.
    paper_value
        What the paper reports, where it gives a number.
    scale
        Run tier the verdict comes from.
    """

    paper: str
    claim_id: str
    status: str
    text: str
    evidence: str
    paper_value: str = ""
    scale: str = ""

    def __post_init__(self) -> None:
        if self.paper not in PAPERS:
            raise ValueError(f"unknown paper id {self.paper!r}; valid ids: {', '.join(PAPERS)}")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if not self.claim_id or any(c.isspace() for c in self.claim_id):
            raise ValueError(f"claim_id must be a non-empty word, got {self.claim_id!r}")


def verdict(holds: bool) -> str:
    """``HOLDS`` or ``FAILS``."""
    return "HOLDS" if holds else "FAILS"


class ClaimSheet:
    """The claims of one paper at one tier, added one by one.

    Every paper's ``claims.py`` builds its claims this way, so that a claim has
    one spelling everywhere: ``holds`` is True (HOLDS), False (FAILS) or None
    (NOT-RUN: the evidence then says why it was not run).

    Examples
    --------
    >>> sheet = ClaimSheet("ppsgd", "quick")
    >>> _ = sheet.add("fig1a-x", True, "the claim", "what was measured")
    >>> [c.status for c in sheet]
    ['HOLDS']
    """

    def __init__(self, paper: str, scale: str) -> None:
        if paper not in PAPERS:
            raise ValueError(f"unknown paper id {paper!r}; valid ids: {', '.join(PAPERS)}")
        self.paper = paper
        self.scale = scale
        self.claims: list[Claim] = []

    def add(self, claim_id: str, holds: bool | None, text: str, evidence: str,
            paper_value: str = "") -> Claim:
        """Record one claim: ``holds`` True, False or None (not run)."""
        if holds is not None and not isinstance(holds, bool):
            holds = bool(holds)  # numpy booleans from comparisons
        status = "NOT-RUN" if holds is None else verdict(holds)
        claim = Claim(paper=self.paper, claim_id=claim_id, status=status, text=text,
                      evidence=evidence, paper_value=paper_value, scale=self.scale)
        if any(c.claim_id == claim_id for c in self.claims):
            raise ValueError(f"claim id {claim_id!r} is already on the {self.paper} sheet")
        self.claims.append(claim)
        return claim

    def extend(self, claims: Iterable[Claim]) -> None:
        """Add claims evaluated elsewhere (they must be of this paper)."""
        for claim in claims:
            if claim.paper != self.paper:
                raise ValueError(f"claim {claim.claim_id!r} is of paper {claim.paper!r}, "
                                 f"not {self.paper!r}")
            if any(c.claim_id == claim.claim_id for c in self.claims):
                raise ValueError(f"claim id {claim.claim_id!r} is already on the sheet")
            self.claims.append(claim)

    def __iter__(self):
        return iter(self.claims)

    def __len__(self) -> int:
        return len(self.claims)


def write_claims(path: Path, claims: Sequence[Claim]) -> None:
    """Write one paper's claims as JSON, atomically."""
    papers = {c.paper for c in claims}
    if len(papers) > 1:
        raise ValueError(f"a claims file holds one paper's claims, got {sorted(papers)}")
    ids = [c.claim_id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate claim ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps([asdict(c) for c in claims], indent=1))


def read_claims(folder: Path) -> list[Claim]:
    """All claims in ``folder/*.json``, in the papers' order."""
    claims: list[Claim] = []
    for path in sorted(Path(folder).glob("*.json")):
        claims.extend(Claim(**item) for item in json.loads(path.read_text()))
    order = {p: i for i, p in enumerate(PAPERS)}
    return sorted(claims, key=lambda c: order[c.paper])


def summary(claims: Iterable[Claim]) -> str:
    claims = list(claims)
    counts = {s: sum(c.status == s for c in claims) for s in STATUSES}
    return (
        f"claims: {counts['HOLDS']} hold, {counts['FAILS']} fail, {counts['NOT-RUN']} not run"
    )


def scorecard_text(claims: Sequence[Claim]) -> str:
    """One line per claim, ``<paper> <claim-id> <status> <text>``, then the counts."""
    lines = [f"{c.paper} {c.claim_id} {c.status} {c.text}" for c in claims]
    lines.append(summary(claims))
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def scorecard_markdown(claims: Sequence[Claim]) -> str:
    """The scorecard as a MyST page (a table of every claim)."""
    lines = [
        "# Scorecard",
        "",
        "Every claim the chapters check, evaluated in code on the last build. "
        "A claim that does not hold is listed as failing, with what was measured.",
        "",
        f"**{summary(claims)}.**",
        "",
    ]
    if not claims:
        lines.append("No chapter has written claims yet.")
        return "\n".join(lines) + "\n"
    lines += [
        "| paper | claim | verdict | claim text | measured | paper | tier |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in claims:
        lines.append(
            f"| {c.paper} | `{c.claim_id}` | **{c.status}** | {_cell(c.text)} | "
            f"{_cell(c.evidence)} | {_cell(c.paper_value)} | {c.scale} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fedlib.claims FOLDER [--markdown OUT]``."""
    import argparse

    parser = argparse.ArgumentParser(description="Print or render the reproduction scorecard.")
    parser.add_argument("folder", type=Path, help="folder of per-paper claims JSON files")
    parser.add_argument("--markdown", type=Path, help="write the scorecard page here")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(
            f"no claims folder at {args.folder}: run `make rebuild-all` first "
            "(the notebooks write their claims there)",
            file=sys.stderr,
        )
        return 1
    claims = read_claims(args.folder)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(scorecard_markdown(claims))
    else:
        print(scorecard_text(claims))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
