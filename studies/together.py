"""Two tiny trainings on the same cores, both timed: started at the same moment, and one
started beside the other already training, under each OpenMP waiting setting that mixit could
choose (issue #102 item 6). The benchmark behind docs/speed.md's rule, not a timed test.

Each process is ``mixit train`` of tiny retrieval (the standard model, ``--steps`` steps, one
evaluation at the end), timed by its own ``train_seconds`` (the steps alone: imports, data
and evaluation are not in it). A setting is an environment for both processes: ``default``
starts them through the ``mixit`` command, which chooses passive waiting when it finds its
cores busy at its start (the rule in force); every other setting starts them past that choice
with the variables it names. Writes OUT as JSON: per setting, alone's seconds and each
process's seconds and ratio to alone in each case.

    python studies/together.py --out results/wait-together/together.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from mixit.cli import run_tool
from mixit.cli.options import count
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import write_json

# The settings tried: how each process starts, and the variables it adds to an environment
# that has no OpenMP setting of its own. GOMP_SPINCOUNT bounds libgomp's spinning at a barrier
# before its thread sleeps (its default, with no policy set, is 300,000 spins).
THROUGH_COMMAND = ["-m", "mixit"]
PAST_COMMAND = ["-c", "from mixit.cli import entry_point; entry_point()"]
SETTINGS: dict[str, tuple[list[str], dict[str, str]]] = {
    "default": (THROUGH_COMMAND, {}),
    "passive": (PAST_COMMAND, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "spin-100000": (PAST_COMMAND, {"GOMP_SPINCOUNT": "100000"}),
    "spin-10000": (PAST_COMMAND, {"GOMP_SPINCOUNT": "10000"}),
    "spin-1000": (PAST_COMMAND, {"GOMP_SPINCOUNT": "1000"}),
}
OPENMP_KEYS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")
LATER_SECONDS = 8.0  # the second process of "beside" starts this long after the first


class Started(NamedTuple):
    """A training process and the folder its run writes."""

    process: subprocess.Popen[str]
    out: Path


def start(setting: str, steps: int, folder: Path) -> Started:
    """One ``mixit train`` of tiny retrieval under ``setting``, into a fresh folder."""
    how, added = SETTINGS[setting]
    env = {k: v for k, v in os.environ.items() if k not in OPENMP_KEYS} | added
    out = folder / f"run-{time.monotonic_ns()}"
    argv = [sys.executable, *how, "train", "--task", "retrieval", "--model", "standard"]
    argv += ["--preset", "tiny", "--out", str(out), "--no-progress"]
    argv += [f"train.steps={steps}", f"train.eval_every={steps}", "train.stop_at=2"]
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    return Started(process, out)


def seconds(started: Started) -> float:
    """The training seconds of a started run once it ends (its summary's ``train_seconds``)."""
    _, errors = started.process.communicate()
    summary = started.out / "summary.json"
    if started.process.returncode != 0 or not summary.is_file():
        raise UsageError(f"a timed training failed: {errors.strip().splitlines()[-1:]}")
    return float(json.loads(summary.read_text())["train_seconds"])


def measure(setting: str, steps: int, folder: Path) -> dict[str, object]:
    """Alone, together (started at once) and beside (the second ``LATER_SECONDS`` later)."""
    alone = seconds(start(setting, steps, folder))
    pair = [start(setting, steps, folder), start(setting, steps, folder)]
    together = [seconds(p) for p in pair]
    first = start(setting, steps, folder)
    time.sleep(LATER_SECONDS)
    second = start(setting, steps, folder)
    beside = [seconds(first), seconds(second)]
    return {
        "setting": setting,
        "alone_seconds": alone,
        "together_seconds": together,
        "beside_seconds": beside,
        "together_x": [s / alone for s in together],
        "beside_x": [s / alone for s in beside],
    }


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="together", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--steps", type=count, default=600, help="steps a run (default 600)")
    parser.add_argument(
        "--settings",
        default=",".join(SETTINGS),
        help=f"comma-separated, of: {', '.join(SETTINGS)} (default all)",
    )
    args = parser.parse_args(argv)
    chosen = args.settings.split(",")
    unknown = [s for s in chosen if s not in SETTINGS]
    if unknown:
        raise UsageError(f"--settings: {unknown[0]} is not one of {', '.join(SETTINGS)}")
    with tempfile.TemporaryDirectory() as scratch:
        rows = [measure(setting, args.steps, Path(scratch)) for setting in chosen]
    cores = len(os.sched_getaffinity(0))
    write_json(Path(args.out), {"steps": args.steps, "cores": cores, "settings": rows})
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("together", main))
