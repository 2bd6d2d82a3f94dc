"""Claims of the papers, evaluated in code: the claim model, the sheet a chapter judges
its claims on, the claims files the notebooks write and the scorecard reads, and the
comparison of a build's verdicts with the paper tier's.

Each paper's ``claims.py`` evaluates its claims on a :class:`ClaimSheet`; the
notebook writes them to a JSON file (one per paper) in the claims folder, and
:mod:`fedlib.render.scorecard` reads every file there.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from fedlib.papers import PAPER_IDS
from fedlib.paths import atomic_path
from fedlib.tiers import SCALES
from fedlib.verdicts.compare import (
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


RESOLUTION = "{resolution}"
"""Where a margin's rationale says what the metric resolves (how far one test example, one
grid step or one seed moves it), which only the runs a claim reads can tell: a chapter
writes this mark in the rationale and :meth:`ClaimSheet.judged` fills it in from
``resolution`` (it refuses evidence that still holds the mark)."""


def quoted(*passages: tuple[str, str]) -> str:
    """A claim's :attr:`Claim.quote`: the paper's words, each ``(words, where)`` set in
    quotation marks and followed by where they are (``“...”, Section 5.2.1``), joined by
    semicolons. Words left out of a passage are marked ``...`` in ``words``, which are
    otherwise the paper's own, as its text has them.

    Examples
    --------
    >>> quoted(("PFA+ attains a model performance very close to PFA", "Section 5.2.1"))
    '“PFA+ attains a model performance very close to PFA”, Section 5.2.1'
    """
    for words, where in passages:
        if not words.strip() or not where.strip():
            raise ValueError(f"a quoted passage needs words and where they are, got "
                             f"{(words, where)!r}")
    return "; ".join(f"\u201c{words}\u201d, {where}" for words, where in passages)


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
        One of :data:`fedlib.verdicts.compare.STATUSES`.
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
        changed (empty otherwise); also where the claim tests less or other than the
        sentence it quotes, and why.
    quote
        The paper's own words the claim tests, in quotation marks, with where they are
        (e.g. ``“... fluctuates around 0.1 in Fig. 3(c).”, Section 5.2.1``, as
        :func:`quoted` sets them); words left out are marked ``...``. Empty for a finding
        of the companion, which quotes no one.
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
    quote: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.quote, str):
            raise TypeError(f"quote must be a string (the paper's words, or empty), got "
                            f"{self.quote!r}")
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
        if self.quote and self.origin == "companion":
            raise ValueError(f"claim {self.claim_id!r} is a finding of the companion: it "
                             "quotes no sentence of the paper (leave quote empty)")


class ClaimSheet:
    """The claims of one paper at one tier, added one by one.

    Every paper's ``claims.py`` builds its claims this way, so that a claim has one
    spelling everywhere:

    - :meth:`judged` records a verdict on noisy runs (:mod:`fedlib.verdicts.compare`: a
      comparison declared with its margin and read over repeats);
    - :meth:`exact` records a claim with no randomness in it (a closed form, an
      accountant's number), decided by a plain True or False;
    - :meth:`not_run` records a claim that could not be evaluated, saying why.

    Each takes the paper's value (``paper_value``), the sentence of the paper the claim
    tests (``quote``), its origin and, for a restated claim, what changed (``restated``).

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
                paper_value: str, origin: str, restated: str, quote: str) -> Claim:
        if RESOLUTION in evidence:
            raise ValueError(f"the evidence of claim {claim_id!r} still holds the mark "
                             f"{RESOLUTION}: give judged() the resolution= its margin's "
                             "rationale asks for")
        claim = Claim(paper=self.paper, claim_id=claim_id, status=status, text=text,
                      evidence=evidence, paper_value=paper_value, scale=self.scale,
                      origin=origin, restated=restated, quote=quote)
        if any(c.claim_id == claim_id for c in self.claims):
            raise ValueError(f"claim id {claim_id!r} is already on the {self.paper} sheet")
        self.claims.append(claim)
        return claim

    def judged(self, claim_id: str, verdict: Verdict, text: str, *, paper_value: str = "",
               origin: str = "paper", restated: str = "", context: str = "",
               quote: str = "", resolution: str = "") -> Claim:
        """Record a verdict on noisy runs; ``context`` is put before its evidence.

        ``resolution`` is what the metric the claim compares resolves on the runs it reads
        (how far one test example moves it, over how many seeds): it takes the place of
        every :data:`RESOLUTION` mark in the evidence (a margin's rationale), and where
        the evidence holds none (a claim of several comparisons lists each by its numbers,
        without its margin's rationale) it closes the evidence, so that every margin is
        read beside what the metric resolves."""
        evidence = f"{context}; {verdict.evidence}" if context else verdict.evidence
        if resolution and RESOLUTION in evidence:
            evidence = evidence.replace(RESOLUTION, resolution)
        elif resolution:
            evidence = f"{evidence}; what the metric resolves: {resolution}"
        return self._record(claim_id, verdict.status, text, evidence, paper_value, origin,
                            restated, quote)

    def exact(self, claim_id: str, holds: bool, text: str, evidence: str, *,
              paper_value: str = "", origin: str = "paper", restated: str = "",
              quote: str = "") -> Claim:
        """Record a claim with no randomness in it, HOLDS or FAILS by ``holds``."""
        if not isinstance(holds, bool | np.bool_):
            raise TypeError(f"holds must be a bool, got {holds!r}")
        return self._record(claim_id, HOLDS if holds else FAILS, text,
                            "exact (no randomness): " + evidence, paper_value, origin,
                            restated, quote)

    def not_run(self, claim_id: str, text: str, reason: str, *, paper_value: str = "",
                origin: str = "paper", restated: str = "", quote: str = "") -> Claim:
        """Record a claim that could not be evaluated; ``reason`` says why."""
        return self._record(claim_id, NOT_RUN, text, reason, paper_value, origin, restated,
                            quote)

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


