"""`mixit records`: keep an output's runs as text, pack them into one archive, restore them,
publish an output into results/ without its runs, and give old runs today's names.

    mixit records keep runs/width-depth-tuned results/width-depth-tuned
    mixit records keep --suite --resumable runs/suite-llama-rules results/suite-llama-rules
    mixit records pack results/suite-llama-rules
    mixit records pack --figures results/tiny-rules-seed0
    mixit records pack --retire results/tiny-seed0
    mixit records restore results/suite-llama-rules runs/suite-llama-rules
    mixit records publish runs/presets-tiny-200 results/tiny-tuned-seed200
    mixit records rename runs/axis-lookup --apply

docs/outputs.md says what each keeps and when a later command reuses it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.paper.shared_runs import mark_same_runs
from mixit.running.archive import ARCHIVE, every_figure, pack, restore, unshown_figures
from mixit.running.records import RUNS, Kept, record_folders, save, save_suite
from mixit.running.renames import renames
from mixit.study.publish import publish


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "records", help="keep, pack, restore and publish an output's run records"
    )
    actions = parser.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    keep = actions.add_parser("keep", help="copy OUT's run records (text files) into DEST")
    keep.add_argument("out", type=Path, help="the output folder (OUT of the command)")
    keep.add_argument("destination", type=Path, help="the folder to keep the records in")
    keep.add_argument("--suite", action="store_true", help="OUT is a suite's or an axis's")
    keep.add_argument(
        "--weights",
        metavar="PATTERN",
        help="keep the weights of the finished runs whose names match PATTERN ('*': all), "
        "and the last checkpoints of the unfinished ones",
    )
    keep.add_argument(
        "--resumable",
        action="store_true",
        help="keep the last checkpoint of each run cut off mid-way (not halted at a rung), "
        "for the same command to resume it there",
    )
    keep.set_defaults(run=run_keep)
    packing = actions.add_parser("pack", help=f"OUTPUT's runs/ folders into one {ARCHIVE}")
    packing.add_argument("output", type=Path, help="a folder of kept records")
    packing.add_argument(
        "--figures",
        action="store_true",
        help="pack as well the files no reader reads: the figures no report stands beside "
        "(each PDF beside its PNG, and each PNG in a folder without a Markdown file) and the "
        "measurement caches; restore brings them back",
    )
    packing.add_argument(
        "--retire",
        action="store_true",
        help="as --figures, and pack the figures the reports show as well: for an output a "
        "later one supersedes (its reports, claims and values stay; restore brings the figures "
        "back)",
    )
    packing.set_defaults(run=run_pack)
    back = actions.add_parser("restore", help="copy kept records (DEST) back into OUT")
    back.add_argument("kept", type=Path, help="the folder the records were kept in")
    back.add_argument("out", type=Path, help="the output folder to go on in")
    back.set_defaults(run=run_restore)
    add_publish(actions)
    add_rename(actions)


def add_publish(actions: Any) -> None:
    parser = actions.add_parser("publish", help="copy an output into results/ without its runs")
    parser.add_argument("source", type=Path, help="the output folder (OUT of the command)")
    parser.add_argument("destination", type=Path, nargs="?", help="the new folder under results/")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="NAME",
        help="a top-level file or folder to leave out as well (repeatable)",
    )
    parser.add_argument(
        "--same-runs-only",
        action="store_true",
        help="copy nothing: mark the claims judged on the same runs in the committed outputs "
        "of SOURCE (a folder such as results/)",
    )
    parser.set_defaults(run=run_publish)


def add_rename(actions: Any) -> None:
    parser = actions.add_parser("rename", help="give runs named by their config today's names")
    parser.add_argument("out", type=Path, help="the output folder (OUT of the command)")
    parser.add_argument(
        "--apply", action="store_true", help="rename (without it, only list what would be)"
    )
    parser.set_defaults(run=run_rename)


def run_keep(args: argparse.Namespace) -> int:
    if args.suite:
        tasks = [path.parent.name for path in args.out.glob(f"*/{RUNS}") if path.is_dir()]
        lacking, keep = f"no task with a {RUNS}/ folder", save_suite
        targets = [args.destination / task / RUNS for task in tasks]
    else:
        lacking, keep = f"no {RUNS}/ folder", save
        targets = [args.destination / RUNS] if (args.out / RUNS).is_dir() else []
        if any(path.is_dir() for path in args.out.glob(f"*/{RUNS}")):
            lacking += " of its own, but its tasks have (a suite's or an axis's: add --suite)"
    if not targets:
        raise UsageError(f"{args.out} has {lacking}")
    for target in targets:
        if target.exists():
            raise UsageError(f"{target} exists; name a new folder")
    count, finished = keep(args.out, args.destination, Kept(args.weights, args.resumable))
    print(f"kept the records of {count} runs ({finished} finished) in {args.destination}")
    return 0


def run_pack(args: argparse.Namespace) -> int:
    if not args.output.is_dir():
        raise UsageError(f"{args.output} is not a folder")
    figures = every_figure(args.output) if args.retire else []
    if args.figures and not args.retire:
        figures = unshown_figures(args.output)
    if not record_folders(args.output) and not figures:
        lacking = " and no figure to pack" if args.figures or args.retire else ""
        raise UsageError(f"{args.output} has no {RUNS}/ folder to pack{lacking}")
    count = pack(args.output, figures=args.figures, retire=args.retire)
    print(f"packed {count} files into {args.output / ARCHIVE}")
    return 0


def run_restore(args: argparse.Namespace) -> int:
    if not record_folders(args.kept) and not (args.kept / ARCHIVE).is_file():
        raise UsageError(f"{args.kept} holds no {RUNS}/ folder to restore")
    copied, had = restore(args.kept, args.out)
    print(f"restored {copied} files from {args.kept} into {args.out} ({had} were there already)")
    return 0


def run_publish(args: argparse.Namespace) -> int:
    if args.same_runs_only:
        if not args.source.is_dir():
            raise UsageError(f"{args.source} is not a folder of outputs")
        print(json.dumps(mark_same_runs(args.source), indent=2))
        return 0
    if args.destination is None:
        raise UsageError("name the destination folder under results/")
    costs = publish(args.source, args.destination, tuple(args.exclude))
    print(f"copied {args.source} to {args.destination} (without {RUNS}/)")
    print(json.dumps(costs, indent=2))
    marked = mark_same_runs(args.destination.parent)
    print(f"claims judged on the same runs as another output: {json.dumps(marked)}")
    return 0


def run_rename(args: argparse.Namespace) -> int:
    if not args.out.is_dir() or not any(args.out.rglob("runs/*/config.json")):
        raise UsageError(f"{args.out} holds no run (no runs/*/config.json)")
    found = renames(args.out)
    taken = [r for r in found if (r.run.parent / r.name).exists()]
    if taken:
        raise UsageError(f"{taken[0].run.parent / taken[0].name} exists already")
    for rename in found:
        print(f"{rename.run} -> {rename.name}")
        if args.apply:
            rename.run.rename(rename.run.parent / rename.name)
    verb = "renamed" if args.apply else "would rename (give --apply)"
    print(f"{verb} {len(found)} runs")
    return 0
