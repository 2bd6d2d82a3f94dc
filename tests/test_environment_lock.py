"""The environment a run records: the lock's digest, and whether the packages are its own."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from fedlib.runs import environment
from fedlib.runs.environment import (
    differences_from_lock,
    environment_description,
    lock_digest,
    platform_name,
)


def _lock(root: Path, lock: str, torch: str = "torch==2.13.0 \\\n    --hash=sha256:00\n"
          ) -> Path:
    folder = root / platform_name()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lock.txt").write_text(lock)
    (folder / "torch.txt").write_text(torch)
    return root


def test_the_digest_names_the_lock_files_and_changes_with_them(tmp_path: Path) -> None:
    assert lock_digest(tmp_path) is None
    root = _lock(tmp_path, "numpy==2.0.0 \\\n    --hash=sha256:11\n")
    first = lock_digest(root)
    assert first is not None and len(first) == 64
    assert lock_digest(root) == first
    _lock(tmp_path, "numpy==2.0.1 \\\n    --hash=sha256:11\n")
    assert lock_digest(root) != first


def test_packages_that_differ_from_the_lock_are_named(tmp_path: Path) -> None:
    pytest_version = metadata.version("pytest")
    root = _lock(tmp_path, f"pytest=={pytest_version} \\\n    --hash=sha256:11\n"
                           "numpy==0.0.1 \\\n    --hash=sha256:22\n"
                           "no-such-package-here==1.0 \\\n    --hash=sha256:33\n",
                 torch=f"torch=={metadata.version('torch')} \\\n    --hash=sha256:44\n")
    assert differences_from_lock(root) == [
        "no-such-package-here missing (locked 1.0)",
        f"numpy {metadata.version('numpy')} (locked 0.0.1)"]
    described = environment_description(root)
    assert described.startswith(f"lock {platform_name()} sha256:{lock_digest(root)[:16]}")
    assert "but 2 packages differ from it: no-such-package-here missing" in described


def test_an_environment_installed_as_locked_says_so(tmp_path: Path) -> None:
    root = _lock(tmp_path, f"pytest=={metadata.version('pytest')} \\\n    --hash=sha256:11\n",
                 torch=f"torch=={metadata.version('torch')} \\\n    --hash=sha256:44\n")
    assert environment_description(root).endswith(", installed as locked")


def test_a_platform_without_a_lock_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(environment.platform, "system", lambda: "Plan9")
    assert environment_description(tmp_path).startswith("no lock for plan9-")


def test_a_checkout_finds_its_own_lock() -> None:
    """Without a folder given, the lock is the checkout's own requirements/<platform>/
    (the one make install installed from), whatever module of the package asks."""
    root = Path(__file__).resolve().parents[1]
    assert environment.REQUIREMENTS == root / "requirements"
    if not (root / "requirements" / platform_name() / "lock.txt").is_file():
        pytest.skip(f"the lock covers no {platform_name()}: make lock writes the platforms "
                    "it covers")
    assert lock_digest() == lock_digest(root / "requirements") is not None
    assert environment_description().startswith(f"lock {platform_name()} sha256:")
