"""What the evaluated claims found, in words: the landing page's findings.

Two parts, both generated from the claims the chapters write, so that no number in them
can go stale:

- :func:`measure` reads a claim's evidence back into the number it was judged on (a
  difference or a value, its 95% interval, the margin it was compared with), for the
  scorecard's one-line numbers and for the prose;
- :func:`findings_markdown` writes, per paper, two or three sentences on what holds and
  what does not at the papers' scale (the paper tier where its claims are run, else the
  build's own tier, named), then what the companion's own findings say.

Which claims the prose names is decided by rule, never by hand: per paper the claim
that holds most clearly and the one that fails most clearly, where "clearly" is how far
the interval lies beyond the claim's margin (:attr:`Measure.score`). The prose names no
claim id: it states each claim in words and links to the chapter and the scorecard.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fedlib.render.anchors import chapter_labels, claim_anchor
from fedlib.render.markdown import markdown_text
from fedlib.tiers import SCALES
from fedlib.verdicts.claims import (
    CHAPTER_TITLES,
    COMPANION_CHAPTERS,
    STORED_TIER,
    Claim,
    by_claim,
    paper_claims,
)
from fedlib.verdicts.compare import FAILS, HOLDS, INCONCLUSIVE, NOT_RUN, NOT_TESTABLE, STATUSES

_NUM = r"[+-]?(?:\d+(?:\.\d*)?(?:e[+-]?\d+)?|inf|nan)"
_EST = (rf"(?:(?P<mean>{_NUM}) \[(?P<low>{_NUM}), (?P<high>{_NUM})\] "
        r"\((?P<n>n=\d+ [a-z ]+?), \d+% interval\)"
        rf"|(?P<exact>{_NUM}) exactly \(the same in all (?P<exact_n>\d+ [a-z ]+?)\))")
"""An estimate as :meth:`fedlib.verdicts.compare.Estimate.text` writes it: a mean and its
interval, or an exact value (the same at every seed)."""
_FULL = re.compile(rf"claim (?P<stmt>[^;]+?) (?P<op>[<>]) (?P<bound>{_NUM}); "
                   rf"(?P<arms>[^;]+); difference {_EST}; margin (?P<margin>{_NUM})")
_BRIEF = re.compile(rf"(?P<a>[^;:()|]+?) {_NUM}, (?P<b>[^;:()|]+?) {_NUM}, "
                    rf"difference {_EST}, margin (?P<margin>{_NUM})")
_WITHIN = re.compile(rf"claim (?P<what>[^;]+?) within (?P<margin>{_NUM}) of "
                     rf"(?P<target>{_NUM}); measured {_EST}")
_ARMS = re.compile(rf"(?P<a>.+?) {_NUM} \[{_NUM}, {_NUM}\] \([^()]*\), "
                   rf"(?P<b>.+?) {_NUM} \[{_NUM}, {_NUM}\] \([^()]*\)")
_STATUS = "|".join(re.escape(s) for s in STATUSES)
_OPENS = re.compile(rf"(?P<label>(?:[^|();]|\([^()]*\))+): (?P<status>{_STATUS}) \Z")
"""A part of a combined claim opening: ``label: STATUS (``, the parenthesis excluded."""
_PART = re.compile(rf"(?:[^|();\s]|\([^()]*\))(?:[^|();]|\([^()]*\))*: (?:{_STATUS}) \(")
"""A part of a combined claim, from the start of its label."""
EXACT = "exact (no randomness): "
"""How the evidence of a claim with no randomness in it begins."""


@dataclass(frozen=True)
class Measure:
    """The number a claim (or one part of it) was judged on, read from its evidence.

    Parameters
    ----------
    status
        The verdict of the part the number comes from.
    where
        The labels of the parts that enclose it, outermost first (empty for a claim
        of one comparison).
    what
        What was measured, in words (``final training loss of 1-1-1 minus 0-1-2``).
    mean, low, high
        The mean over repeats and its 95% interval.
    text
        The mean and interval as the evidence writes them (``0.138 [0.103, 0.174]``).
    n
        How many repeats (``n=3 paired seeds``).
    margin
        The claim's margin (>= 0).
    bounds
        The values the interval is compared with: the signed margin of a comparison
        (both signs when the evidence does not say which), or the two ends of the band
        of a claim that a value is within ``margin`` of a target.
    band
        True for a value-within-a-band claim, False for a comparison.
    depth
        How many labelled parts enclose it (0: it is the claim's own comparison).
    """

    status: str
    where: str
    what: str
    mean: float
    low: float
    high: float
    text: str
    n: str
    margin: float
    bounds: tuple[float, ...]
    band: bool = False
    depth: int = 0

    @property
    def clearance(self) -> float:
        """How far the interval lies from where the verdict would change: beyond the
        margin (or inside the band) by this much; 0 when it straddles it."""
        if self.band:
            lo, hi = self.bounds
            if lo <= self.low and self.high <= hi:
                return min(self.low - lo, hi - self.high)
            return max(self.low - hi, lo - self.high, 0.0)
        return min(max(self.low - b, b - self.high, 0.0) for b in self.bounds)

    @property
    def score(self) -> float:
        """:attr:`clearance` in units of the larger of the margin and the interval's
        half-width: how clearly the verdict is decided, comparable across claims."""
        unit = max(self.margin, (self.high - self.low) / 2, 1e-12)
        return self.clearance / unit

    def sentence(self) -> str:
        """``final training loss, 1-1-1 minus 0-1-2: 0.138 [0.103, 0.174], 95% interval
        over 3 paired seeds, margin 0.02``, with the part it comes from first."""
        head = f"{self.where}: " if self.where else ""
        spread = f"95% interval over {self.n.removeprefix('n=')}"
        if self.band:
            lo, hi = self.bounds
            return (f"{head}{self.what}: {self.text}, {spread}, against {(lo + hi) / 2:.3g} "
                    f"within {(hi - lo) / 2:.3g}")
        return f"{head}{self.what}: {self.text}, {spread}, margin {self.margin:.3g}"


_LINKING_WORDS = frozenset({"vs", "to", "and", "of", "at", "in", "on", "the"})


def _where(labels: Sequence[str], what: str) -> str:
    """The labels worth saying: those naming something the description of the number
    does not (``vs 1-1-1`` says nothing more than ``0-1-2 minus 1-1-1``)."""
    said = set(re.findall(r"[^\s,:()]+", what))
    kept = [label for label in labels
            if not set(re.findall(r"[^\s,:()]+", label)) - _LINKING_WORDS <= said]
    return ", ".join(kept)


def _stacks(evidence: str, starts: set[int]) -> dict[int, list[tuple[str, str]]]:
    """For each position in ``starts``, the labelled parts (label, status) open there."""
    stack: list[tuple[str, str] | None] = []
    found: dict[int, list[tuple[str, str]]] = {}
    for i, char in enumerate(evidence):
        if i in starts:
            found[i] = [entry for entry in stack if entry is not None]
        if char == "(":
            opened = _OPENS.search(evidence, 0, i)
            stack.append((opened["label"].strip(), opened["status"]) if opened else None)
        elif char == ")" and stack:
            stack.pop()
    return found


def measures(evidence: str, status: str) -> list[Measure]:
    """Every number a claim's evidence judges (each comparison, each value against a
    band), in the order written; ``status`` (the claim's) is the verdict of a number
    that no labelled part encloses."""
    matches: list[tuple[int, str, re.Match[str]]] = []
    for kind, pattern in (("full", _FULL), ("brief", _BRIEF), ("within", _WITHIN)):
        matches += [(m.start(), kind, m) for m in pattern.finditer(evidence)]
    taken: list[tuple[int, int]] = []
    chosen = []
    for start, kind, match in sorted(matches, key=lambda m: (m[0], m[1] != "full")):
        if any(a <= start < b for a, b in taken):
            continue
        taken.append((start, match.end()))
        chosen.append((start, kind, match))
    stacks = _stacks(evidence, {start for start, _, _ in chosen})
    out: list[Measure] = []
    for start, kind, match in chosen:
        parts = stacks.get(start, [])
        part_status = parts[-1][1] if parts else status
        labels = [label for label, _ in parts]
        if match["exact"] is not None:
            mean = low = high = float(match["exact"])
            text, n = f"{match['exact']} exactly", f"n={match['exact_n']}"
        else:
            mean, low, high = (float(match[k]) for k in ("mean", "low", "high"))
            text, n = f"{match['mean']} [{match['low']}, {match['high']}]", match["n"]
        margin = abs(float(match["margin"]))
        if kind == "within":
            target = float(match["target"])
            what = match["what"]
            out.append(Measure(part_status, _where(labels, what), what, mean, low, high,
                               text, n, margin, (target - margin, target + margin),
                               band=True, depth=len(parts)))
            continue
        if kind == "full":
            stmt, arms = match["stmt"], _ARMS.fullmatch(match["arms"])
            prefix = f"{arms['a']} - {arms['b']} in " if arms else None
            if prefix and stmt.startswith(prefix):
                what = f"{stmt[len(prefix):]}, {arms['a']} minus {arms['b']}"
            else:
                what = stmt
            bounds: tuple[float, ...] = (float(match["bound"]),)
        else:
            what = f"{match['a'].strip()} minus {match['b'].strip()}"
            bounds = (margin, -margin) if margin else (0.0,)
        out.append(Measure(part_status, _where(labels, what), what, mean, low, high, text,
                           n, margin, bounds, depth=len(parts)))
    return out


def measure(claim: Claim) -> Measure | None:
    """The number that decides ``claim``'s verdict, or None when its evidence judges
    none (an exact computation, a claim not run, a list of grid points).

    Of the numbers whose part has the claim's verdict (the claim's own comparison
    first, where it has one beside its parts): for a claim that holds, the one that
    holds least clearly (every part had to hold); for one that fails, the one that
    fails most clearly; otherwise the first."""
    found = measures(claim.evidence, claim.status)
    if not found:
        return None
    same = [m for m in found if m.status == claim.status] or found
    same = [m for m in same if m.depth == 0] or same
    if claim.status == HOLDS:
        return min(same, key=lambda m: m.score)
    if claim.status == FAILS:
        return max(same, key=lambda m: m.score)
    return same[0]


def exact_detail(claim: Claim, limit: int = 200) -> str:
    """What an exact claim computed (its evidence after :data:`EXACT`), cut at a clause
    boundary to at most ``limit`` characters; empty for any other claim."""
    if not claim.evidence.startswith(EXACT):
        return ""
    detail = claim.evidence[len(EXACT):].strip()
    if len(detail) <= limit:
        return detail
    cut = max(detail.rfind("; ", 0, limit), detail.rfind(", ", 0, limit))
    return detail[:cut if cut > limit // 2 else limit].rstrip(" ,;") + " ..."


_REASON = re.compile(r"(the interval|the arms|the difference|both arms|every |one repeat|"
                     r"no runs|the best point|best point|needs \d+ of|[^;]* is ahead beyond)")
"""How the verdicts' own reasons begin (they are not context the chapter set)."""


def context(claim: Claim, limit: int = 160) -> str:
    """The setting a chapter put before a claim's evidence (``evaluated on MNIST-MLR:
    ...``, ``judged at R=T=30``): the first clause before any part or number that is not
    a verdict's reason, when it is at most ``limit`` characters; empty otherwise."""
    evidence = claim.evidence
    if evidence.startswith(EXACT):
        return ""
    ends = [m.start() for pattern in (_FULL, _BRIEF, _WITHIN) for m in pattern.finditer(evidence)]
    ends += [m.start() for m in _PART.finditer(evidence)]
    head = evidence[:min(ends, default=len(evidence))]
    for clause in head.split("; "):
        clause = clause.strip()
        if not clause or _REASON.match(clause):
            continue
        return clause if len(clause) <= limit else ""
    return ""


def numbers(claim: Claim) -> str:
    """The claim's deciding number in words (:meth:`Measure.sentence`), then the setting
    the chapter states for it (:func:`context`), or what an exact claim computed; empty
    when its evidence judges no number."""
    found = measure(claim)
    if found is not None:
        setting = context(claim)
        return "measured " + found.sentence() + (f"; {setting}" if setting else "")
    detail = exact_detail(claim)
    return f"computed exactly: {detail}" if detail else ""


# --- prose -----------------------------------------------------------------------------

_COUNT_WORDS = {HOLDS: ("holds", "hold"), FAILS: ("fails", "fail"),
                INCONCLUSIVE: ("is inconclusive", "are inconclusive"),
                NOT_TESTABLE: ("is not testable", "are not testable"),
                NOT_RUN: ("is not run", "are not run")}


def _words(text: str) -> str:
    """``text`` shown as written (:func:`fedlib.render.markdown.markdown_text`), its runs
    of whitespace single spaces and none at its ends, so that it can sit inside
    emphasis."""
    return markdown_text(" ".join(text.split()))


def _and(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _counts(claims: Sequence[Claim]) -> str:
    """``4 hold, 3 fail and 5 are not testable`` (statuses with no claim left out)."""
    parts = []
    for status in STATUSES:
        count = sum(c.status == status for c in claims)
        if count:
            parts.append(f"{count} {_COUNT_WORDS[status][count != 1]}")
    return _and(parts) or "none is judged"


@dataclass(frozen=True)
class Links:
    """Where a sentence links to: the chapters (and their figure anchors, where the
    executed notebooks are at hand) and the scorecard's rows."""

    runs: Path | None = None
    """Folder of the executed notebooks (the chapters' labels are read from them)."""
    prefix: str = "generated/"
    """Path from the page that shows the findings to the generated pages."""

    def chapter(self, claim: Claim) -> str:
        """A Markdown link to where the chapter of ``claim``'s tier shows it."""
        stored = claim.scale == STORED_TIER and self._stored(claim.paper)
        doc = f"{self.prefix}{'published/' if stored else ''}{claim.paper}"
        if self.runs is None:
            return f"[chapter]({doc}.ipynb)"
        notebook = Path(self.runs) / ("published" if stored else "") / f"{claim.paper}.ipynb"
        labels = chapter_labels(notebook)
        tag = "paper-" if stored else ""
        plain = {label.removeprefix(tag) for label in labels}
        anchor = tag + claim_anchor(claim, plain)
        if anchor not in labels:
            return f"[chapter]({doc}.ipynb)"
        return f"{{ref}}`chapter <{anchor}>`"

    def scorecard(self, claim: Claim) -> str:
        """A link to the claim's row on the scorecard (raw HTML: the rows are HTML)."""
        return (f'<a href="{self.prefix}scorecard.html#claim-{claim.paper}-'
                f'{claim.claim_id}">scorecard</a>')

    def _stored(self, paper: str) -> bool:
        return self.runs is None or (Path(self.runs) / "published" / f"{paper}.ipynb").is_file()


def _cited(claim: Claim, links: Links) -> str:
    """``*the claim*; measured ... (chapter, scorecard)``."""
    said = numbers(claim)
    refs = f"({links.chapter(claim)}, {links.scorecard(claim)})"
    return f"*{_words(claim.text)}*" + (f"; {_words(said)} " if said else " ") + refs


def deciding(group: Sequence[Claim]) -> Claim:
    """The verdict of a claim that speaks for the papers' scale: the paper tier's where
    the claim is run there, else that of the largest tier that runs it (else the first)."""
    judged = [c for c in group if c.status != NOT_RUN]
    paper = [c for c in judged if c.scale == STORED_TIER]
    if paper:
        return paper[0]
    return judged[-1] if judged else group[0]


def _clearest(claims: Sequence[Claim], status: str) -> Claim | None:
    """Of ``claims`` with ``status``, the one decided most clearly: those at the paper
    tier first, then those with a measured interval (by :attr:`Measure.score`), then
    exact computations; ties in the chapter's order."""
    chosen = [c for c in claims if c.status == status]
    if not chosen:
        return None

    def rank(c: Claim) -> tuple[int, int, float]:
        found = measure(c)
        kind = 0 if found is not None else 1 if c.evidence.startswith(EXACT) else 2
        return (c.scale != STORED_TIER, kind, -(found.score if found else 0.0))

    return min(chosen, key=rank)


def _not_run_reason(claims: Sequence[Claim]) -> tuple[str, str]:
    """How the paper tier stands when it judged none of ``claims`` (not run, or run
    without a verdict), and why, in a few words (empty when the evidence says nothing
    this function knows)."""
    text = " ".join(c.evidence for c in claims)
    if "not published" in text or "neither cached nor published" in text:
        return "is not yet run for this paper", "its runs are not all computed yet"
    if "one repeat" in text:
        return ("judges none of its claims yet",
                "it has one repeat only, too few to judge a difference")
    if "not rendered" in text:
        return "is not yet run for this paper", "this build did not render it"
    return "is not yet run for this paper", ""


def paper_findings(claims: Sequence[Claim], reference: str, title: str,
                   links: Links) -> str:
    """Two or three sentences on one paper's claims (all tiers of them): how many hold
    at the papers' scale, the claim that holds most clearly and the one that fails most
    clearly, each with its number and links."""
    mine = paper_claims(claims)
    if not mine:
        return ""
    groups = by_claim(mine)
    total = len(groups)
    claims_word = f"{total} claim" + ("s" if total != 1 else "")
    at_paper = [c for c in mine if c.scale == STORED_TIER]
    run = [c for c in at_paper if c.status != NOT_RUN]
    built = [s for s in SCALES if s != STORED_TIER and any(c.scale == s for c in mine)]
    other = built[-1] if built else ""
    head = f"**[{_words(reference)}]({links.prefix}{mine[0].paper}.ipynb)**, *{_words(title)}*. "
    if run and len(run) == len(at_paper):
        lead = (f"At the papers' scale (the {STORED_TIER} tier), of its {claims_word} "
                f"{_counts(run)}.")
    elif run:
        rest = [c for g in groups for c in g
                if c.scale == other and all(x.status == NOT_RUN for x in g
                                            if x.scale == STORED_TIER)]
        lead = (f"At the papers' scale (the {STORED_TIER} tier) {len(run)} of its {total} "
                f"claims are run so far: {_counts(run)}"
                + (f"; of the other {len(rest)}, at the {other} tier, {_counts(rest)}."
                   if rest and other else "."))
    else:
        state, reason = _not_run_reason(at_paper)
        mine_other = [c for c in mine if c.scale == other]
        lead = (f"The {STORED_TIER} tier {state}"
                + (f" ({reason})" if reason else "")
                + (f"; at the {other} tier, of its {claims_word} {_counts(mine_other)}."
                   if other else "."))
    verdicts = [deciding(g) for g in groups]
    sentences = [lead]
    for status, opening, none in (
            (HOLDS, "Holds most clearly", "None of its claims holds"),
            (FAILS, "Fails most clearly", "None of its claims fails")):
        best = _clearest(verdicts, status)
        if best is None:
            sentences.append(f"{none} at any tier run.")
        else:
            sentences.append(f"{opening}, at the {best.scale} tier: {_cited(best, links)}.")
    return head + " ".join(sentences)


_VERDICT_PHRASES = {HOLDS: "holds", FAILS: "does not hold",
                    INCONCLUSIVE: "is inconclusive (the interval contains the margin)",
                    NOT_TESTABLE: "cannot be tested (the compared arms sit at a trivial "
                                  "baseline, or the optimum at an edge of the grid)",
                    NOT_RUN: "is not run yet"}


def companion_findings(claims: Sequence[Claim], references: dict[str, str],
                       links: Links) -> list[str]:
    """One sentence per finding of the companion (a claim of origin ``companion``): the
    finding in words, its verdict at the papers' scale (else at the largest tier run,
    named), its number and links."""
    lines = []
    for group in by_claim([c for c in claims if c.origin == "companion"]):
        c = deciding(group)
        said = numbers(c) if c.status != NOT_RUN else ""
        refs = f"({links.chapter(c)}, {links.scorecard(c)})"
        lines.append(f"{_words(references.get(c.paper, c.paper))}: *{_words(c.text)}* "
                     f"{_VERDICT_PHRASES[c.status]} at the {c.scale} tier"
                     + (f"; {_words(said)} " if said else " ") + f"{refs}.")
    return lines


def findings_markdown(claims: Sequence[Claim], runs: Path | None = None,
                      prefix: str = "generated/") -> str:
    """The landing page's findings: a paragraph per paper (:func:`paper_findings`), then
    "What the companion found" (:func:`companion_findings`). ``runs`` is the folder of
    the executed notebooks (for links to the figures), ``prefix`` the path from the
    landing page to the generated pages."""
    from fedlib.papers import PAPERS as ENTRIES

    links = Links(runs, prefix)
    paragraphs = [text for entry in ENTRIES
                  if (text := paper_findings([c for c in claims if c.paper == entry.id],
                                             entry.reference, entry.title, links))]
    if not paragraphs:
        paragraphs.append("No chapter has written claims yet: run `make rebuild-all`.")
    found = companion_findings([c for c in claims if c.paper not in COMPANION_CHAPTERS],
                               {e.id: e.reference for e in ENTRIES}, links)
    if found:
        paragraphs += ["### What the companion found",
                       "Beyond the papers' own claims, the companion checks statements of "
                       "its own (derived by it, not stated by the papers; the tallies leave "
                       "them out):",
                       "\n".join(f"- {line}" for line in found)]
    for chapter in COMPANION_CHAPTERS:
        side = companion_findings([c for c in claims if c.paper == chapter],
                                  {chapter: chapter.capitalize()}, links)
        if side:
            paragraphs += [f"### {CHAPTER_TITLES[chapter]}",
                           "The papers' methods run side by side on the same federations, "
                           "each tuned on validation data and calibrated with the same exact "
                           f"accountant ([chapter]({links.prefix}{chapter}.ipynb)); per "
                           "federation and privacy unit, the method with the highest mean "
                           "client test accuracy and its margin over the runner-up, paired "
                           "over seeds (a finding that holds: it leads; inconclusive: a tie, "
                           "the interval contains 0):",
                           "\n".join(f"- {line}" for line in side)]
    return "\n\n".join(paragraphs) + "\n"
