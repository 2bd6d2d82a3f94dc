"""Every writer of a generated page, given values that hold markup of every kind
(:data:`hostile.HOSTILE_STRINGS`): the page makes the markup it makes of a plain value,
no more, and shows the value as written. The escaping is one module's
(:mod:`fedlib.render.markdown`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from hostile import HOSTILE, HOSTILE_STRINGS, rendered, same_markup_shown_as_written, text_of

from fedlib.verdicts.claims import Claim

pytest.importorskip("myst_parser")

Writer = Callable[[str], str]


def _scorecard(value: str) -> str:
    from fedlib.render.scorecard import scorecard_markdown

    return scorecard_markdown([Claim("pfa", "fig3-a", "HOLDS", value, value, paper_value=value,
                                     scale="quick", restated=value, quote=value)])


def _scorecard_not_drawn(value: str) -> str:
    from fedlib.render.scorecard import not_drawn_markdown

    return not_drawn_markdown(value)


def _findings(value: str) -> str:
    from fedlib.render.findings import EXACT, findings_markdown

    return findings_markdown([
        Claim("pfa", "fig3-a", "HOLDS", value, EXACT + value, scale="quick"),
        Claim("pfa", "fig3-b", "FAILS", value, EXACT + value, scale="quick",
              origin="companion")])


def _prose(value: str) -> str:
    from fedlib.render.prose import prose

    return prose("Each run ends at {x}; the others at {xs}.", x=value, xs=[value, value])


def _claims_list(value: str) -> str:
    from fedlib.render.chapter import claims_markdown

    return claims_markdown([Claim("pfa", "fig3-a", "HOLDS", value, value)])


def _left_out(value: str) -> str:
    from fedlib.render.glue import left_out_note

    return left_out_note([value], {value: value}) or ""


def _federations_left_out(value: str) -> str:
    from fedlib.frontier.claims import left_out_markdown

    return left_out_markdown({value: value})


TOY = ('# %% [markdown]\n# # A toy chapter\n\n# %% tags=["parameters"]\n'
       'scale = "paper"  # tier\nclaims_dir = ""  # claims\n')


def _tier_note(folder: Path) -> Writer:
    def write(value: str) -> str:
        from fedlib.render.execute import main

        (folder / "toy.py").write_text(TOY)
        assert main([str(folder / "toy.py"), str(folder / "toy.ipynb"), "--note", value]) == 0
        return (folder / "toy.md").read_text()
    return write


def _status(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Writer:
    """The status page with every value it shows from outside set to the value: a
    notebook's tier, the machine, the environment, a package's version and the lines on
    files left by an interrupted export."""
    import fedlib.render.status as status
    import fedlib.runs.published as published

    def write(value: str) -> str:
        runs = folder / "runs"
        runs.mkdir(exist_ok=True)
        book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
        book.metadata["papermill"] = {"parameters": {"scale": value}, "duration": 1.0,
                                      "start_time": value}
        nbformat.write(book, str(runs / "pfa.ipynb"))
        monkeypatch.setattr(status, "machine_description", lambda: value)
        monkeypatch.setattr(status, "environment_description", lambda: value)
        monkeypatch.setattr(status, "package_versions", lambda: {"numpy": value})
        monkeypatch.setattr(published, "leftover_lines", lambda root=None: [value])
        return status.status_markdown(runs)
    return write


@pytest.fixture
def writers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Writer]:
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(tmp_path / "published"))
    return {"scorecard": _scorecard, "scorecard not drawn": _scorecard_not_drawn,
            "findings": _findings, "prose": _prose, "claims list": _claims_list,
            "left-out note": _left_out, "federations left out": _federations_left_out,
            "tier note": _tier_note(tmp_path), "status": _status(tmp_path, monkeypatch)}


WRITERS = ["scorecard", "scorecard not drawn", "findings", "prose", "claims list",
           "left-out note", "federations left out", "tier note", "status"]


@pytest.mark.parametrize("name", WRITERS)
@pytest.mark.parametrize("kind", list(HOSTILE_STRINGS))
def test_a_page_makes_no_markup_of_a_value(writers: dict[str, Writer], name: str,
                                           kind: str) -> None:
    value = HOSTILE_STRINGS[kind]
    # " | " parts a claim's evidence, one part a line on the scorecard: the plain value
    # has as many parts
    plain = " | ".join(["plain words"] * len(value.split(" | ")))
    problem = same_markup_shown_as_written(writers[name], value, plain)
    assert not problem, f"{name}, {kind}: {problem}"


def test_the_scorecard_not_drawn_is_a_page_saying_why_as_written(tmp_path: Path) -> None:
    """A claims folder whose stray file's name holds a fence, HTML and a directive: the
    scorecard cannot be drawn, and its page, summary line and figure say so."""
    from fedlib.render.scorecard import main

    claims, out = tmp_path / "claims", tmp_path / "generated"
    claims.mkdir()
    out.mkdir()
    name = "x\n```\n<script>alert(1)<\\script>\n```{eval-rst}\n# y.json"
    (claims / name).write_text("[]")
    assert main([str(claims), "--markdown", str(out / "scorecard.md"), "--not-drawn-page"]) == 0
    page = (out / "scorecard.md").read_text()
    html = rendered(page)
    assert "<script" not in html and html.count("<h1") == 1 and html.count("<pre") == 1
    assert " ".join(name.split()) in text_of(html)
    assert "The scorecard is not drawn in this build" in text_of(html)
    assert (out / "summary.md").read_text().startswith("The scorecard is not drawn")
    assert (out / "scorecard_summary.png").read_bytes().startswith(b"\x89PNG")
    # without --not-drawn-page the scorecard is refused, and nothing is written
    (out / "scorecard.md").unlink()
    assert main([str(claims), "--markdown", str(out / "scorecard.md")]) == 1
    assert not (out / "scorecard.md").exists()


def test_the_site_writes_the_scorecard_page_without_pasting_raw_text() -> None:
    """The Makefile's site target leaves the page to the scorecard (nothing it writes
    itself can hold an error's text)."""
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    site = makefile.split("\nsite:", 1)[1].split("\n\n", 1)[0]
    assert "--not-drawn-page" in site and "```" not in site and "scorecard.err" not in site


def test_files_left_by_an_interrupted_export_are_named_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder of the store and a temporary file in it, named with markup: the status
    page's line on them shows both names and makes no markup."""
    from fedlib.render.status import published_section

    root = tmp_path / "published"
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(root))
    folder_name = "toy\n```{eval-rst}\n<script>alert(1)"
    temporary = ".paper.parquet.`x`|<b>b\n# h.tmp"
    (root / folder_name).mkdir(parents=True)
    (root / folder_name / temporary).write_bytes(b"half a table")
    section = "\n".join(published_section())
    html = rendered(section)
    shown = text_of(html)
    assert " ".join(folder_name.split()) in shown and " ".join(temporary.split()) in shown
    assert "<script" not in html and "<b>" not in html and "<h1" not in html
    assert "<pre" not in html and "<table" not in html


def test_the_hostile_strings_would_make_markup_written_as_they_are() -> None:
    """The values are hostile: each, written into a page as it is, makes markup."""
    from hostile import markup_of

    plain = markup_of("plain words")
    for kind, value in HOSTILE_STRINGS.items():
        assert markup_of(value) != plain, kind
    assert HOSTILE in HOSTILE_STRINGS.values()

