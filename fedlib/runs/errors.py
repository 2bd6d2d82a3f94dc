"""The errors of the published store and how the command lines report them.

Every error class of the store is defined here, in a module imported by its name only:
a command line run as ``python -m`` executes its ``__main__`` module under that name,
and a class defined there would exist twice (once as ``__main__``, once imported by
name), so that a handler naming one copy misses errors raised as the other.

A command line reports a known error (the store's, a run's, a bad value, a file that
cannot be read or written) in one line, ``error: <what, where, what to do>``, and any
other error in one line saying so; ``--debug`` shows the traceback instead
(:func:`run_command`, :func:`report`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence


class PublishedStoreError(RuntimeError):
    """A published store that cannot be read as this layout (say what to do about it)."""


class StoreBusyError(PublishedStoreError):
    """Another command holds the lock of an experiment's published folder."""


class ConfirmationError(RuntimeError):
    """A confirmation cannot carry runs over: a recomputed run differs from its published
    table (the edit changes results), or the runs cannot be computed again here."""


DEBUG_FLAG = "--debug"
"""The option of every command line that shows a traceback instead of the one line."""

DEBUG_HELP = "show the traceback of an error (by default one line says what is wrong)"

INTERRUPTED = ("interrupted: every file is written whole or not at all; what an interrupted "
               "write of the published store leaves, the next command writing it removes")
"""What a command line says when it is interrupted (Ctrl-C)."""


def known_errors() -> tuple[type[BaseException], ...]:
    """The errors whose message says what is wrong and what to do: the store's, a run's,
    a bad value (every check raises :class:`ValueError` naming the value) and a file that
    cannot be read or written (:class:`OSError`, which names the file)."""
    from fedlib.runs.cache import DamagedRunError, MissingRunsError

    return (PublishedStoreError, ConfirmationError, DamagedRunError, MissingRunsError,
            ValueError, OSError)


def without_debug(argv: Sequence[str]) -> tuple[list[str], bool]:
    """``argv`` without :data:`DEBUG_FLAG`, and whether it was given."""
    rest = [arg for arg in argv if arg != DEBUG_FLAG]
    return rest, len(rest) != len(argv)


def error_line(error: BaseException,
               known: tuple[type[BaseException], ...] = ()) -> str:
    """``error`` in one line: its message where it is one of ``known`` (or of
    :func:`known_errors`), else its type and message, saying that ``--debug`` shows
    where it comes from."""
    if hasattr(error, "ename") and hasattr(error, "evalue"):  # a notebook cell's error
        value = " ".join(str(error.evalue).split())
        return (f"error: a cell of the notebook raised {error.ename}: {value} (the executed "
                "notebook, marked unfinished, keeps its traceback)")
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, (*known_errors(), *known)):
        return f"error: {text}"
    return (f"error: unexpected {type(error).__name__}: {text} (run again with "
            f"{DEBUG_FLAG} to see where it comes from)")


def report(error: BaseException, debug: bool,
           known: tuple[type[BaseException], ...] = ()) -> SystemExit:
    """What a command line raises for ``error``: itself with ``debug`` (re-raised by the
    caller's ``raise``), else a :class:`SystemExit` whose message is
    :func:`error_line` (Python prints it, one line, and exits with status 1)."""
    if debug:
        raise error
    return SystemExit(error_line(error, known))


def one_line_warnings() -> None:
    """Show each warning as one line, ``warning: <message>`` (a command line's warnings
    say what is wrong and what to do; the source line Python adds says nothing more)."""
    def formatted(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, line: str | None = None) -> str:
        return f"warning: {' '.join(str(message).split())}\n"

    warnings.formatwarning = formatted


def run_command(main: Callable[[list[str]], int], argv: Sequence[str] | None = None,
                known: tuple[type[BaseException], ...] = ()) -> int:
    """``main(argv)`` as a command line runs it: an error is one line on stderr (exit
    status 1), or its traceback where ``argv`` holds :data:`DEBUG_FLAG`."""
    args, debug = without_debug(sys.argv[1:] if argv is None else argv)
    if not debug:
        one_line_warnings()
    try:
        return main(args)
    except KeyboardInterrupt:
        if debug:
            raise
        raise SystemExit(INTERRUPTED) from None
    except Exception as error:  # noqa: BLE001 - every error ends in one line or --debug
        raise report(error, debug, known) from None
