"""Give the runs of an output folder the names today's mixit looks them up by, after run names
came to cover the files a run reads.

A run's directory name is a hash of its config and, since commit c9d86cf, of the contents of
the files it reads besides (a custom task's data files or generator, a ``module:`` arch's
factory). A run of such a task trained before then is named by its config alone, so the same
command no longer finds it and trains it again. This finds every run under OUT (its runs/,
each task's or axis value's runs/) whose name is its stored config's config-only name and
renames it to today's name, which hashes the files as they are now. Runs of the built-in
tasks keep their names and are left as they are.

Today's name says the run read today's files, which its records cannot show (they keep no
copy of a generator or a data file), so nothing is renamed without ``--apply``. Apply it only
when those files have not changed since the runs trained (``git log -- FILE`` says):

    python tools/rename_runs.py runs/axis-lookup            # lists what it would rename
    python tools/rename_runs.py runs/axis-lookup --apply

Exit status 2, with one line, when OUT holds no run, or a run's config cannot be read.
"""

from __future__ import annotations

import copy
import itertools
import json
import sys
from pathlib import Path
from typing import NamedTuple

from mixit.cli import run_tool
from mixit.cli.options import OneLineParser
from mixit.common.errors import UsageError
from mixit.config.schema import RunConfig
from mixit.running.runs import hashed_name, run_dir_name
from mixit.training.resolve import stored_config

FILLED_FROM_DATA = ("vocab_size", "block_size")  # 0 when named, filled in before config.json


class Rename(NamedTuple):
    run: Path
    name: str  # today's name


def todays_name(run_name: str, config: RunConfig) -> str | None:
    """Today's name for a run called ``run_name`` whose config.json stores ``config``, if that
    name is the config-only one it had before names covered a run's files; else None. The
    name hashed the config before the data filled in its sizes: each was either given (as
    stored) or left at 0."""
    stored = [getattr(config.model, key) for key in FILLED_FROM_DATA]
    for sizes in itertools.product(*((size, 0) for size in stored)):
        named = copy.deepcopy(config)
        for key, size in zip(FILLED_FROM_DATA, sizes, strict=True):
            setattr(named.model, key, size)
        if run_name == hashed_name(named):
            return run_dir_name(named)
    return None


def renames(out: Path) -> list[Rename]:
    """The runs under ``out`` named by their config alone whose name today differs."""
    found = []
    for path in sorted(out.rglob("runs/*/config.json")):
        run = path.parent
        try:
            config = stored_config(json.loads(path.read_text()))
        except (ValueError, UsageError) as error:  # not JSON, not UTF-8, or not mixit's
            raise UsageError(f"{path} is not a readable config ({error})") from None
        name = todays_name(run.name, config)
        if name is not None and name != run.name:
            found.append(Rename(run, name))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="rename_runs", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the output folder (OUT of the command)")
    parser.add_argument(
        "--apply", action="store_true", help="rename (without it, only list what would be)"
    )
    args = parser.parse_args(argv)
    if not args.out.is_dir() or not any(args.out.rglob("runs/*/config.json")):
        print(f"rename_runs: {args.out} holds no run (no runs/*/config.json)", file=sys.stderr)
        return 2
    found = renames(args.out)
    taken = [r for r in found if (r.run.parent / r.name).exists()]
    if taken:
        print(f"rename_runs: {taken[0].run.parent / taken[0].name} exists already", file=sys.stderr)
        return 2
    for rename in found:
        print(f"{rename.run} -> {rename.name}")
        if args.apply:
            rename.run.rename(rename.run.parent / rename.name)
    verb = "renamed" if args.apply else "would rename (give --apply)"
    print(f"{verb} {len(found)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("rename_runs", main))
