"""The software environment a run is computed in, named by the lock it was installed from.

``make install`` installs the exact versions of ``requirements/<platform>/`` (``lock.txt``,
and ``torch.txt`` for torch), which ``make lock`` writes from pyproject.toml's ranges. The
digest of those two files names the environment: a run records it (with whether this
interpreter's packages are the locked ones), and so does the site's status page.
"""

from __future__ import annotations

import hashlib
import platform
import re
from functools import cache
from importlib import metadata
from pathlib import Path

from fedlib.paths import PROJECT_ROOT

REQUIREMENTS = PROJECT_ROOT / "requirements"
"""The project's lock folder (beside the package in a checkout)."""

LOCK_FILES = ("lock.txt", "torch.txt")

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ \\;]+)")

SHOWN_DIFFERENCES = 5
"""How many packages that differ from the lock a description names (then a count)."""


def platform_name() -> str:
    """This platform as the lock folders name it (``linux-x86_64``, ``macos-arm64``)."""
    system = {"darwin": "macos"}.get(platform.system().lower(), platform.system().lower())
    machine = {"aarch64": "arm64", "amd64": "x86_64"}.get(platform.machine().lower(),
                                                          platform.machine().lower())
    return f"{system}-{machine}"


def lock_folder(folder: Path | None = None) -> Path:
    return (folder or REQUIREMENTS) / platform_name()


def lock_digest(folder: Path | None = None) -> str | None:
    """SHA-256 of this platform's lock files (their names and bytes, in order); None
    when there is no lock for this platform."""
    where = lock_folder(folder)
    if not all((where / name).is_file() for name in LOCK_FILES):
        return None
    digest = hashlib.sha256()
    for name in LOCK_FILES:
        digest.update(name.encode() + b"\0" + (where / name).read_bytes())
    return digest.hexdigest()


def pins(text: str) -> dict[str, str]:
    """The pins of a requirements file's text: package name (normalised) -> version."""
    return {re.sub(r"[-_.]+", "-", match.group(1)).lower(): match.group(2)
            for line in text.splitlines() if (match := _PIN.match(line))}


def locked_versions(folder: Path | None = None) -> dict[str, str]:
    """The lock's pins for this platform: package name (normalised) -> version."""
    found: dict[str, str] = {}
    for name in LOCK_FILES:
        path = lock_folder(folder) / name
        if path.is_file():
            found.update(pins(path.read_text()))
    return found


def differences_from_lock(folder: Path | None = None) -> list[str]:
    """The locked packages this interpreter has at another version, or not at all:
    ``"numpy 2.3.1 (locked 2.4.6)"``."""
    found = []
    for name, locked in sorted(locked_versions(folder).items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            found.append(f"{name} missing (locked {locked})")
            continue
        if installed != locked:
            found.append(f"{name} {installed} (locked {locked})")
    return found


@cache
def environment_description(folder: Path | None = None) -> str:
    """The environment in one line: the lock's platform and digest (16 hex digits), and
    whether this interpreter has exactly its packages (those it does not are named)."""
    digest = lock_digest(folder)
    if digest is None:
        return (f"no lock for {platform_name()}: packages as installed "
                f"(python {platform.python_version()})")
    named = f"lock {platform_name()} sha256:{digest[:16]}"
    differing = differences_from_lock(folder)
    if not differing:
        return f"{named}, installed as locked"
    shown = ", ".join(differing[:SHOWN_DIFFERENCES])
    more = len(differing) - SHOWN_DIFFERENCES
    return (f"{named}, but {len(differing)} packages differ from it: {shown}"
            + (f" and {more} more" if more > 0 else ""))
