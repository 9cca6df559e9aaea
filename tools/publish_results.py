"""Copy an output folder (``reproduce``, ``suite``, ``compare``, ``compare --axis``) into
results/ without its runs.

The runs hold weights, checkpoints and TensorBoard logs (tens of MB per reproduction) and are
not committed; the reports, figures, claims and ``results.csv`` are. The copy is made under a
temporary name and renamed into place, so an interrupted copy leaves nothing behind. It also
prints what a results README states about the cost, read from the runs' own summaries: how
many runs, their training seconds summed, and when the first summary and the last were
written. Then every claim judged on the same runs as another committed output's is marked in
both folders' claims (``mixit.paper.shared_runs``), so that it is counted once;
``--same-runs-only`` marks them without copying anything.

    python tools/publish_results.py runs/presets-tiny-200 results/tiny-tuned-seed200
    python tools/publish_results.py --same-runs-only results

Exit status 2, with one line, when the source is not an output folder or the destination
exists.
"""

from __future__ import annotations

import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from mixit.cli import run_tool
from mixit.cli.options import OneLineParser
from mixit.common.io import write_folder_atomic
from mixit.paper.shared_runs import mark_same_runs

RUNS = "runs"
MARKERS = ("results.csv", "claims.json", "timing.json", "axis.json")


class PublishError(Exception):
    """The source or destination the user named cannot be used."""


def run_costs(source: Path) -> dict:
    """The count, training seconds and first/last summary times of the runs under ``source``
    (its own ``runs/``, and each of its folders' for a suite or an axis)."""
    summaries = sorted(
        [*source.glob(f"{RUNS}/*/summary.json"), *source.glob(f"*/{RUNS}/*/summary.json")]
    )
    if not summaries:
        return {"runs": 0, "train_seconds": 0.0, "first_written": None, "last_written": None}
    seconds = sum(json.loads(path.read_text()).get("train_seconds", 0.0) for path in summaries)
    written = sorted(path.stat().st_mtime for path in summaries)

    def stamp(mtime: float) -> str:
        return datetime.fromtimestamp(mtime, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")

    return {
        "runs": len(summaries),
        "train_seconds": round(seconds, 1),
        "first_written": stamp(written[0]),
        "last_written": stamp(written[-1]),
    }


def publish(source: Path, destination: Path, exclude: tuple[str, ...] = ()) -> dict:
    """Copy ``source`` to ``destination`` without its ``runs/`` folder and without the
    top-level names in ``exclude``; return ``run_costs(source)``."""
    if not source.is_dir() or not any((source / marker).exists() for marker in MARKERS):
        markers = ", ".join(MARKERS)
        raise PublishError(f"{source} is not an output folder (it has none of {markers})")
    if destination.exists():
        raise PublishError(f"{destination} exists; remove it or name a new folder")
    for path in source.rglob("*"):
        if path.is_symlink() and RUNS not in path.relative_to(source).parts[:1]:
            raise PublishError(f"{path} is a link; an output is published from plain files only")
    destination.parent.mkdir(parents=True, exist_ok=True)
    skipped = {RUNS, *exclude}

    def top_level_skips(folder: str, names: list[str]) -> set[str]:
        """``exclude`` and ``runs/`` at the top; a suite's task folders' ``runs/`` too."""
        if Path(folder) == source:
            return skipped.intersection(names)
        return {RUNS}.intersection(names) if Path(folder).parent == source else set()

    write_folder_atomic(
        destination, lambda staging: shutil.copytree(source, staging, ignore=top_level_skips)
    )
    return run_costs(source)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="publish_results", description=__doc__.split("\n\n")[0])
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
    args = parser.parse_args(argv)
    if args.same_runs_only:
        if not args.source.is_dir():
            print(f"publish_results: {args.source} is not a folder of outputs", file=sys.stderr)
            return 2
        print(json.dumps(mark_same_runs(args.source), indent=2))
        return 0
    if args.destination is None:
        print("publish_results: name the destination folder under results/", file=sys.stderr)
        return 2
    try:
        costs = publish(args.source, args.destination, tuple(args.exclude))
    except PublishError as error:
        print(f"publish_results: {error}", file=sys.stderr)
        return 2
    print(f"copied {args.source} to {args.destination} (without {RUNS}/)")
    print(json.dumps(costs, indent=2))
    marked = mark_same_runs(args.destination.parent)
    print(f"claims judged on the same runs as another output: {json.dumps(marked)}")
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("publish_results", main))
