"""The published store's command line: ``python -m fedlib.runs export|status|prune|compact|
confirm``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from fedlib import paths
from fedlib.runs.published import (
    PUBLISHED_LAYOUT,
    PublishedStore,
    PublishedStoreError,
    export,
    left_out_lines,
    leftover_lines,
    published_experiments,
    status_table,
)
from fedlib.tiers import SCALES


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fedlib.runs",
                                     description="Export and inspect published runs.")
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
    from fedlib.runs.confirm import SAMPLE_CPU_HOURS, SAMPLE_GROUPS

    confirm = commands.add_parser(
        "confirm", help="after an edit meant to change no result: compute a sample of the "
        "stale runs again and, if every table is identical, enter the stale runs again "
        "under their current keys")
    confirm.add_argument("experiments", nargs="+", help="published experiments")
    confirm.add_argument("--groups", type=int, default=SAMPLE_GROUPS,
                         help="groups computed again per tier and code version (default "
                         f"{SAMPLE_GROUPS})")
    confirm.add_argument("--cpu-hours", type=float, default=SAMPLE_CPU_HOURS,
                         help="recorded CPU-hours the sample of a tier and code version may "
                         f"cost (default {SAMPLE_CPU_HOURS}; the cheapest group when none "
                         "fits)")
    confirm.add_argument("--rtol", type=float, default=0.0,
                         help="relative difference allowed in floating-point values (default "
                         "0: identical tables; runs computed on another processor round "
                         "float32 sums otherwise)")
    args = parser.parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except PublishedStoreError as error:
        raise SystemExit(f"error: {error}") from error


def _status_command(args: argparse.Namespace) -> int:
    table = status_table()
    print(table.to_string(index=False) if not table.empty else "nothing is published")
    for line in leftover_lines():
        print(line)
    return 0


def _prune_command(args: argparse.Namespace) -> int:
    for name in args.experiments or published_experiments():
        store = PublishedStore(name)
        if not store.manifest_path.is_file():
            raise SystemExit(f"nothing is published for {name!r} (no {store.manifest_path})")
        print(f"{name}: {store.prune()} stale runs removed")
    return 0


def _compact_command(args: argparse.Namespace) -> int:
    for name in args.experiments or published_experiments():
        before, after, written = PublishedStore(name).compact()
        if not written:
            print(f"{name}: manifest {before} bytes, already written in {PUBLISHED_LAYOUT}")
        else:
            print(f"{name}: manifest written in {PUBLISHED_LAYOUT}, {before} -> {after} bytes")
    return 0


def _export_command(args: argparse.Namespace) -> int:
    cache_root = paths.results_dir()
    names = args.experiments or sorted(p.name for p in cache_root.glob("*") if p.is_dir())
    for name in names:
        report = export(name, args.tier)
        print(f"{name}: {report.exported} {args.tier}-tier runs published ({report.new} new); "
              f"{report.stale} stale cached runs left out")
        for line in left_out_lines(report):
            print(f"{name}: {line}")
    return 0


def _confirm_command(args: argparse.Namespace) -> int:
    from fedlib.runs.confirm import ConfirmationError, confirm

    for name in args.experiments:
        try:
            done = confirm(name, groups=args.groups, cpu_hours=args.cpu_hours,
                           rtol=args.rtol)
        except (ConfirmationError, ValueError) as error:
            raise SystemExit(f"error: {error}") from error
        print(f"{name}: {done.confirmed} of {done.stale} stale runs confirmed and entered "
              f"under their current keys ({len(done.recomputed)} groups computed again, "
              f"{done.cpu_seconds / 60:.1f} CPU-minutes)")
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "status": _status_command, "prune": _prune_command, "export": _export_command,
    "compact": _compact_command, "confirm": _confirm_command}



if __name__ == "__main__":
    raise SystemExit(main())
