"""The published store's command line: ``python -m fedlib.runs export|status|prune|compact|
confirm [--debug]``.

A known error (a damaged or unreadable store, another command holding it, a runner that
no longer exists, a bad value) ends the command with one line saying what is wrong, where
and what to do; ``--debug`` shows its traceback instead (:mod:`fedlib.runs.errors`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

from fedlib import paths
from fedlib.runs.errors import DEBUG_HELP, INTERRUPTED, report, without_debug
from fedlib.runs.published import (
    PUBLISHED_LAYOUT,
    PublishedStore,
    export,
    left_out_lines,
    leftover_lines,
    published_root,
    require_published,
    status_table,
)
from fedlib.tiers import SCALES


def _parser() -> argparse.ArgumentParser:
    from fedlib.runs.confirm import SAMPLE_CPU_HOURS, SAMPLE_GROUPS

    parser = argparse.ArgumentParser(prog="python -m fedlib.runs",
                                     description="Export and inspect published runs.")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    commands = parser.add_subparsers(dest="command", required=True)
    out = commands.add_parser("export", help="publish the current runs of a tier from the "
                              "local cache")
    out.add_argument("--tier", required=True, choices=SCALES)
    out.add_argument("experiments", nargs="*",
                     help="experiment folders of the cache (default: all of them)")
    commands.add_parser("status", help="what is published and whether it is current")
    prune = commands.add_parser("prune", help="remove the stale published runs (after "
                                "their replacements are exported)")
    prune.add_argument("experiments", nargs="*",
                       help="published experiments (default: all of them)")
    compact = commands.add_parser("compact", help="write manifests of an older layout "
                                  f"again in {PUBLISHED_LAYOUT} (runs unchanged)")
    compact.add_argument("experiments", nargs="*",
                         help="published experiments (default: all of them)")
    confirm = commands.add_parser(
        "confirm", help="after an edit meant to change no result: compute again one group "
        "of each stratum of the stale runs (each value of the config fields that choose "
        "code paths) and, if every table agrees, enter the stale runs of the strata "
        "checked again under their current keys")
    confirm.add_argument("experiments", nargs="+", help="published experiments")
    confirm.add_argument("--groups", type=int, default=SAMPLE_GROUPS,
                         help="groups computed again per tier and code version at least, "
                         "where they fit the CPU-hours (the strata's groups first, then "
                         f"groups drawn at random; default {SAMPLE_GROUPS})")
    confirm.add_argument("--cpu-hours", type=float, default=SAMPLE_CPU_HOURS,
                         help="recorded CPU-hours the groups of a tier and code version may "
                         f"cost (default {SAMPLE_CPU_HOURS}); the strata whose cheapest "
                         "group does not fit are left stale, and named")
    confirm.add_argument("--rtol", type=float, default=0.0,
                         help="relative difference allowed in floating-point values of "
                         "runs recorded on this kind of machine (default 0: identical "
                         "tables); runs recorded on another machine are compared within "
                         "the tolerance for another machine whatever this is")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import sys

    argv, debug = without_debug(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        if debug:
            raise
        raise SystemExit(INTERRUPTED) from None
    except Exception as error:  # noqa: BLE001 - one line, or the traceback with --debug
        raise report(error, debug) from None


def _status_command(args: argparse.Namespace) -> int:
    root = published_root()
    table = status_table(root)
    print(table.to_string(index=False) if not table.empty
          else f"nothing is published in {paths.shown(root)}")
    for line in leftover_lines(root):
        print(line)
    return 0


def _published_names(args: argparse.Namespace) -> list[str]:
    """The experiments a command names (each with a manifest, else an error naming the
    folder), or every published one."""
    root = published_root()
    names = [require_published(name, root) for name in args.experiments] or \
        require_published(None, root)
    if not names:
        print(f"nothing is published in {paths.shown(root)}")
    return names


def _prune_command(args: argparse.Namespace) -> int:
    for name in _published_names(args):
        print(f"{name}: {PublishedStore(name).prune()} stale runs removed")
    return 0


def _compact_command(args: argparse.Namespace) -> int:
    for name in _published_names(args):
        before, after, written = PublishedStore(name).compact()
        if not written:
            print(f"{name}: manifest {before} bytes, already written in {PUBLISHED_LAYOUT}")
        else:
            print(f"{name}: manifest written in {PUBLISHED_LAYOUT}, {before} -> {after} bytes")
    return 0


def _export_command(args: argparse.Namespace) -> int:
    root = paths.published_dir()
    if root.exists() or not os.environ.get("FEDLIB_PUBLISHED_DIR", "").strip():
        published_root()  # a file where the store should be: one line naming it
    else:
        print(f"{root} (FEDLIB_PUBLISHED_DIR) does not exist: the export creates it")
    cache_root = paths.results_dir()
    names = args.experiments or sorted(p.name for p in cache_root.glob("*") if p.is_dir())
    for name in names:
        report_ = export(name, args.tier)
        print(f"{name}: {report_.exported} {args.tier}-tier runs published ({report_.new} "
              f"new); {report_.stale} stale cached runs left out")
        for line in left_out_lines(report_):
            print(f"{name}: {line}")
    return 0


def _confirm_command(args: argparse.Namespace) -> int:
    from fedlib.runs.confirm import confirm, summary_line

    names = _published_names(args)
    for name in names:
        done = confirm(name, groups=args.groups, cpu_hours=args.cpu_hours, rtol=args.rtol)
        print(f"{name}: {summary_line(done)}")
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "status": _status_command, "prune": _prune_command, "export": _export_command,
    "compact": _compact_command, "confirm": _confirm_command}
