"""Claims of the papers, evaluated in code, and the reproduction scorecard.

Each paper's ``claims.py`` evaluates its claims on a :class:`ClaimSheet`; the
notebook writes them to a JSON file (one per paper) in the claims folder, and
the scorecard reads every file there.
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from fedlib.papers import PAPER_IDS
from fedlib.paths import atomic_path
from fedlib.tiers import SCALES
from fedlib.verdicts import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_RUN,
    NOT_TESTABLE,
    STATUSES,
    Verdict,
)

PAPERS = PAPER_IDS
COMPANION_CHAPTERS = ("frontier",)
"""Chapters of the companion's own, beside the papers': their claims are all findings of
the companion (origin ``companion``), and their claims file is read when it is there (a
scorecard without it lacks nothing the papers claim)."""
CHAPTERS = (*PAPERS, *COMPANION_CHAPTERS)
"""Every chapter that writes claims: the papers, then the companion's own."""
CHAPTER_TITLES = {"frontier": "The methods side by side (the frontier)"}
"""How the scorecard and the landing page name a companion chapter."""
ORIGINS = ("paper", "companion")
"""Where a claim comes from: a statement of the paper, or a finding of this companion
(derived by it, not stated by the paper). The scorecard tallies the paper's claims only."""

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and the verdict of this reproduction.

    Parameters
    ----------
    paper
        Paper id, one of :data:`PAPERS`.
    claim_id
        Short id, unique within the paper (e.g. ``fig1a-global-plateau``): letters,
        digits and ``_.+-``.
    status
        One of :data:`fedlib.verdicts.STATUSES`.
    text
        The claim, stated so that it can be checked.
    evidence
        What was measured (for a comparison: n, mean, interval and margin), or why it
        was not run.
    paper_value
        What the paper reports, where it gives a number.
    scale
        Run tier the verdict comes from.
    origin
        ``paper`` (a statement of the paper) or ``companion`` (a finding of this
        companion, listed apart and not tallied).
    restated
        For a claim stated differently than before: what it said before and why it
        changed (empty otherwise).
    """

    paper: str
    claim_id: str
    status: str
    text: str
    evidence: str
    paper_value: str = ""
    scale: str = ""
    origin: str = "paper"
    restated: str = ""

    def __post_init__(self) -> None:
        if self.paper not in CHAPTERS:
            raise ValueError(f"unknown paper id {self.paper!r}; valid ids: {', '.join(CHAPTERS)}")
        if self.paper in COMPANION_CHAPTERS and self.origin != "companion":
            raise ValueError(f"the claims of the {self.paper} chapter are findings of the "
                             f"companion (origin 'companion'), got origin {self.origin!r}")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if not isinstance(self.claim_id, str) or not _ID.fullmatch(self.claim_id):
            raise ValueError(f"claim_id must be a word of letters, digits and '_.+-', "
                             f"got {self.claim_id!r}")
        if self.origin not in ORIGINS:
            raise ValueError(f"origin must be one of {ORIGINS}, got {self.origin!r}")
        if self.scale not in ("", *SCALES):
            raise ValueError(f"scale must be a run tier ({', '.join(SCALES)}) or empty, "
                             f"got {self.scale!r}")


class ClaimSheet:
    """The claims of one paper at one tier, added one by one.

    Every paper's ``claims.py`` builds its claims this way, so that a claim has one
    spelling everywhere:

    - :meth:`judged` records a verdict on noisy runs (:mod:`fedlib.verdicts`: a
      comparison declared with its margin and read over repeats);
    - :meth:`exact` records a claim with no randomness in it (a closed form, an
      accountant's number), decided by a plain True or False;
    - :meth:`not_run` records a claim that could not be evaluated, saying why.

    Examples
    --------
    >>> sheet = ClaimSheet("ppsgd", "quick")
    >>> _ = sheet.exact("fig1a-x", True, "the claim", "what was computed")
    >>> [c.status for c in sheet]
    ['HOLDS']
    """

    def __init__(self, paper: str, scale: str) -> None:
        if paper not in CHAPTERS:
            raise ValueError(f"unknown paper id {paper!r}; valid ids: {', '.join(CHAPTERS)}")
        self.paper = paper
        self.scale = scale
        self.claims: list[Claim] = []

    def _record(self, claim_id: str, status: str, text: str, evidence: str,
                paper_value: str, origin: str, restated: str) -> Claim:
        claim = Claim(paper=self.paper, claim_id=claim_id, status=status, text=text,
                      evidence=evidence, paper_value=paper_value, scale=self.scale,
                      origin=origin, restated=restated)
        if any(c.claim_id == claim_id for c in self.claims):
            raise ValueError(f"claim id {claim_id!r} is already on the {self.paper} sheet")
        self.claims.append(claim)
        return claim

    def judged(self, claim_id: str, verdict: Verdict, text: str, *, paper_value: str = "",
               origin: str = "paper", restated: str = "", context: str = "") -> Claim:
        """Record a verdict on noisy runs; ``context`` is put before its evidence."""
        evidence = f"{context}; {verdict.evidence}" if context else verdict.evidence
        return self._record(claim_id, verdict.status, text, evidence, paper_value, origin,
                            restated)

    def exact(self, claim_id: str, holds: bool, text: str, evidence: str, *,
              paper_value: str = "", origin: str = "paper", restated: str = "") -> Claim:
        """Record a claim with no randomness in it, HOLDS or FAILS by ``holds``."""
        if not isinstance(holds, bool | np.bool_):
            raise TypeError(f"holds must be a bool, got {holds!r}")
        return self._record(claim_id, HOLDS if holds else FAILS, text,
                            "exact (no randomness): " + evidence, paper_value, origin,
                            restated)

    def not_run(self, claim_id: str, text: str, reason: str, *, paper_value: str = "",
                origin: str = "paper", restated: str = "") -> Claim:
        """Record a claim that could not be evaluated; ``reason`` says why."""
        return self._record(claim_id, NOT_RUN, text, reason, paper_value, origin, restated)

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


_INTRAWORD_ASTERISK = re.compile(r"(?<=[\w)])\*(?=[\w(])")


def literal_asterisks(note: str) -> str:
    """A chapter's Markdown note with every asterisk between two words escaped, so that
    a product written ``alpha*Q`` reads as written: two of them in one paragraph would
    otherwise set the text between them in italics. Emphasis the note means (``*word*``,
    with a space or the line's edge outside) is kept."""
    return _INTRAWORD_ASTERISK.sub(r"\\*", note)


def verdict_changes(claims: Sequence[Claim], changes: dict[str, str]) -> str:
    """Markdown for a chapter: every claim whose verdict or statement changed when the
    claims were judged over repeats with declared margins (``changes``: claim id -> from
    what verdict, to what, and why), and every restated claim's note. Refuses notes on
    claims the chapter does not have."""
    ids = {c.claim_id for c in claims}
    unknown = sorted(set(changes) - ids)
    if unknown:
        raise ValueError(f"verdict-change notes name claims the chapter does not have: "
                         f"{unknown}; use the ids of its claims")
    lines = [f"- `{c.claim_id}`: {literal_asterisks(changes[c.claim_id])}" for c in claims
             if c.claim_id in changes]
    lines += [f"- `{c.claim_id}` restated: {literal_asterisks(c.restated)}" for c in claims
              if c.restated]
    return "\n".join(lines) if lines else "No verdict changed."


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


class ScorecardError(ValueError):
    """The claims folder cannot give a scorecard to trust (missing, stray, duplicated
    or stale claims); the message lists every problem and what to do."""


def load_claims(path: Path) -> list[Claim]:
    """The claims of one claims file, or a :class:`ScorecardError` naming the file when it
    is damaged (cut short, edited by hand, of another version) and saying how to get it
    again."""
    try:
        items = json.loads(Path(path).read_text())
        if not isinstance(items, list):
            raise TypeError(f"a list of claims was expected, found {type(items).__name__}")
        return [Claim(**item) for item in items]
    except (OSError, ValueError, TypeError) as error:
        raise ScorecardError(f"{path} is not a claims file ({error}); rerun the notebook that "
                             f"writes it (notebooks/{Path(path).stem}.py)") from error


def read_claims(folder: Path) -> list[Claim]:
    """All claims in ``folder/*.json``, in the papers' order (no consistency checks:
    :func:`checked_claims` is what the scorecard reads)."""
    claims: list[Claim] = []
    for path in sorted(Path(folder).glob("*.json")):
        claims.extend(load_claims(path))
    order = {p: i for i, p in enumerate(CHAPTERS)}
    return sorted(claims, key=lambda c: order[c.paper])


def _run_started(notebook: Path) -> datetime | None:
    """When papermill started executing ``notebook`` (None when it says nothing)."""
    try:
        meta = json.loads(notebook.read_text()).get("metadata", {}).get("papermill", {})
        started = datetime.fromisoformat(str(meta["start_time"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return started if started.tzinfo else started.replace(tzinfo=UTC)


def checked_claims(folder: Path, runs: Path | None = None) -> list[Claim]:
    """Every paper's claims from ``folder``, or a :class:`ScorecardError`.

    The folder must hold exactly one ``<paper>.json`` per paper (no stray copy
    whose claims would count twice, none missing), each with the claims of its
    own paper once. With ``runs`` (the folder of executed notebooks, where a
    failed run leaves ``tmp/<paper>.out.ipynb``), a claims file older than its
    notebook's last run is stale: that run failed or did not finish.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ScorecardError(f"no claims folder at {folder}: run `make rebuild-all` first "
                             "(the notebooks write their claims there)")
    problems: list[str] = []
    known = {f"{paper}.json" for paper in CHAPTERS}
    stray = sorted(p.name for p in folder.glob("*.json") if p.name not in known)
    if stray:
        problems.append(f"stray claims files {', '.join(stray)}: only <paper>.json files "
                        "belong in the claims folder; remove the others")
    unstored = _unstored_tier_claims(folder)
    missing = [paper for paper in PAPERS
               if not (folder / f"{paper}.json").is_file() and paper not in unstored]
    if missing:
        problems.append(f"no claims from {', '.join(missing)}: run `make rebuild-all` "
                        "(or those notebooks) first")
    claims: list[Claim] = []
    for paper in CHAPTERS:
        path = folder / f"{paper}.json"
        if not path.is_file():
            claims.extend(unstored.get(paper, []))
            continue
        try:
            found = load_claims(path)
        except ScorecardError as error:
            problems.append(f"{path.name} is not a claims file ({error.__cause__}); rerun "
                            "its notebook")
            continue
        others = sorted({c.paper for c in found if c.paper != paper})
        if others:
            problems.append(f"{path.name} holds claims of {', '.join(others)}")
        ids = [c.claim_id for c in found]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            problems.append(f"{path.name} lists claims twice: {', '.join(twice)}")
        if runs is not None:
            written = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
            attempts = [_run_started(Path(runs) / f"{paper}.ipynb"),
                        _run_started(Path(runs) / "tmp" / f"{paper}.out.ipynb"),
                        _run_started(Path(runs) / "tmp" / f"{paper}.out.partial.ipynb")]
            last = max((a for a in attempts if a is not None), default=None)
            if last is not None and written < last:
                problems.append(
                    f"{path.name} is stale: written {written:%Y-%m-%d %H:%M:%S} UTC, before "
                    f"the last run of notebooks/{paper}.py started ({last:%Y-%m-%d %H:%M:%S} "
                    "UTC), which failed or did not finish; rerun it")
        claims.extend(found)
    if problems:
        raise ScorecardError("the scorecard cannot be trusted:\n- " + "\n- ".join(problems))
    return claims


STORED_TIER = "paper"
"""The tier a build renders from stored (cached and published) runs beside its own."""
STORED_FOLDER = "published"
"""Sub-folder of the claims folder with the claims of :data:`STORED_TIER`."""


def _unstored_tier_claims(folder: Path) -> dict[str, list[Claim]]:
    """Per paper whose runs at the build's tier are not all stored (a site rendered from
    stored runs: ``<paper>.missing`` in place of its claims file) but whose
    :data:`STORED_TIER` claims were rendered: those claims, each as NOT-RUN at the
    build's tier (taken from the other papers' claims, else ``quick``), saying why, so
    that the scorecard still lists the paper with the same claims at both tiers."""
    stored = Path(folder) / STORED_FOLDER
    markers = {paper: folder / f"{paper}.missing" for paper in CHAPTERS
               if not (folder / f"{paper}.json").is_file()
               and (folder / f"{paper}.missing").is_file()
               and (stored / f"{paper}.json").is_file()}
    if not markers:
        return {}
    tiers = set()
    for paper in PAPERS:
        path = folder / f"{paper}.json"
        if path.is_file():
            try:
                tiers |= {c.scale for c in load_claims(path)}
            except ScorecardError:
                continue
    tier = tiers.pop() if len(tiers) == 1 else "quick"
    found: dict[str, list[Claim]] = {}
    for paper, marker in markers.items():
        try:
            at_stored = load_claims(stored / f"{paper}.json")
        except ScorecardError:
            continue
        reason = f"the {tier} tier's runs are not all stored: {marker.read_text().strip()}"
        found[paper] = [Claim(paper=c.paper, claim_id=c.claim_id, status="NOT-RUN",
                              text=c.text, evidence=reason, paper_value=c.paper_value,
                              scale=tier, origin=c.origin, restated=c.restated)
                        for c in at_stored if c.paper == paper]
    return found


def stored_tier_claims(folder: Path, main: Sequence[Claim]) -> list[Claim]:
    """The claims of :data:`STORED_TIER` rendered from stored runs, for every paper of
    ``main`` (the build's own claims, of another tier): its claims file in
    ``folder/published/`` (with each claim of ``main`` that tier does not evaluate as
    NOT-RUN, saying so), or, where that tier's runs are not all published
    (``<paper>.missing`` says how many are missing) or it was not rendered, each claim of
    ``main`` as NOT-RUN saying why. Empty when the build rendered no stored tier (no
    such folder) and for papers whose claims in ``main`` are of that tier already."""
    folder = Path(folder) / STORED_FOLDER
    claims: list[Claim] = []
    if not folder.is_dir():
        return claims
    for paper in CHAPTERS:
        mine = [c for c in main if c.paper == paper]
        if not mine or all(c.scale == STORED_TIER for c in mine):
            continue
        path, marker = folder / f"{paper}.json", folder / f"{paper}.missing"
        if path.is_file():
            stored = load_claims(path)
            ids = {c.claim_id for c in stored}
            claims.extend(stored)
            claims.extend(Claim(paper=c.paper, claim_id=c.claim_id, status="NOT-RUN",
                                text=c.text, evidence=f"not evaluated at the {STORED_TIER} "
                                "tier: its grid (named in the chapter) does not run the "
                                "setting this claim reads", paper_value=c.paper_value,
                                scale=STORED_TIER, origin=c.origin, restated=c.restated)
                          for c in mine if c.claim_id not in ids)
            continue
        reason = (f"the {STORED_TIER} tier is not published: {marker.read_text().strip()}"
                  if marker.is_file() else
                  f"the {STORED_TIER} tier was not rendered in this build")
        claims.extend(Claim(paper=c.paper, claim_id=c.claim_id, status="NOT-RUN", text=c.text,
                            evidence=reason, paper_value=c.paper_value, scale=STORED_TIER,
                            origin=c.origin, restated=c.restated)
                      for c in mine)
    return claims


def by_claim(claims: Sequence[Claim]) -> list[list[Claim]]:
    """The claims grouped per (paper, claim id), in the order first seen, each group in
    the order of the tiers."""
    groups: dict[tuple[str, str], list[Claim]] = {}
    for c in claims:
        groups.setdefault((c.paper, c.claim_id), []).append(c)
    rank = {s: i for i, s in enumerate(SCALES)}
    return [sorted(g, key=lambda c: rank.get(c.scale, len(rank))) for g in groups.values()]


def flipped(group: Sequence[Claim]) -> bool:
    """True when two tiers of one claim reach opposite verdicts (HOLDS against FAILS)."""
    return {"HOLDS", "FAILS"} <= {c.status for c in group}


def tier_comparison(claims: Sequence[Claim], stored: Sequence[Claim],
                    notes: dict[str, str] | None = None) -> str:
    """Markdown that compares a chapter's verdicts at its build's tier (``claims``) with
    those at :data:`STORED_TIER` (``stored``, from :func:`stored_tier_claims`): how many
    claims the two tiers judge alike, and every claim whose verdict flips, with the
    chapter's explanation of it from ``notes`` (claim id -> why its verdict depends on
    the tier). A flip without a note is said to be unexplained. Empty when there is no
    other tier to compare with (smoke builds, and the paper tier itself)."""
    notes = notes or {}
    if not stored:
        return ""
    unknown = sorted(set(notes) - {c.claim_id for c in claims})
    if unknown:
        raise ValueError(f"tier notes name claims the chapter does not have: {unknown}; "
                         "use the ids of its claims")
    tier = claims[0].scale if claims else "this build's"
    judged = [c for c in stored if c.status != NOT_RUN]
    if not judged:
        # The first clause of each claim's evidence says why it was not run.
        reasons = Counter(c.evidence.split("; ")[0] for c in stored)
        return (f"This build shows no {STORED_TIER}-tier verdict for this chapter: "
                + "; ".join(reason if count == len(stored) else f"{reason} ({count} claims)"
                            for reason, count in sorted(reasons.items())) + ".")
    groups = [g for g in by_claim([*claims, *stored]) if len(g) > 1]
    both = [g for g in groups if all(c.status != NOT_RUN for c in g)]
    flips = [g for g in both if flipped(g)]
    lines = [f"At the {STORED_TIER} tier: {counts_text(stored)}. Of the {len(both)} claims "
             f"judged at both tiers, the {tier} and the {STORED_TIER} tier agree on "
             f"{len(both) - len(flips)}"
             + (", so scale decides none of their verdicts." if not flips else
                "; these flip:")]
    lines.append("")
    for group in flips:
        verdicts = ", ".join(f"{c.status} at {c.scale}" for c in group)
        why = notes.get(group[0].claim_id,
                        "not explained yet: compare the evidence of the two tiers in the "
                        "claims table")
        lines.append(f"- `{group[0].claim_id}` ({verdicts}): {literal_asterisks(why)}")
    return "\n".join(lines).rstrip()


def _tiers(claims: Sequence[Claim]) -> list[str]:
    return sorted({c.scale for c in claims}, key=lambda s: (s not in SCALES, SCALES.index(s)
                                                            if s in SCALES else 0, s))


WORDS = {HOLDS: "hold", FAILS: "fail", INCONCLUSIVE: "inconclusive",
         NOT_TESTABLE: "not testable", NOT_RUN: "not run"}
"""How a count of claims of each status reads in a sentence."""


def counts_text(claims: Iterable[Claim]) -> str:
    """``12 hold, 3 fail, 4 inconclusive, 2 not testable, 1 not run``."""
    claims = list(claims)
    return ", ".join(f"{sum(c.status == s for c in claims)} {WORDS[s]}" for s in STATUSES)


def paper_claims(claims: Iterable[Claim]) -> list[Claim]:
    """The claims the papers make (the scorecard's tallies count only these)."""
    return [c for c in claims if c.origin == "paper"]


def summary(claims: Iterable[Claim]) -> str:
    """Counts of the papers' claims per tier (``paper claims at quick: 28 hold, ...``),
    then how many findings of the companion there are."""
    claims = list(claims)
    if not claims:
        return "claims: none"
    papers = paper_claims(claims)
    parts = [f"paper claims at {tier or 'an unnamed tier'}: "
             + counts_text(c for c in papers if c.scale == tier) for tier in _tiers(papers)]
    findings = len({(c.paper, c.claim_id) for c in claims if c.origin == "companion"})
    if findings:
        parts.append(f"{findings} findings of the companion (not tallied)")
    return "; ".join(parts)


def aligned_tiers(claims: Sequence[Claim]) -> list[Claim]:
    """``claims`` with every claim present at every tier of its paper: where one tier
    evaluates a claim and another does not, the other gets it as NOT-RUN saying so, so
    that every tier tallies the same set."""
    out = list(claims)
    for paper in CHAPTERS:
        mine = [c for c in claims if c.paper == paper]
        tiers = _tiers(mine)
        for group in by_claim(mine):
            have = {c.scale for c in group}
            first = group[0]
            out.extend(Claim(paper=paper, claim_id=first.claim_id, status=NOT_RUN,
                             text=first.text, evidence=f"not evaluated at the {tier} tier: "
                             "its chapter does not read this claim there",
                             paper_value=first.paper_value, scale=tier, origin=first.origin,
                             restated=first.restated)
                       for tier in tiers if tier not in have)
    return out


def scorecard_text(claims: Sequence[Claim]) -> str:
    """One line per claim and tier, ``<paper> <claim-id> <tier> <status> <text>`` (the
    tiers of a claim together; a finding of the companion says so before its text), then
    the counts of the papers' claims per tier and the claims whose verdict flips between
    tiers."""
    groups = by_claim(claims)
    lines = [f"{c.paper} {c.claim_id} {c.scale or '-'} {c.status} "
             + ("[companion finding] " if c.origin == "companion" else "") + c.text
             for group in groups for c in group]
    lines.append(summary(claims))
    flips = [f"{g[0].paper} {g[0].claim_id}" for g in groups if flipped(g)]
    if flips:
        lines.append(f"verdicts that flip between tiers: {', '.join(flips)}")
    return "\n".join(lines)


def _html(text: str) -> str:
    """``text`` escaped for HTML (quotes too, for attributes), on one line."""
    return html.escape(" ".join(str(text).split()), quote=True)


_BADGE = {HOLDS: "holds", FAILS: "fails", INCONCLUSIVE: "inconclusive",
          NOT_TESTABLE: "not-testable", NOT_RUN: "not-run"}


def chapter_labels(notebook: Path) -> set[str]:
    """The ``:name:`` labels of an executed chapter notebook (its figure and table anchors)."""
    try:
        cells = json.loads(Path(notebook).read_text()).get("cells", [])
    except (OSError, ValueError):
        return set()
    labels = set()
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        source = "".join(cell.get("source", []))
        labels |= {line.split(":name:", 1)[1].strip() for line in source.splitlines()
                   if line.strip().startswith(":name:")}
    return labels


def claim_anchor(claim: Claim, labels: set[str]) -> str:
    """The chapter anchor a claim is about: the figure its id names (``fig1a-...`` ->
    ``fig-<paper>-1a``, or the figure that shows it together with others, e.g.
    ``fig-hu2020-34`` for a Figure 3 claim), else the chapter's claims table."""
    figure = claim.claim_id.split("-", 1)[0]
    if figure.startswith("fig"):
        number = figure[3:]
        exact = f"fig-{claim.paper}-{number}"
        if exact in labels:
            return exact
        digits = "".join(ch for ch in number if ch.isdigit())
        shared = sorted(label for label in labels if label.startswith(f"fig-{claim.paper}-")
                        and digits and digits in label.rsplit("-", 1)[-1])
        if shared:
            return shared[0]
    return f"tab-{claim.paper}-claims"


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
    from fedlib.findings import deciding, exact_detail, measure

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


def _claim_row(group: Sequence[Claim], href: str) -> str:
    """One claim as a compact row: the claim in words at full width, then one line with
    a badge per tier, the measured number with its interval and a link to where the
    chapter shows it; that line unfolds the evidence (a ``<details>``, folded)."""
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
            f'<div class="evidence">{evidence}</div></details></div>')


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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fedlib.claims [FOLDER] [--runs DIR] [--markdown OUT]``.

    With ``--markdown`` also writes, beside OUT, the summary figure
    (``scorecard_summary.png`` and its ``.csv``) and the landing page's findings in
    prose (``summary.md``, :func:`fedlib.findings.findings_markdown`)."""
    import argparse

    from fedlib.paths import claims_dir

    parser = argparse.ArgumentParser(description="Print or render the reproduction scorecard.")
    parser.add_argument("folder", type=Path, nargs="?", default=None,
                        help="folder of per-paper claims JSON files (default: the book's)")
    parser.add_argument("--runs", type=Path,
                        help="folder of the executed notebooks: claims older than their "
                        "notebook's last run are reported as stale")
    parser.add_argument("--markdown", type=Path, help="write the scorecard page here")
    args = parser.parse_args(argv)
    folder = args.folder or claims_dir()
    try:
        claims = checked_claims(folder, args.runs)
    except ScorecardError as error:
        print(str(error), file=sys.stderr)
        return 1
    claims = aligned_tiers(claims + stored_tier_claims(folder, claims))
    if args.markdown:
        with atomic_path(args.markdown) as tmp:
            tmp.write_text(scorecard_markdown(claims, args.runs))
        summary_figure(claims, args.markdown.parent / "scorecard_summary.png")
        from fedlib.findings import findings_markdown

        with atomic_path(args.markdown.parent / "summary.md") as tmp:
            tmp.write_text(findings_markdown(claims, args.runs))
    else:
        print(scorecard_text(claims))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
