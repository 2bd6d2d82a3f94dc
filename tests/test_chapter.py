"""What every chapter notebook does around its content: parameters checked before compute,
claims written where the scorecard reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile import HOSTILE, rendered, shown_as_written, unwritable_folder

from fedlib.render.chapter import open_chapter
from fedlib.render.markdown import markdown_code, markdown_text
from fedlib.verdicts.claims import ClaimSheet, read_claims

STANDARD = dict(scale="smoke", seed=0, device="cpu", workers=0, ray_address="")


def test_open_chapter_checks_every_standard_parameter(tmp_path: Path) -> None:
    cases = [
        ({"scale": "huge"}, "not a run tier"),
        ({"seed": -1}, "seed"),
        ({"workers": 1.5}, "workers"),
        ({"device": "nonsense"}, "not a torch device"),
        ({"ray_address": None}, "ray_address"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=message):
            open_chapter("ppsgd", **{**STANDARD, **change}, claims_dir=tmp_path / "c")
    with pytest.raises(ValueError, match="unknown paper id 'bietti'"):
        open_chapter("bietti", **STANDARD, claims_dir=tmp_path / "c")
    with pytest.raises(ValueError, match="runs on the CPU"):
        open_chapter("hu2020", **{**STANDARD, "device": "cuda"}, claims_dir=tmp_path / "c",
                     cpu_only=True)


def test_an_unwritable_claims_folder_is_reported_before_any_compute(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ValueError, match="claims_dir=.*cannot be created"):
        open_chapter("pfa", **STANDARD, claims_dir=blocker / "claims")


def test_chapter_writes_the_claims_file_the_scorecard_reads(tmp_path: Path) -> None:
    pytest.importorskip("myst_nb")
    chapter = open_chapter("padpfl", **STANDARD, claims_dir=tmp_path / "claims")
    assert (tmp_path / "claims").is_dir()
    assert chapter.sweep_args == {"workers": None, "ray_address": None, "progress": False}
    sheet = ClaimSheet("padpfl", "smoke")
    sheet.exact("fig2-a", True, "a claim", "1 < 2")
    sheet.not_run("fig3-b", "a claim not run", "no data offline")
    chapter.write_claims(sheet.claims)
    stored = json.loads((tmp_path / "claims" / "padpfl.json").read_text())
    assert [c["status"] for c in stored] == ["HOLDS", "NOT-RUN"]
    assert [c.claim_id for c in read_claims(tmp_path / "claims")] == ["fig2-a", "fig3-b"]


def test_evidence_is_escaped_for_markdown() -> None:
    assert markdown_text("alpha*Q=inf, a_b [x] <y> |z|") == (
        "alpha\\*Q\\=inf\\, a\\_b \\[x\\] \\<y\\> \\|z\\|")
    assert markdown_text("one\n\n# two") == "one  \\# two"
    assert markdown_code("a``b") == "```a``b```" and markdown_code("`x") == "`` `x ``"


def test_claims_are_listed_as_written() -> None:
    pytest.importorskip("myst_parser")
    from types import SimpleNamespace

    from fedlib.render.chapter import claims_markdown

    claim = SimpleNamespace(status="HOLDS", claim_id="fig1-a``b", evidence=HOSTILE)
    page = rendered(claims_markdown([claim]))
    assert shown_as_written(page, allowed={"li", "code"})
    assert "<code>fig1-a``b</code>" in page and page.count("<li>") == 1
    assert page.count("<code>") == 1


def test_the_rerun_box_shows_its_values_as_written(monkeypatch) -> None:
    import fedlib.render.notebook
    from fedlib.render.chapter import rerun_box

    monkeypatch.setattr(fedlib.render.notebook, "parameter_notes",
                        lambda source: [("scale", '"<b>quick</b>"', HOSTILE)])
    box = rerun_box("<script>x</script>", "quick", {"quick": 3.0})
    assert "<script>" not in box and "<b>quick" not in box
    assert "notebooks/&lt;script&gt;x&lt;/script&gt;.py" in box
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in box


def test_a_damaged_run_time_record_is_read_as_no_record(tmp_path: Path) -> None:
    from fedlib.render.chapter import read_run_times, record_run_time

    record = tmp_path / "run_times.json"
    for damaged in ("[]", '{"pfa": "1 s"}', '{"pfa": {"quick": "<script>", "paper": 5}}',
                    '{"pfa": {"quick": 2'):
        record.write_text(damaged)
        assert record_run_time(record, "pfa", "smoke", 1.04) in (
            {"smoke": 1.0}, {"smoke": 1.0, "paper": 5.0})
    assert read_run_times(record) == {"pfa": {"smoke": 1.0}}


def test_a_claims_dir_that_is_not_a_path_is_refused(tmp_path: Path) -> None:
    from fedlib.paths import PROJECT_ROOT

    for value in (0, None, True, 1.5):
        with pytest.raises(ValueError, match=rf"claims_dir={value!r} is not a folder path.*"
                                             r"pass a string.*\./0"):
            open_chapter("pfa", **STANDARD, claims_dir=value)
        assert not (PROJECT_ROOT / str(value)).exists()


def test_an_existing_claims_folder_that_cannot_be_written_is_refused_at_once(
        tmp_path: Path) -> None:
    folder = unwritable_folder(tmp_path)
    with pytest.raises(ValueError, match=r"claims_dir=.*cannot be written.*pass a folder"):
        open_chapter("pfa", **STANDARD, claims_dir=folder)
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".write-check-")]


def test_a_numpy_seed_is_taken_as_its_int_and_a_seed_out_of_range_is_refused(
        tmp_path: Path) -> None:
    import numpy as np

    from fedlib.render.chapter import SEED_LIMIT

    for given in (np.int64(3), np.uint32(3), 3):
        chapter = open_chapter("pfa", **{**STANDARD, "seed": given}, claims_dir=tmp_path)
        assert chapter.seed == 3 and type(chapter.seed) is int
    assert open_chapter("pfa", **{**STANDARD, "seed": SEED_LIMIT - 1},
                        claims_dir=tmp_path).seed == 2**31 - 1
    for given in (2**63, 2**64 + 1, SEED_LIMIT, np.uint64(2**63)):
        with pytest.raises(ValueError, match=rf"seed={int(given)} is out of range: use "
                                             r"0 <= seed < 2\*\*31 = 2147483648"):
            open_chapter("pfa", **{**STANDARD, "seed": given}, claims_dir=tmp_path)
    with pytest.raises(ValueError, match=r"seed='3' is a string; pass an integer"):
        open_chapter("pfa", **{**STANDARD, "seed": "3"}, claims_dir=tmp_path)
    for given in (True, np.bool_(True), 3.0):
        with pytest.raises(ValueError, match=r"seed=.* must be an integer with 0 <= seed"):
            open_chapter("pfa", **{**STANDARD, "seed": given}, claims_dir=tmp_path)


def test_the_claims_table_puts_the_published_tier_beside_this_build(tmp_path: Path) -> None:
    pytest.importorskip("myst_nb")
    from fedlib.render.glue import glue_claims_table
    from fedlib.verdicts.claims import write_claims

    published = tmp_path / "claims" / "published"
    published.mkdir(parents=True)
    paper = ClaimSheet("padpfl", "paper")
    paper.exact("fig2-a", False, "a claim", "3 > 2 at the paper's scale")
    write_claims(published / "padpfl.json", paper.claims)
    chapter = open_chapter("padpfl", **{**STANDARD, "scale": "quick"},
                           claims_dir=tmp_path / "claims")
    sheet = ClaimSheet("padpfl", "quick")
    sheet.exact("fig2-a", True, "a claim", "1 < 2")
    sheet.not_run("fig3-b", "a claim not run", "no data offline")
    chapter.write_claims(sheet.claims)
    from fedlib.verdicts.claims import stored_tier_claims

    table = glue_claims_table("t", sheet.claims, stored_tier_claims(tmp_path / "claims",
                                                                    sheet.claims))
    assert list(table.columns) == ["claim", "verdict (quick)", "statement", "measured (quick)",
                                   "verdict (paper)", "measured (paper)", "flips", "paper"]
    assert table.iloc[0][["verdict (quick)", "verdict (paper)", "flips"]].tolist() == [
        "HOLDS", "FAILS", "yes"]
    # A claim the paper tier does not evaluate is not run there, and says so.
    assert table.iloc[1][["verdict (paper)", "flips"]].tolist() == ["NOT-RUN", ""]
    assert table.iloc[1]["measured (paper)"].startswith("not evaluated at the paper tier")


def test_a_render_from_stored_runs_records_no_run_time(tmp_path: Path, monkeypatch) -> None:
    """The paper tier rendered from stored runs writes its claims into the claims folder's
    ``published`` subfolder; its time (a render, not the tier's compute) is not recorded,
    and nothing but claims lands in the folder the scorecard reads."""
    display = pytest.importorskip("IPython.display")
    shown: list[str] = []
    monkeypatch.setattr(display, "display", lambda item: shown.append(item.data))
    claims = tmp_path / "claims"
    monkeypatch.setenv("FEDLIB_COMPUTE", "0")
    open_chapter("padpfl", **{**STANDARD, "scale": "paper"},
                 claims_dir=claims / "published").close()
    assert not (claims / "run_times.json").exists()
    assert "rendered from stored runs, with nothing computed" in shown[-1]

    monkeypatch.setenv("FEDLIB_COMPUTE", "1")
    open_chapter("padpfl", **STANDARD, claims_dir=claims).close()
    assert set(json.loads((tmp_path / "run_times.json").read_text())) == {"padpfl"}
    assert "measured on the machine that built this page: smoke:" in shown[-1]


def test_every_figure_and_table_caption_opens_with_its_tier() -> None:
    from fedlib.render.markdown import badge_captions, tier_badge

    page = ("Text with a {glue:figure} word.\n\n"
            "```{glue:figure} a\n:name: fig-a\n:figwidth: 90%\n\n$x$ against rounds.\n\n"
            "The legend.\n```\n\n"
            ":::{table} Caption of a table\n:::\n\n"
            "````{glue:figure} b\n````\n")
    badge = tier_badge("quick")
    assert badge == '<span class="tier-badge tier-quick">quick tier</span>'
    labelled = badge_captions(page, "quick")
    assert labelled == (
        "Text with a {glue:figure} word.\n\n"
        f"```{{glue:figure}} a\n:name: fig-a\n:figwidth: 90%\n\n{badge} $x$ against rounds."
        "\n\nThe legend.\n```\n\n"
        f":::{{table}} Caption of a table\n\n{badge}\n:::\n\n"
        f"````{{glue:figure}} b\n\n{badge}\n````\n")
    assert badge_captions(labelled, "quick") == labelled  # labelled once


def test_a_tier_badge_shows_the_tier_as_written() -> None:
    from fedlib.render.markdown import tier_badge, with_tier_caption

    assert tier_badge("<b>x</b>") == ('<span class="tier-badge tier-bxb">&lt;b&gt;x&lt;/b&gt; '
                                      "tier</span>")
    table = '<table border="0" class="dataframe"><tbody></tbody></table>'
    assert with_tier_caption(table, "paper") == (
        '<table border="0" class="dataframe"><caption class="tier-caption"><span '
        'class="tier-badge tier-paper">paper tier</span></caption><tbody></tbody></table>')
    with pytest.raises(ValueError, match="needs the HTML of a table"):
        with_tier_caption("<p>no table</p>", "paper")


def test_a_chapters_tables_carry_the_tier_they_were_computed_at(tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        open_chapter("ppsgd", scale="smoke", seed=0, device="cpu", workers=0,
                     ray_address="", claims_dir=str(tmp_path / "claims"))
        html = shell.display_formatter.formatters["text/html"](pd.DataFrame({"a": [1, 2]}))
    finally:
        InteractiveShell.clear_instance()
    assert '<caption class="tier-caption"><span class="tier-badge tier-smoke">smoke tier' in html
    assert "<th>0</th>" not in html  # still without pandas' row numbers
