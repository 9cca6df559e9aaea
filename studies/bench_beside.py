"""How much slower a tiny training step is beside a second mixit training on the same cores,
with the wait policy the ``mixit`` command chooses (after) and with none chosen (before):
the benchmark of issue #74, not a timed test.

Times ``mixit bench`` at the table's setting (the standard decoder, n=64, 2 layers, batch 128,
61 tokens, AdamW) alone, then beside ``mixit train`` of tiny retrieval, twice: both processes
started through the ``mixit`` command (``mixit.__main__``, which sets a passive policy when it
finds its cores busy), and both started past it (``mixit.cli``, no policy: as before). Writes
OUT as JSON with each case's ms per step and its ratio to alone.

    python studies/bench_beside.py --out results/wait-policy-beside/bench.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mixit.cli import run_tool
from mixit.cli.options import count
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import write_json

SHAPE = {"seq_len": 61, "batch": 128, "n_embd": 64, "n_layer": 2}
# How each process is started: through the command's entry (which chooses the wait policy) or
# past it, as every mixit process started before the entry chose one.
STARTS = {
    "after": ["-m", "mixit"],
    "before": ["-c", "from mixit.cli import entry_point; entry_point()"],
}
WARM_SECONDS = 20.0  # the other training's start-up (imports, data) before it trains


def bench_ms(start: list[str], rounds: int, folder: Path) -> float:
    """One ``mixit bench`` of the standard decoder at ``SHAPE``: ms per training step."""
    path = folder / f"bench-{time.monotonic_ns()}.json"
    argv = [sys.executable, *start, "bench", "--models", "standard", "--rounds", str(rounds)]
    argv += ["--seq-len", str(SHAPE["seq_len"]), "--batch", str(SHAPE["batch"])]
    argv += [f"model.n_embd={SHAPE['n_embd']}", f"model.n_layer={SHAPE['n_layer']}"]
    subprocess.run([*argv, "--json", str(path)], check=True, capture_output=True)
    row = json.loads(path.read_text())["rows"][0]
    return 1000.0 * SHAPE["seq_len"] * SHAPE["batch"] / row["tokens_per_s"]


def beside(start: list[str], rounds: int, folder: Path) -> float:
    """``bench_ms`` while a tiny retrieval training, started the same way, runs beside it."""
    argv = [sys.executable, *start, "train", "--task", "retrieval", "--model", "standard"]
    argv += ["--out", str(folder / f"other-{time.monotonic_ns()}"), "--no-progress"]
    argv += ["train.steps=1000000", "train.eval_every=1000000"]
    other = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(WARM_SECONDS)
        if other.poll() is not None:  # it never trained: nothing was beside the benchmark
            raise UsageError(f"the training beside it ended: {other.stderr.read().strip()}")
        return bench_ms(start, rounds, folder)
    finally:
        other.terminate()
        other.wait()


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="bench_beside", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--rounds", type=count, default=20, help="timed steps (default 20)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        alone = bench_ms(STARTS["after"], args.rounds, folder)
        cases = [
            {"case": case, "ms_per_step": (ms := beside(start, args.rounds, folder))}
            | {"times_alone": ms / alone}
            for case, start in STARTS.items()
        ]
    write_json(Path(args.out), {"setting": SHAPE, "alone_ms_per_step": alone, "cases": cases})
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("bench_beside", main))
