"""Appendix D: training throughput of standard, Frozen-QK and MixiT at the LM shape; C11.

Every variant is timed in the same process, one step each in turn (``analysis.throughput``),
so the ratios hold on a noisy machine; the measurement is repeated once per seed. The paper
measured on H100s at its LM shape; on a CPU the ``small`` and ``paper`` shapes keep their
width, depth and length but use a batch of 8.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from mixit.analysis.throughput import training_throughput
from mixit.experiments.base import (
    SCALE_PRESET,
    Experiment,
    Report,
    Run,
    Summaries,
    cached_measurement,
    markdown_table,
    mean_std,
    seeds_key,
)
from mixit.experiments.claims import claim
from mixit.experiments.plots import bar_plot

MODELS = ("standard", "frozen-qk", "mixit")
PAPER = {"standard": 1022.8, "frozen-qk": 1267.1, "mixit": 1349.0}  # samples/s, appendix D
ROUNDS = 15
CPU_BATCH = 8


def plan(scale: str, seeds: range) -> list[Run]:
    return []


def _measure(scale: str, seeds: range) -> dict[str, Any]:
    from mixit.devices import auto_device
    from mixit.resolve import resolve_config

    device = auto_device().type
    preset = SCALE_PRESET[scale]
    configs = {m: resolve_config("lm", m, preset, 0) for m in MODELS}
    seq_len, batch = configs["standard"].task.seq_len, configs["standard"].train.batch_size
    if device == "cpu" and preset != "tiny":
        batch = min(batch, CPU_BATCH)
    repeats = [training_throughput(configs, seq_len, batch, ROUNDS, device=device) for _ in seeds]
    return {
        "shape": {"seq_len": seq_len, "batch": batch, "device": device},
        "samples_per_s": {m: [r[m]["samples_per_s"] for r in repeats] for m in MODELS},
    }


def report(scale: str, seeds: range, summaries: Summaries, out: Path) -> Report:
    measured = cached_measurement(
        out / "measurements.json",
        {"scale": scale, "seeds": seeds_key(seeds), "rounds": ROUNDS},
        lambda: _measure(scale, seeds),
    )
    speed = measured["samples_per_s"]
    median = {m: statistics.median(speed[m]) for m in MODELS}
    gain = {m: median[m] / median["standard"] - 1 for m in MODELS}
    paper_gain = {m: PAPER[m] / PAPER["standard"] - 1 for m in MODELS}
    bar_plot(
        out / "throughput.png",
        speed,
        f"Training throughput ({scale}, {measured['shape']['device']})",
        "samples / s",
    )
    rows = [
        [m, f"{PAPER[m]:.1f} ({paper_gain[m]:+.1%})", f"{mean_std(speed[m])} ({gain[m]:+.1%})"]
        for m in MODELS
    ]
    holds = median["mixit"] > median["frozen-qk"] > median["standard"]
    markdown = "\n\n".join(
        [
            f"Training samples/s, median of {ROUNDS} interleaved steps, "
            f"repeated {len(seeds)} times; "
            f"shape: {measured['shape']}.",
            markdown_table(["model", "paper (H100)", "ours"], rows),
            "![throughput](throughput.png)",
        ]
    )
    results = {**measured, "gain_over_standard": gain}
    return Report(
        markdown, results, [claim("C11").judge(holds, {"samples_per_s": median, "gain": gain})]
    )


EXPERIMENT = Experiment("throughput", "Appendix D: training throughput", plan, report)
