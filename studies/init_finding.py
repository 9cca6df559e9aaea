"""The initialisation finding (docs/tuning.md), pre-registered: at tiny width and budget, what
lets a decoder find tiny retrieval's induction circuit is small residual-branch outputs at
initialisation, not the learning rate.

Trains the standard model on tiny retrieval, at the preset's rate and budget, untuned, on the
fresh seeds ``SEEDS``, for mixit's decoder and for Hugging Face's Llama and GPT-2, each under
the small-output initialisation and under its other one; writes
``results/NAME/results.json`` and ``report.md`` with the verdict of ``RULE`` per
architecture. The rule and the predictions were committed before any of these runs.

    python studies/init_finding.py [--out runs/init-finding] [--jobs 1] [--seed 300]
        [--name init-finding]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from mixit.cli import run_tool
from mixit.cli.options import count, folder_name, whole_number
from mixit.cli.parser import OneLineParser
from mixit.common.io import make_dir, write_json, write_text
from mixit.running.launchers import Launch
from mixit.study.compare import compare
from mixit.tuning.rules import DEFAULT_TOLERANCE, LEARNED_MARGIN

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
SEEDS = range(300, 303)  # none of 0-2 (where it was seen), 100-102, 200-202 or 1000
SOLVED = 0.90
RULE = (
    "Per architecture: confirmed when every seed under small-output reaches at least "
    f"{SOLVED} test accuracy and every seed under the other initialisation stays below the "
    f"learned bar (chance + {LEARNED_MARGIN} x {DEFAULT_TOLERANCE['test_accuracy']}); "
    "refuted when both initialisations put every seed on the same side (all solved, or all "
    "below the bar); mixed otherwise. The finding holds when mixit and hf:llama are confirmed."
)
# What the probes of the tuning protocol issue saw on seed 0, written down before these runs.
PREDICTED = {"mixit": "confirmed", "hf:llama": "confirmed", "hf:gpt2": "refuted"}
# (architecture, initialisation) -> the overrides that build it.
SETTINGS: dict[tuple[str, str], dict[str, str]] = {
    ("mixit", "small-output"): {"model.init": "small-output"},
    ("mixit", "fan-in"): {"model.init": "fan-in"},
    ("hf:llama", "small-output"): {"model.arch": "hf:llama", "model.arch_init": "small-output"},
    ("hf:llama", "own"): {"model.arch": "hf:llama", "model.arch_init": "own"},
    ("hf:gpt2", "small-output"): {"model.arch": "hf:gpt2", "model.arch_init": "small-output"},
    ("hf:gpt2", "own"): {"model.arch": "hf:gpt2", "model.arch_init": "own"},
}


def verdict(small: dict[str, Any], other: dict[str, Any]) -> str:
    """``RULE`` on one architecture's two rows."""
    bar = small["chance"] + LEARNED_MARGIN * DEFAULT_TOLERANCE["test_accuracy"]
    solved = lambda row: all(v >= SOLVED for v in row["values"])  # noqa: E731
    below = lambda row: all(v < bar for v in row["values"])  # noqa: E731
    if solved(small) and below(other):
        return "confirmed"
    if (solved(small) and solved(other)) or (below(small) and below(other)):
        return "refuted"
    return "mixed"


def measure(out: Path, jobs: int, seeds: range = SEEDS) -> dict[str, Any]:
    rows = {}
    for (arch, init), overrides in SETTINGS.items():
        start = time.perf_counter()
        result = compare(
            "retrieval",
            ["standard"],
            "tiny",
            seeds.start,
            len(seeds),
            out / f"{arch.replace(':', '-')}-{init}",
            overrides,
            progress=True,
            tune=[],
            launch=Launch(jobs=jobs),
        )
        row = result["rows"][0]
        rows[f"{arch} {init}"] = {
            "arch": arch,
            "init": init,
            "overrides": overrides,
            "values": row["values"],
            "steps_run": row["steps_run"],
            "stopped": row["stopped"],
            "chance": result["chance"],
            "wall_seconds": time.perf_counter() - start,
        }
    verdicts = {}
    for arch in PREDICTED:
        pair = [row for row in rows.values() if row["arch"] == arch]
        small = next(row for row in pair if row["init"] == "small-output")
        other = next(row for row in pair if row["init"] != "small-output")
        verdicts[arch] = verdict(small, other)
    holds = verdicts["mixit"] == verdicts["hf:llama"] == "confirmed"
    return {
        "task": "retrieval",
        "preset": "tiny",
        "seeds": list(seeds),
        "rule": RULE,
        "predicted": PREDICTED,
        "rows": rows,
        "verdicts": verdicts,
        "finding_holds": holds,
    }


def report(results: dict[str, Any]) -> str:
    header = [
        "# The initialisation finding: tiny retrieval, standard model, untuned",
        "",
        f"Written by `python studies/init_finding.py`. Seeds {results['seeds'][0]}-"
        f"{results['seeds'][-1]}. Rule (committed before the runs): {results['rule']}",
        "",
    ]
    return "\n".join([*header, findings(results), ""])


def findings(results: dict[str, Any]) -> str:
    """The measured rows, the chance level and each verdict beside its prediction."""
    lines = [
        "| architecture | initialisation | test accuracy per seed | steps | stopped | wall s |",
        "|---|---|---|---|---|---:|",
    ]
    for row in results["rows"].values():
        values = " / ".join(f"{v:.3f}" for v in row["values"])
        steps = " / ".join(str(s) for s in row["steps_run"])
        stopped = ", ".join(sorted(set(row["stopped"])))
        lines.append(
            f"| {row['arch']} | {row['init']} | {values} | {steps} | {stopped} | "
            f"{row['wall_seconds']:.0f} |"
        )
    chance = next(iter(results["rows"].values()))["chance"]
    lines += ["", f"Chance: {chance:.3f}.", "", "| architecture | predicted | verdict |"]
    lines.append("|---|---|---|")
    for arch, found in results["verdicts"].items():
        lines.append(f"| {arch} | {results['predicted'][arch]} | {found} |")
    holds = "holds" if results["finding_holds"] else "does not hold"
    lines += ["", f"The finding {holds} under the rule."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="init_finding", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/init-finding", help="where the runs go")
    parser.add_argument("--jobs", type=count, default=1, help="runs trained at once")
    parser.add_argument("--seed", type=whole_number, default=SEEDS.start, help="first of 3 seeds")
    parser.add_argument(
        "--name", type=folder_name, default="init-finding", help="the folder under results/"
    )
    args = parser.parse_args(argv)
    results = measure(Path(args.out) / args.name, args.jobs, range(args.seed, args.seed + 3))
    folder = make_dir(RESULTS / args.name)
    write_json(folder / "results.json", results)
    write_text(folder / "report.md", report(results))
    print(json.dumps(results["verdicts"]))
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("init_finding", main))
