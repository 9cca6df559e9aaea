"""docs/cost.md: what ``--estimate --target h100`` prices the paper-scale reproduction at, and
how close the CPU estimate's seconds a step come to committed runs."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from figures.common import ROOT, _json
from mixit.paper.estimate import estimate_reproduction
from mixit.running.launchers import Launch
from mixit.study.experiment import Reproduction
from mixit.study.pricing import SHARED_STEP_FACTOR

# docs/cost.md's rule for the factor: its fit set, its held-out set and the band it must meet.
FIT, HELD_OUT, BAND = "tiny-rules-seed300", "tiny-rules-seed0", (0.87, 1.15)
# And for the tuning's multiplier: its fit suite, its held-out suite, the band, the task left out.
TUNING_FIT, TUNING_HELD_OUT = "suite-llama-tuned", "suite-gpt2-tuned"
TUNING_BAND, ON_A_GPU = (0.77, 1.3), "retrieval"
# Issue #102's target for the whole tiny reproduction at --jobs 2, in hours of wall time.
TARGET_HOURS = 1.0


def _paper(jobs: int, overrides: dict[str, Any]) -> dict[str, Any]:
    """``mixit reproduce all --scale paper --estimate --target h100 --jobs JOBS`` with
    ``overrides``, on an empty output (nothing finished counts)."""
    with tempfile.TemporaryDirectory() as out:
        how = Reproduction("paper", out=Path(out), overrides=overrides, launch=Launch(jobs=jobs))
        return estimate_reproduction(["all"], how, "h100")


def paper_h100() -> str:
    """docs/cost.md: the paper-scale reproduction priced for H100s, in fp32 on one GPU and on
    eight, and in bf16, each experiment's share, and the runs that do not fit one GPU."""
    one, eight = _paper(1, {}), _paper(8, {})
    bf16 = _paper(1, {"train.precision": "bf16"})
    parts = sorted(one["experiments"].items(), key=lambda item: -item[1]["train_seconds"])
    shares = ", ".join(
        f"{name} {part['train_seconds']:,.0f} s" for name, part in parts if part["train_seconds"]
    )
    return (
        f"{one['runs_to_train']} distinct runs ({one['seeds']} seeds), "
        f"{one['train_seconds']:,.0f} seconds of training in one job: **about "
        f"{one['wall_seconds'] / 3600:,.0f} H100-hours** (fp32 on TF32 tensor cores), **about "
        f"{eight['wall_seconds'] / 3600:,.0f} hours on 8** (`--jobs 8`, one run per GPU), and "
        f"about {bf16['wall_seconds'] / 3600:,.0f} H100-hours with `train.precision=bf16`. Per "
        f"experiment, in one job: {shares} (runs shared by experiments count in each). "
        f"{len(one['runs_not_fitting'])} runs do not fit one {one['target']} "
        f"({one['memory_gib_device']:,.0f} GiB) in one piece; the largest needs about "
        f"{one['memory_gib_largest_run']:,.0f} GiB."
    )


