"""The cost model against this machine (``mixit bench --cost-check``): for every distinct config
of a reproduction at one scale, the predicted step time and training memory
(``mixit.cost``) beside the measured ones. Each config is measured in a fresh process, so
that its peak resident memory is its own: the peak after a few training steps minus the
resident memory before the model is built (the interpreter, torch, the task's data, and the
libraries' buffers after one step of a minimal model).
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
from typing import Any

import torch

from mixit.config import RunConfig

STEPS = 5


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def measure(config_dict: dict[str, Any]) -> dict[str, float]:
    """In this (fresh) process: seconds per training step and the training's peak memory."""
    import time

    from mixit.config import from_dict
    from mixit.resolve import fit_model_to_data
    from mixit.tasks import get_task
    from mixit.train import setup

    filled = from_dict(config_dict, get_task(config_dict["task_name"]).config_cls)
    data = get_task(filled.task_name).make_data(filled.task, filled.seed)
    fit_model_to_data(filled, data)
    # A step of a minimal model first: the libraries' own buffers and threads are then
    # resident before the measurement starts.
    small = from_dict(filled.to_dict(), get_task(filled.task_name).config_cls)
    small.model.n_layer, small.model.n_embd, small.model.n_head = 1, 8, 1
    small.train.batch_size = 2
    setup(small, data).step()
    before = _resident_bytes()
    peak = _PeakResident()
    training = setup(filled, data)
    training.step()  # warm-up: allocations, autograd's first graph
    started = time.perf_counter()
    for _ in range(STEPS):
        training.step()
    step_seconds = (time.perf_counter() - started) / STEPS
    highest = peak.stop()
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


def _measure_in_child(config: RunConfig) -> dict[str, float]:
    code = (
        "import json, sys; from mixit.cost_check import measure; "
        "print(json.dumps(measure(json.loads(sys.stdin.read()))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(config.to_dict()),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def cost_check(scale: str = "tiny", progress: bool = False) -> dict[str, Any]:
    """Every distinct config of ``reproduce all`` at ``scale`` (seed 0): measured against
    predicted step seconds at this machine's measured fp32 matmul peak (their ratio is the
    share of peak reached, whose median is the CPU target's efficiency) and training memory."""
    from tqdm import tqdm

    from mixit.bench import matmul_peak_gflops
    from mixit.cost import flops_per_token, memory_parts, shapes
    from mixit.experiments.base import Reproduction
    from mixit.experiments.runner import plan_reproduction
    from mixit.runs import run_dir_name

    _, planned = plan_reproduction(["all"], Reproduction(scale, seeds=1))
    distinct = {run_dir_name(config): config for config in planned.values()}
    peak = matmul_peak_gflops(torch.device("cpu"), torch.float32) * 1e9
    rows = []
    for name, (filled, shape) in tqdm(
        shapes(distinct).items(), desc="measuring configs", disable=not progress
    ):
        measured = _measure_in_child(distinct[name])
        tokens = filled.train.batch_size * shape.seq_len
        ideal = tokens * flops_per_token(filled, shape.seq_len, shape.scored_share) / peak
        memory = sum(memory_parts(filled, shape.seq_len, shape.scored_share).values())
        rows.append(
            {
                "run": name,
                "step_seconds": measured["step_seconds"],
                "share_of_peak": ideal / measured["step_seconds"],
                "memory_bytes": measured["memory_bytes"],
                "predicted_memory_bytes": memory,
            }
        )
    efficiency = statistics.median(row["share_of_peak"] for row in rows)
    for row in rows:
        predicted = row["share_of_peak"] * row["step_seconds"] / efficiency
        row["time_ratio"] = row["step_seconds"] / predicted  # measured / predicted
        row["memory_ratio"] = row["memory_bytes"] / row["predicted_memory_bytes"]
    return {"scale": scale, "peak_gflops": peak / 1e9, "efficiency": efficiency, "rows": rows}


def format_cost_check(result: dict[str, Any]) -> str:
    """The check as a markdown table, with the spread of the ratios."""
    lines = [
        f"fp32 matmul peak {result['peak_gflops']:.0f} GFLOP/s; median share of peak "
        f"{result['efficiency']:.2f} (the `cpu` target's efficiency)",
        "",
        "| run | ms/step | share of peak | measured / predicted time | MiB measured "
        "| MiB predicted | measured / predicted memory |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['run']} | {row['step_seconds'] * 1e3:.1f} | {row['share_of_peak']:.2f} "
            f"| {row['time_ratio']:.2f} | {row['memory_bytes'] / 2**20:.1f} "
            f"| {row['predicted_memory_bytes'] / 2**20:.1f} | {row['memory_ratio']:.2f} |"
        )
    for key, label in (("time_ratio", "time"), ("memory_ratio", "memory")):
        ratios = sorted(row[key] for row in result["rows"])
        lines.append(
            f"\nmeasured / predicted {label}: median {statistics.median(ratios):.2f}, "
            f"range {ratios[0]:.2f} to {ratios[-1]:.2f} over {len(ratios)} configs"
        )
    return "\n".join(lines)
