"""C10 under each frozen draw: whether every verdict seed's Frozen-QK retrieval model holds the
induction circuit (a previous-token head at the value positions, and an induction head in a
later layer, each scoring at least C10's threshold: ``mixit.paper.figure3.has_circuit``), read
per draw of a ``compare --frozen-draws`` output on retrieval (docs/reviewers.md, "Is a verdict
about the variant, or about one draw of its frozen weights?").

Reads each ``draw-SEED/results.csv`` of DRAWS and the Frozen-QK runs' weights under its
``runs/``; writes ``DRAWS/circuit.json`` (each draw's verdict, and each seed's best scores) and
prints one line a draw. Run it before the output is published: publishing keeps no weights.

    python studies/draws_circuit.py runs/draws-c1
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TypedDict

from mixit.cli import run_tool
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.paper.claims import margin
from mixit.paper.figure3 import DECIDES, circuit_scores, has_circuit
from mixit.study.results import read_results_csv

MODEL = "frozen-qk"


class SeedCircuit(TypedDict):
    seed: int
    run: str
    circuit: bool
    best_previous_token_at_values: float
    best_induction: float


class DrawCircuit(TypedDict):
    frozen_seed: int
    holds: bool  # C10 under this draw: every verdict seed has the circuit
    seeds: list[SeedCircuit]


def draw_circuit(folder: Path) -> DrawCircuit:
    """One draw's Frozen-QK verdict runs (its results.csv's rows), each read for the circuit."""
    csv = folder / "results.csv"
    if not csv.is_file():
        raise UsageError(f"{folder} holds no results.csv of a comparison")
    seeds: list[SeedCircuit] = []
    for row in read_results_csv(csv):
        if row["model"] != MODEL or row["task"] != "retrieval":
            continue
        run = folder / "runs" / Path(row["run_dir"]).name
        if not (run / "model.safetensors").is_file():
            raise UsageError(f"{run} keeps no weights to read heads from (model.safetensors)")
        scores, _, _ = circuit_scores(str(run))
        seeds.append(
            {
                "seed": int(row["seed"]),
                "run": run.name,
                "circuit": has_circuit(scores),
                "best_previous_token_at_values": max(max(layer) for layer in scores[DECIDES]),
                "best_induction": max(max(layer) for layer in scores["induction"]),
            }
        )
    if not seeds:
        raise UsageError(f"{csv} lists no {MODEL} retrieval run")
    seeds.sort(key=lambda s: s["seed"])
    frozen_seed = int(folder.name.removeprefix("draw-"))
    return {"frozen_seed": frozen_seed, "holds": all(s["circuit"] for s in seeds), "seeds": seeds}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="draws_circuit.py", description=__doc__.splitlines()[0])
    parser.add_argument("draws", type=Path, help="a compare --frozen-draws output on retrieval")
    args = parser.parse_args(argv)
    folders = sorted(p for p in args.draws.glob("draw-*") if p.name[5:].isdigit())
    if not folders:
        raise UsageError(f"{args.draws} holds no draw-SEED folders of a --frozen-draws output")
    draws = [draw_circuit(folder) for folder in folders]
    threshold = margin("C10", "threshold")
    for draw in draws:
        per_seed = ", ".join(
            f"s{s['seed']} {s['best_previous_token_at_values']:.2f}/{s['best_induction']:.2f}"
            for s in draw["seeds"]
        )
        verdict = "holds" if draw["holds"] else "does not hold"
        print(f"draw {draw['frozen_seed']}: C10 {verdict} (previous-token/induction {per_seed})")
    held = sum(d["holds"] for d in draws)
    write_json(
        args.draws / "circuit.json",
        {"claim": "C10", "threshold": threshold, "held_on": held, "draws": draws},
    )
    print(f"C10 holds on {held} of {len(draws)} draws (threshold {threshold})")
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("draws_circuit", main))