class UnreadableNotebookError(ValueError):
    """An executed notebook that is there but cannot be read: cut short while being saved
    (a full disk, a killed process), so nothing says when its run started."""


def _run_started(notebook: Path) -> datetime | None:
    """When papermill started executing ``notebook``: None when there is no such file, or
    it does not say; an :class:`UnreadableNotebookError` naming it when the file is there
    but is not a notebook's JSON."""
    try:
        book = json.loads(notebook.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:  # UnicodeDecodeError is a ValueError
        reason = (error.strerror if isinstance(error, OSError) else None) or \
            " ".join(str(error).split())[:120]
        raise UnreadableNotebookError(f"{notebook} cannot be read ({reason})") from error
    if not isinstance(book, dict):
        raise UnreadableNotebookError(f"{notebook} cannot be read (it holds JSON but no "
                                      "notebook)")
    meta = book.get("metadata")
    meta = meta.get("papermill") if isinstance(meta, dict) else None
    try:
        started = datetime.fromisoformat(str(meta["start_time"]))  # type: ignore[index]
    except (ValueError, KeyError, TypeError):
        return None
    return started if started.tzinfo else started.replace(tzinfo=UTC)


def run_attempts(runs: Path, paper: str) -> list[Path]:
    """Where the runs of ``paper``'s notebook leave their notebooks in ``runs`` (the
    folder of executed notebooks): the finished run's, a failed build run's
    (``tmp/<paper>.out.ipynb``), and the partial notebooks of a build run and of a
    render from stored runs that did not finish (``*.partial.ipynb``)."""
    runs = Path(runs)
    return [runs / f"{paper}.ipynb", runs / "tmp" / f"{paper}.out.ipynb",
            runs / "tmp" / f"{paper}.out.partial.ipynb", runs / f"{paper}.partial.ipynb"]


def checked_claims(folder: Path, runs: Path | None = None) -> list[Claim]:
    """Every paper's claims from ``folder``, or a :class:`ScorecardError`.

    The folder must hold exactly one ``<paper>.json`` per paper (no stray copy
    whose claims would count twice, none missing), each with the claims of its
    own paper once. With ``runs`` (the folder of executed notebooks, where a
    failed run leaves ``tmp/<paper>.out.ipynb``: :func:`run_attempts`), a claims file
    older than its notebook's last run is stale: that run failed or did not finish. A
    notebook of those runs that cannot be read (cut short while being saved, e.g. on a
    full disk) says nothing of when its run started, so its paper's claims cannot be
    trusted either: it is named.
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
            attempts = []
            for notebook in run_attempts(Path(runs), paper):
                try:
                    attempts.append(_run_started(notebook))
                except UnreadableNotebookError as error:
                    problems.append(
                        f"{error}: a run of notebooks/{paper}.py was cut short while saving "
                        f"it (a full disk, or a killed process), so {path.name} may hold the "
                        "claims of an earlier run; make room and rerun the chapter, which "
                        "replaces the file")
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
        found[paper] = [replace(c, status=NOT_RUN, evidence=reason, scale=tier)
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
            claims.extend(replace(c, status=NOT_RUN, evidence=f"not evaluated at the "
                                  f"{STORED_TIER} tier: its grid (named in the chapter) "
                                  "does not run the setting this claim reads",
                                  scale=STORED_TIER)
                          for c in mine if c.claim_id not in ids)
            continue
        reason = (f"the {STORED_TIER} tier is not published: {marker.read_text().strip()}"
                  if marker.is_file() else
                  f"the {STORED_TIER} tier was not rendered in this build")
        claims.extend(replace(c, status=NOT_RUN, evidence=reason, scale=STORED_TIER)
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
            out.extend(replace(first, status=NOT_RUN, evidence=f"not evaluated at the "
                               f"{tier} tier: its chapter does not read this claim there",
                               scale=tier)
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

