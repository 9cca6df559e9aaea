"""Appendix D: training throughput of standard, Frozen-QK and MixiT at the LM shape; C11.

Every variant is timed in the same process, one step each in turn (``analysis.throughput``),
so the ratios hold on a noisy machine; the measurement is repeated once per seed. The paper
measured on H100s at its LM shape. The ``small`` and ``paper`` shapes keep their width, depth
and length but time a smaller batch in one step, without micro-batches: 8 on a CPU, 64 on a
GPU (the paper LM's batch of 512 needs about 50 GB for its 32,768-way logits alone, their
log-softmax and gradient in fp32, and does not fit one 80 GB GPU beside its activations).

The seeds set only how many times it is repeated (a step takes as long whatever the weights),
so C11 is independent of the seeds: fresh seeds time the same models again and confirm
nothing. The reproduction's model and training overrides (its construction, its precision)
build the models it times; its task settings are the experiment's own.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.analysis.throughput import training_throughput
from mixit.common.io import JSONObject
from mixit.common.plots import bar_plot
from mixit.config.schema import RunConfig
from mixit.paper.claims import claim, margin
from mixit.study.claim import (
    SEEDS,
    Claim,
)
from mixit.study.experiment import (
    SCALE_PRESET,
    Experiment,
    Overrides,
    Report,
    Run,
    Summaries,
)
from mixit.study.measures import cached_measurement, mean_std, measured_overrides, measurement_key
from mixit.study.text import markdown_table, ran
from mixit.training.devices import auto_device
from mixit.training.resolve import resolve_config

MODELS = ("standard", "frozen-qk", "mixit")
PAPER = {"standard": 1022.8, "frozen-qk": 1267.1, "mixit": 1349.0}  # samples/s, appendix D
ROUNDS = 15
WARMUP = 3  # untimed steps per model before the rounds (kernels chosen, caches warm)
STEP_BATCH = {"cpu": 8, "cuda": 64}


def plan(scale: str, seeds: range) -> list[Run]:
    return []


def _configs(scale: str, overrides: Overrides) -> dict[str, RunConfig]:
    models = measured_overrides(overrides)
    return {m: resolve_config("lm", m, SCALE_PRESET[scale], 0, models) for m in MODELS}


def measures(scale: str, seeds: range, overrides: Overrides) -> list[RunConfig]:
    return list(_configs(scale, overrides).values())


def _measure(scale: str, seeds: range, overrides: Overrides) -> JSONObject:
    device = auto_device().type
    configs = _configs(scale, overrides)
    seq_len, batch = configs["standard"].task.seq_len, configs["standard"].train.batch_size
    if SCALE_PRESET[scale] != "tiny":
        batch = min(batch, STEP_BATCH.get(device, batch))
    repeats = [
        training_throughput(configs, seq_len, batch, ROUNDS, WARMUP, device=device) for _ in seeds
    ]
    return {
        "shape": {"seq_len": seq_len, "batch": batch, "device": device},
        "samples_per_s": {m: [r[m]["samples_per_s"] for r in repeats] for m in MODELS},
    }


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C11: MixiT > Frozen-QK > standard in median samples/s, each gain at least the rule's
    fraction of the paper's."""
    median = {m: statistics.median(results["samples_per_s"][m]) for m in MODELS}
    gain = {m: median[m] / median["standard"] - 1 for m in MODELS}
    fraction = margin("C11", "fraction")
    holds = (
        median["mixit"] > median["frozen-qk"] > median["standard"]
        and gain["mixit"] >= fraction * margin("C11", "paper_mixit")
        and gain["frozen-qk"] >= fraction * margin("C11", "paper_frozen_qk")
    )
    return [claim("C11").judge(holds, {"samples_per_s": median, "gain": gain})]


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    key = measurement_key(scale, seeds, overrides, rounds=ROUNDS)
    measured = cached_measurement(
        out / "measurements.json", key, lambda: _measure(scale, seeds, overrides)
    )
    speed = measured["samples_per_s"]
    median = {m: statistics.median(speed[m]) for m in MODELS}
    gain = {m: median[m] / median["standard"] - 1 for m in MODELS}
    paper_gain = {m: PAPER[m] / PAPER["standard"] - 1 for m in MODELS}
    bar_plot(
        out / "throughput.png",
        speed,
        f"Training throughput ({ran(scale, seeds)}, {measured['shape']['device']})",
        "samples / s",
    )
    rows = [
        [m, f"{PAPER[m]:.1f} ({paper_gain[m]:+.1%})", f"{mean_std(speed[m])} ({gain[m]:+.1%})"]
        for m in MODELS
    ]
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
    return Report(markdown, results, judge(results))


EXPERIMENT = Experiment(
    "throughput",
    "Appendix D: training throughput",
    plan,
    report,
    judge,
    measures,
    independent_of=(SEEDS,),
)
