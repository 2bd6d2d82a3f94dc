"""Settings from the environment and atomic writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedlib import paths


def test_atomic_path_replaces_only_on_success(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "result.txt"
    with paths.atomic_path(target) as tmp:
        tmp.write_text("first")
        assert not target.exists()  # invisible until the block ends
    assert target.read_text() == "first"
    with pytest.raises(RuntimeError), paths.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["result.txt"]


def test_folders_follow_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FEDLIB_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "r"))
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", "")
    monkeypatch.setenv("FEDLIB_OFFLINE", "yes")
    assert paths.data_dir() == tmp_path / "d"
    assert paths.results_dir() == tmp_path / "r"
    assert paths.data_mirror() is None
    assert paths.offline()
    monkeypatch.setenv("FEDLIB_OFFLINE", "0")
    assert not paths.offline()
