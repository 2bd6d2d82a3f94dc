"""Exceptions raised by :mod:`fedlib.data`, each saying what the user can do about it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class DatasetError(Exception):
    """Base class of every error raised while locating, verifying or reading a dataset."""


class UnknownDatasetError(DatasetError, KeyError):
    """A dataset (or a file of a dataset) that the registry does not know.

    Also a :class:`KeyError`, so ``except KeyError`` around a registry lookup keeps working.
    """

    def __init__(
        self, name: str, valid: Iterable[str], what: str = "dataset", context: str = ""
    ) -> None:
        self.name = name
        self.valid = tuple(sorted(valid))
        choices = ", ".join(repr(v) for v in self.valid) or "(none)"
        self.message = f"unknown {what} {name!r}{context}; valid {what} names are: {choices}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise print the repr of the message
        return self.message


class ChecksumMismatchError(DatasetError):
    """A file's content does not have the SHA-256 the registry expects."""

    def __init__(self, path: Path, expected: str, actual: str, advice: str) -> None:
        self.path = Path(path)
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"checksum mismatch for {self.path}: expected content SHA-256 {expected}, "
            f"got {actual}. {advice}"
        )


class DatasetUnavailableError(DatasetError):
    """A file is neither cached nor in the mirror, and could not (or may not) be downloaded."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class IDXFormatError(DatasetError, ValueError):
    """A file that is not a well-formed IDX file (bad magic number, type code or size)."""
