"""The cost model against the machine it runs on (``mixit bench --cost-check [SCALE]``): for
every distinct config of a reproduction at one scale, the predicted step time and training
memory (``mixit.cost.predict``) beside the measured ones.

A step's time and memory depend on the shapes alone, so each config trains on random tokens in
its run's shape (sequence length, vocabulary, the share of scored positions) instead of its
task's data. On the CPU each config is measured in a fresh process, so that its peak resident
memory is its own: the peak after a few training steps minus the resident memory before the
model is built (the interpreter, torch, and the libraries' buffers after one step of a minimal
model). On a GPU the configs are measured in turn in one process, by the allocator's peak. A
config whose predicted memory exceeds the GPU's is measured with the fewest
``train.micro_batches`` that fit, as ``--estimate --target`` advises.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch

from mixit.analysis.speed import matmul_peaks
from mixit.analysis.throughput import synchronize
from mixit.common.io import JSONObject
from mixit.common.progress import progress_bar, progress_mode
from mixit.config.overrides import Settings
from mixit.config.schema import RunConfig
from mixit.cost.predict import (
    GIB,
    TARGETS,
    Shape,
    Target,
    flops_per_token,
    memory_parts,
    micro_batches_to_fit,
    shapes,
)
from mixit.paper.runner import plan_reproduction
from mixit.running.runs import run_dir_name
from mixit.study.experiment import Reproduction
from mixit.tasks import IGNORE_INDEX, Split, TaskData
from mixit.training.devices import present_device
from mixit.training.resolve import stored_config
from mixit.training.setup import setup

if TYPE_CHECKING:
    from mixit.tasks import TaskData

STEPS = 5


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def synthetic_data(config: RunConfig, shape: Shape) -> TaskData:
    """Two batches of random tokens in the run's shape: the last round(share x T) positions
    of each row are scored, with targets among the task's answer tokens where it names them."""
    spec, m = config.task_spec, config.model
    rows, length = 2 * config.train.batch_size, shape.seq_len
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randint(1, m.vocab_size, (rows, length), generator=generator)  # (N, T)
    answers = spec.answer_ids(config.task, m.vocab_size) if spec.answer_ids else None
    choices = torch.tensor(answers) if answers else torch.arange(m.vocab_size)
    targets = choices[torch.randint(len(choices), (rows, length), generator=generator)]
    scored = max(1, round(shape.scored_share * length))
    targets[:, : length - scored] = IGNORE_INDEX  # (N, T)
    split = Split(inputs, targets)
    return TaskData(split, split, m.vocab_size)


def measure(config_dict: JSONObject, shape: Shape) -> dict[str, float]:
    """Seconds per training step and the training's peak memory of a filled-in config, on the
    device its ``train.device`` names (on the CPU, call it in a fresh process)."""
    filled = stored_config(config_dict)
    data = synthetic_data(filled, shape)
    device = torch.device(filled.train.device)
    if device.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device) + sum(
            t.nbytes for t in (data.train.inputs, data.train.targets)
        )
    else:
        # A step of a minimal model first: the libraries' own buffers and threads are then
        # resident before the measurement starts.
        small = filled.with_model(n_layer=1, n_embd=8, n_head=1)
        small = small.with_train(batch_size=2, micro_batches=1)
        setup(small, data).step()
        before = _resident_bytes()
        peak = _PeakResident()
    training = setup(filled, data)
    training.step()  # warm-up: allocations, autograd's first graph, the kernels' choice
    synchronize(device)
    started = time.perf_counter()
    for _ in range(STEPS):
        training.step()
    synchronize(device)
    step_seconds = (time.perf_counter() - started) / STEPS
    highest = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else peak.stop()
    return {"step_seconds": step_seconds, "memory_bytes": highest - before}


class _PeakResident:
    """The highest resident memory of this process while it runs, sampled every millisecond
    by a thread (the kernel's own peak, ru_maxrss, also holds the data's build)."""

    def __init__(self) -> None:
        import threading

        self.highest, self.done = _resident_bytes(), threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.wait(0.001):
            self.highest = max(self.highest, _resident_bytes())

    def stop(self) -> int:
        self.done.set()
        self.thread.join()
        return max(self.highest, _resident_bytes())


