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


@pytest.mark.parametrize(("value", "expected"), [
    ("1", True), ("on", True), ("TRUE", True), (" yes ", True),
    ("", False), ("0", False), ("off", False), ("No", False),
])
def test_offline_switch_reads_the_usual_spellings(monkeypatch, value, expected) -> None:
    monkeypatch.setenv("FEDLIB_OFFLINE", value)
    assert paths.offline() is expected


@pytest.mark.parametrize("value", ["of", "2", "enabled"])
def test_an_unreadable_offline_switch_is_an_error_not_online(monkeypatch, value) -> None:
    monkeypatch.setenv("FEDLIB_OFFLINE", value)
    with pytest.raises(ValueError, match="FEDLIB_OFFLINE=.*set it to 1"):
        paths.offline()


def test_atomic_files_get_the_umask_mode(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        with paths.atomic_path(tmp_path / "shared.txt") as tmp:
            tmp.write_text("x")
        assert (tmp_path / "shared.txt").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        with paths.atomic_path(tmp_path / "private.txt") as tmp:
            tmp.write_text("x")
        assert (tmp_path / "private.txt").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)