def estimate_calibration() -> str:
    """docs/cost.md: each committed set's steps' seconds against the estimator's timing at the
    steps run, per set and per task, and the factor's rule read on its held-out set, from
    results/estimate-calibration/tiny.json (studies/estimate_calibration.py)."""
    sets = _json(ROOT / "results" / "estimate-calibration" / "tiny.json")["sets"]
    rows = [
        "| records | --jobs | runs | steps, s | timed here, s | measured / timed | median run "
        "(range) | with the factor |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name, found in sets.items():
        low, high = found["run_ratio_range"]
        factored = f"{found['ratio'] / SHARED_STEP_FACTOR:.3f}" if found["jobs"] > 1 else "-"
        rows.append(
            f"| `{name}` | {found['jobs']} | {found['runs']} | {found['measured_seconds']:,.0f} "
            f"| {found['predicted_seconds']:,.0f} | {found['ratio']:.3f} "
            f"| {found['median_run_ratio']:.2f} ({low:.2f}-{high:.2f}) | {factored} |"
        )
    tasks = sorted({task for found in sets.values() for task in found["tasks"]})
    rows += ["", "| task | " + " | ".join(f"`{name}`" for name in sets) + " |"]
    rows.append("|---|" + "---:|" * len(sets))
    for task in tasks:
        cells = [found["tasks"].get(task, {}).get("ratio") for found in sets.values()]
        rows.append(
            f"| {task} | " + " | ".join("-" if c is None else f"{c:.2f}" for c in cells) + " |"
        )
    fit, held = sets[FIT]["ratio"], sets[HELD_OUT]["ratio"]
    with_it = held / SHARED_STEP_FACTOR
    passes = BAND[0] <= with_it <= BAND[1] and abs(with_it - 1) < abs(held - 1)
    rows += [
        "",
        f"Factor, the fit set's ratio: {fit:.3f} (the estimate prices {SHARED_STEP_FACTOR:.2f}). "
        f"Held out: {held:.3f} without it, {with_it:.3f} with it (rule: within "
        f"{BAND[0]}-{BAND[1]} and nearer 1): {'adopted' if passes else 'not adopted'}.",
    ]
    rows += jobs_one_lines(sets)
    rows += reproduction_lines(sets)
    return "\n".join(rows)


def jobs_one_lines(sets: dict) -> list[str]:
    """The `--jobs 1` rate's rule read on its held-out set (results/estimate-calibration/
    jobs1.json): the seeds 400-402 campaign's runs trained after its committed ones."""
    path = ROOT / "results" / "estimate-calibration" / "jobs1.json"
    if not path.is_file():
        return []
    ((name, held),) = _json(path)["sets"].items()
    rate = sets["tiny-plateau-seed400"]["ratio"]
    with_it = held["ratio"] / rate
    passes = BAND[0] <= with_it <= BAND[1] and abs(with_it - 1) < abs(held["ratio"] - 1)
    return [
        "",
        f"`--jobs 1`: the rate of `tiny-plateau-seed400`'s runs, {rate:.3f}. Held out, "
        f"`{name}` ({held['runs']} runs trained since, one at a time): {held['ratio']:.3f} "
        f"without it, {with_it:.3f} with it (rule: within {BAND[0]}-{BAND[1]} and nearer 1): "
        f"{'adopted' if passes else 'not adopted'}.",
    ]


def reproduction_lines(sets: dict) -> list[str]:
    """The tiny reproduction as the calibrated estimate prices it (reproduce-tiny.txt), beside
    the committed sets' steps and issue #102's target."""
    estimate = (ROOT / "results" / "estimate-calibration" / "reproduce-tiny.txt").read_text()
    said = re.search(
        r"([\d,]+) s in one job, about ([\d.]+) h of wall time with --jobs (\d+)", estimate
    )
    if said is None:
        return []
    steps = [f"{sets[name]['measured_seconds'] / 2 / 3600:.2f} h" for name in (FIT, HELD_OUT)]
    rows = [
        "",
        f"`reproduce all --scale tiny --estimate --jobs {said[3]}` from empty, with the "
        "factor: "
        f"{said[1]} s in one job, {said[2]} h of wall time. The committed sets' steps alone, "
        f"two runs at a time, took {' and '.join(steps)} of it (their evaluations and setup "
        "beyond).",
    ]
    parts = {
        name: float(seconds.replace(",", ""))
        for name, seconds in re.findall(r"^\| (\w+) \| \d+ \| \d+ \| ([\d,]+) \|$", estimate, re.M)
    }
    largest = sorted(parts, key=parts.get, reverse=True)[:3]
    share = sum(parts[name] for name in largest) / sum(parts.values())
    over = float(said[2]) / TARGET_HOURS
    rows.append(
        f"Against issue #102's target of {TARGET_HOURS:.0f} h at `--jobs {said[3]}`: "
        f"{over:.1f}x over. "
        f"{', '.join(largest)} hold {share:.0%} of the experiments' seconds (a run shared by "
        "experiments counts in each)."
    )
    return rows


def tuning_calibration() -> str:
    """docs/cost.md: each tuned suite's tuning range per task against its tuning runs' seconds,
    and the multiplier's rule read on the held-out suite, from
    results/estimate-calibration/tuning.json (studies/estimate_calibration.py)."""
    suites = _json(ROOT / "results" / "estimate-calibration" / "tuning.json")["suites"]
    names = list(suites)
    rows = [
        "| task | "
        + " | ".join(f"`{name}`: grid alone, worst, spent (min)" for name in names)
        + " |",
        "|---|" + "---:|" * len(names),
    ]
    for task in suites[names[0]]["tasks"]:
        cells = []
        for name in names:
            got = suites[name]["tasks"][task]
            cells.append(
                f"{got['least'] / 60:.1f}, {got['most'] / 60:,.0f}, {got['spent'] / 60:.1f}"
            )
        gpu = " (H200, left out)" if task == ON_A_GPU else ""
        rows.append(f"| {task}{gpu} | " + " | ".join(cells) + " |")
    kept = {
        name: [got for task, got in suites[name]["tasks"].items() if task != ON_A_GPU]
        for name in names
    }
    ratios = sorted(got["spent"] / got["least"] for got in kept[TUNING_FIT])
    middle = len(ratios) // 2
    m = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
    held = kept[TUNING_HELD_OUT]
    plain = sum(got["spent"] for got in held) / sum(got["least"] for got in held)
    with_m = plain / m
    passes = TUNING_BAND[0] <= with_m <= TUNING_BAND[1] and abs(with_m - 1) < abs(plain - 1)
    used = [got["spent"] / got["most"] for name in names for got in kept[name]]
    rows += [
        "",
        f"Multiplier m, the median over `{TUNING_FIT}`'s tasks of spent over the grid alone: "
        f"{m:.3f} (range {ratios[0]:.2f}-{ratios[-1]:.2f}). Held out, `{TUNING_HELD_OUT}`: spent "
        f"over the grid alone in all {plain:.3f}, over m times it {with_m:.3f} (rule: within "
        f"{TUNING_BAND[0]}-{TUNING_BAND[1]} and nearer 1): "
        f"{'adopted' if passes else 'not adopted'}. The worst case: tasks spent "
        f"{min(used):.1%} to {max(used):.1%} of it.",
    ]
    return "\n".join(rows)