def _measure_in_child(config: RunConfig, shape: Shape) -> dict[str, float]:
    code = (
        "import json, sys; from mixit.cost.predict import Shape; "
        "from mixit.paper.cost_check import measure; "
        "config, shape = json.loads(sys.stdin.read()); "
        "print(json.dumps(measure(config, Shape(*shape))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps([config.to_dict(), list(dataclasses.astuple(shape))]),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def cost_check(
    scale: str = "tiny",
    progress: bool | None = False,
    overrides: Settings | None = None,
    device: str = "auto",
) -> JSONObject:
    """Every distinct config of ``reproduce all`` at ``scale`` (seed 0, ``overrides`` on each)
    on ``device``: its measured step seconds and training memory against those the device's
    target (``target_of``) predicts, and the share of the device's measured matmul peak the
    step reaches (the figures a target's constants are calibrated from: docs/cost.md)."""
    where = present_device(device)
    _, planned = plan_reproduction(["all"], Reproduction(scale, seeds=1, overrides=overrides or {}))
    distinct = {run_dir_name(config): config for config in planned.values()}
    peaks = {name: gflops * 1e9 for name, gflops in matmul_peaks(where).items()}
    target = target_of(where)
    rows = []
    measuring = progress_bar(
        shapes(distinct).items(), mode=progress_mode(progress), desc="measuring configs"
    )
    for name, (filled, shape) in measuring:
        filled = filled.with_train(device=str(where))
        if where.type == "cuda":
            filled = filled.with_train(
                micro_batches=micro_batches_to_fit(filled, shape, target) or 1
            )
            try:
                measured = measure(filled.to_dict(), shape)
            except torch.OutOfMemoryError:  # predicted to fit, but did not: a row says so
                rows.append({"run": name, "micro_batches": filled.train.micro_batches})
                continue
        else:
            measured = _measure_in_child(filled, shape)
        rows.append(_row(name, filled, shape, measured, peaks, target))
    measured_rows = [row for row in rows if "step_seconds" in row]
    return {
        "scale": scale,
        "device": _device_name(where),
        "overrides": dict(overrides or {}),
        "peak_gflops": {name: value / 1e9 for name, value in peaks.items()},
        "target": target.name,
        "efficiency": statistics.median(row["share_of_peak"] for row in measured_rows),
        "steps_weighted_time_ratio": sum(r["steps"] * r["step_seconds"] for r in measured_rows)
        / sum(r["steps"] * r["step_seconds"] / r["time_ratio"] for r in measured_rows),
        "rows": rows,
    }


def _row(
    name: str,
    filled: RunConfig,
    shape: Shape,
    measured: Mapping[str, float],
    peaks: Mapping[str, float],
    target: Target,
) -> JSONObject:
    """One config's measured step and memory beside the ``target``'s predictions."""
    step_flops = (
        filled.train.batch_size
        * shape.seq_len
        * flops_per_token(filled, shape.seq_len, shape.scored_share)
    )
    seconds, memory = measured["step_seconds"], measured["memory_bytes"]
    predicted = sum(memory_parts(filled, shape.seq_len, shape.scored_share, target).values())
    return {
        "run": name,
        "precision": filled.train.precision,
        "micro_batches": filled.train.micro_batches,
        "step_seconds": seconds,
        "step_flops": step_flops,
        "n_layer": filled.model.n_layer,
        "steps": filled.train.steps,
        "share_of_peak": step_flops / peaks[filled.train.precision] / seconds,
        "time_ratio": seconds / target.step_seconds(filled, step_flops),
        "memory_bytes": memory,
        "predicted_memory_bytes": predicted,
        "memory_ratio": memory / predicted,
    }


def target_of(device: torch.device) -> Target:
    """The ``--target`` whose constants the check puts to ``device``: the CPU's, or the GPU's
    of the same name (an unknown GPU gets the H100's), with the device's own memory."""
    if device.type != "cuda":
        return TARGETS["cpu"]
    name = torch.cuda.get_device_name(device).lower()
    known = [target for target in TARGETS.values() if target.name in name] or [TARGETS["h100"]]
    memory_gib = torch.cuda.get_device_properties(device).total_memory / GIB
    return dataclasses.replace(known[0], memory_gib=memory_gib)


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "cpu"


def format_cost_check(result: JSONObject) -> str:
    """The check as a markdown table, with the spread of the ratios."""
    peaks = ", ".join(f"{name} {value:,.0f}" for name, value in result["peak_gflops"].items())
    lines = [
        f"{result['device']}, `{result['scale']}` configs"
        + "".join(f" {key}={value}" for key, value in result["overrides"].items())
        + f": matmul peak (GFLOP/s) {peaks}; median share of peak {result['efficiency']:.2f}; "
        f"predictions of the `{result['target']}` target; steps-weighted measured / predicted "
        f"time {result['steps_weighted_time_ratio']:.2f}",
        "",
        "| run | precision | micro-batches | ms/step | share of peak "
        "| measured / predicted time | MiB measured | MiB predicted "
        "| measured / predicted memory |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        if "step_seconds" not in row:
            lines.append(f"| {row['run']} | | {row['micro_batches']} | out of memory | | | | | |")
            continue
        lines.append(
            f"| {row['run']} | {row['precision']} | {row['micro_batches']} "
            f"| {row['step_seconds'] * 1e3:.1f} | {row['share_of_peak']:.2f} "
            f"| {row['time_ratio']:.2f} | {row['memory_bytes'] / 2**20:.1f} "
            f"| {row['predicted_memory_bytes'] / 2**20:.1f} | {row['memory_ratio']:.2f} |"
        )
    for key, label in (("time_ratio", "time"), ("memory_ratio", "memory")):
        ratios = sorted(row[key] for row in result["rows"] if key in row)
        lines.append(
            f"\nmeasured / predicted {label}: median {statistics.median(ratios):.2f}, "
            f"range {ratios[0]:.2f} to {ratios[-1]:.2f} over {len(ratios)} configs"
        )
    return "\n".join(lines)
