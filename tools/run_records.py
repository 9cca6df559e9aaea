"""Keep the finished runs of an output folder as text, so a later checkout can go on from them.

A run directory holds weights and checkpoints (tens to hundreds of MB), which are not
committed, and three small text files: ``config.json``, ``metrics.jsonl`` and
``summary.json``. A run whose ``summary.json`` exists is finished, and ``reproduce``,
``compare`` and the tuning protocol reuse a finished run from those files alone (its summary
and its metrics), except where a report reads the trained weights (the width report's
retrieval question, the analyses). This copies the three files of every finished run of
OUT into DEST/runs/; copying DEST/runs/ back into a new OUT lets the same command train only
what was not finished. Unfinished runs are left out: they start again from step 0.

    python tools/run_records.py runs/width-depth-tuned results/width-depth-tuned-partial
    cp -r results/width-depth-tuned-partial/runs runs/width-depth-tuned/   # in a new checkout

Exit status 2, with one line, when OUT has no runs/ folder or DEST/runs/ exists.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

RUNS = "runs"
RECORDS = ("config.json", "metrics.jsonl", "summary.json")


def save(out: Path, destination: Path) -> int:
    """Copy the records of OUT's finished runs into DESTINATION/runs/ (made under a temporary
    name, then renamed); the number of runs copied."""
    finished = sorted(path.parent for path in (out / RUNS).glob("*/summary.json"))
    target = destination / RUNS
    staging = destination / f".{RUNS}.partial"
    shutil.rmtree(staging, ignore_errors=True)  # left by a copy that was killed
    try:
        for run in finished:
            (staging / run.name).mkdir(parents=True)
            for name in RECORDS:
                shutil.copy2(run / name, staging / run.name / name)
        staging.mkdir(parents=True, exist_ok=True)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return len(finished)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the output folder (OUT of the command)")
    parser.add_argument("destination", type=Path, help="the folder to keep the records in")
    args = parser.parse_args(argv)
    if not (args.out / RUNS).is_dir():
        print(f"run_records: {args.out} has no {RUNS}/ folder", file=sys.stderr)
        return 2
    if (args.destination / RUNS).exists():
        print(f"run_records: {args.destination / RUNS} exists; name a new folder", file=sys.stderr)
        return 2
    count = save(args.out, args.destination)
    print(f"kept the records of {count} finished runs in {args.destination / RUNS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
