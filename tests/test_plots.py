"""Shared plotting: the numbers a figure plots can be read back from the figure itself."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hostile import HOSTILE, rendered, shown_as_written  # noqa: E402

from fedlib.render import glue
from fedlib.render.glue import figure_table, glue_figure, keep_figure_data


def _figure() -> plt.Figure:
    fig, (left, right) = plt.subplots(1, 2)
    left.plot([1, 2, 3], [0.5, 0.25, 0.125], label="PFA")
    left.errorbar([1, 2], [1.0, 2.0], yerr=[[0.1, 0.2], [0.3, 0.4]], label="WeiAvg")
    left.set_title("MNIST, LogR")
    left.set_xlabel("round")
    left.set_ylabel("accuracy")
    right.bar([0, 1], [3.0, 5.0], label="counts")
    right.text(0.5, 0.9, "sigma=1", transform=right.transAxes)
    return fig


def test_figure_table_holds_every_plotted_point() -> None:
    fig = _figure()
    table = figure_table(fig)
    plt.close(fig)
    pfa = table[table["series"] == "PFA"]
    assert pfa["x"].tolist() == [1, 2, 3] and pfa["y"].tolist() == [0.5, 0.25, 0.125]
    assert set(pfa["panel"]) == {"MNIST, LogR"} and set(pfa["x label"]) == {"round"}
    weiavg = table[table["series"] == "WeiAvg"]
    assert weiavg["y"].tolist() == [1.0, 2.0]  # the means; the bars' ends are their own rows
    bars = table[table["panel"] == "sigma=1"]  # an untitled panel is named by its corner text
    assert sorted(bars["y"]) == [3.0, 5.0] and sorted(bars["x"]) == [0.0, 1.0]


def test_glue_figure_writes_the_numbers_beside_the_figure(tmp_path, monkeypatch) -> None:
    pytest.importorskip("myst_nb")
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objects, **_: shown.extend(objects))
    keep_figure_data(tmp_path)
    try:
        glue_figure("demo_fig", _figure())
    finally:
        keep_figure_data(None)
    stored = pd.read_csv(tmp_path / "demo_fig.csv")
    assert list(stored.columns) == ["panel", "x label", "y label", "series", "x", "y"]
    np.testing.assert_allclose(stored[stored["series"] == "PFA"]["y"], [0.5, 0.25, 0.125])
    assert any("../data/demo_fig.csv" in getattr(o, "data", "") for o in shown)
    assert not plt.get_fignums()  # the figure was closed


def test_a_figure_whose_runs_were_left_out_is_a_note_saying_which(monkeypatch) -> None:
    pytest.importorskip("myst_nb")
    import myst_nb


    glued: dict[str, object] = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: glued.update({name: value}))
    drawn = []

    def draw() -> plt.Figure:
        drawn.append(1)
        return _figure()

    glue.glue_figure_of_parts("fig4", ["fig4", "fig3"], {"fig4": "3 of 5 runs missing"}, draw)
    assert not drawn and glued["fig4"].data.startswith(
        "Not drawn: the runs of `fig4` (3 of 5 runs missing) are not on this page")
    glue.glue_figure_of_parts("fig3", ["fig3"], {"fig4": "3 of 5 runs missing"}, draw)
    assert drawn == [1] and isinstance(glued["fig3"], plt.Figure)
    assert not plt.get_fignums()



def test_a_left_out_note_shows_names_and_reasons_as_written() -> None:
    pytest.importorskip("myst_parser")
    page = rendered(glue.left_out_note(["fig`4"], {"fig`4": HOSTILE}))
    assert shown_as_written(page, allowed={"code"}) and "<code>fig`4</code>" in page
    assert page.count("<code>") == 1


def test_the_link_to_a_figures_numbers_stays_a_link_to_its_file(tmp_path, monkeypatch
                                                                ) -> None:
    pytest.importorskip("myst_nb")
    pytest.importorskip("myst_parser")
    from urllib.parse import unquote

    import IPython.display
    import myst_nb

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objects, **_: shown.extend(objects))
    monkeypatch.setattr(myst_nb, "glue", lambda *args, **kwargs: None)
    name = "fig-pfa_3.a"  # plain: a name with markup is refused (test below)
    keep_figure_data(tmp_path, prefix="quick-")
    try:
        glue_figure(name, _figure())
    finally:
        keep_figure_data(None)
    assert (tmp_path / f"quick-{name}.csv").is_file()
    page = rendered(shown[-1].data)
    assert page.count("<a ") == 1
    href = page.split('href="', 1)[1].split('"', 1)[0]
    assert unquote(href) == f"../data/quick-{name}.csv"


def test_the_claims_table_escapes_every_value(monkeypatch) -> None:
    pytest.importorskip("myst_nb")
    import myst_nb

    from fedlib.render.glue import glue_claims_table
    from fedlib.verdicts.claims import Claim

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: glued.update({name: value}))
    claim = Claim("pfa", "fig3-a", "HOLDS", HOSTILE, HOSTILE, paper_value=HOSTILE,
                  scale="quick")  # a tier with markup is refused by Claim itself
    glue_claims_table("t", [claim])
    page = glued["t"].to_html()
    assert "<script>" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 3
    assert "verdict (quick)" in page


@pytest.mark.parametrize("name", ["../outside", "a/b", "", "..", "x y"])
def test_a_figure_name_that_is_not_a_plain_file_name_is_refused(tmp_path, name) -> None:
    pytest.importorskip("myst_nb")
    keep_figure_data(tmp_path / "data")
    try:
        with pytest.raises(ValueError, match="must be a plain file name"):
            glue_figure(name, _figure())
    finally:
        keep_figure_data(None)
        plt.close("all")
    assert not (tmp_path / "outside.csv").exists()
