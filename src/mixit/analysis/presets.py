"""``mixit bench --presets``: the training step of each tiny preset, profiled on this machine.

For each task (default: the tiny presets of retrieval, addition, memorization and MQAR) the
standard model at the preset's shape trains on random tokens of the task's length and
vocabulary, every position scored. Per preset: tokens/s and MFU against the measured matmul
peak, the step split into forward (with the loss), backward and AdamW's step (timed apart,
medians over the rounds), the optimizer step again with torch's fused AdamW and with its
``foreach`` form (the same arithmetic over the list of parameters at once), and the share of
the forward and backward's operator time that matrix products take (torch.profiler, self
time per operator).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Sequence
from typing import Any, TypedDict

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from mixit.analysis.speed import matmul_peaks
from mixit.analysis.throughput import mixit_model, synchronize
from mixit.common.io import JSONObject
from mixit.config.schema import RunConfig
from mixit.cost.predict import flops_per_token
from mixit.tasks import get_task
from mixit.training.resolve import fit_model_to_data, resolve_config
from mixit.training.step import make_optimizer

TINY_TASKS = ("retrieval", "addition", "memorization", "mqar")
# The operators that are matrix products (their self time is the step's matmul time).
MATMULS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})
PROFILED_STEPS = 3


class PresetRow(TypedDict):
    preset: str
    n_embd: int
    n_layer: int
    n_head: int
    seq_len: int
    vocab_size: int
    batch: int
    tokens_per_s: float
    mfu: float
    forward_ms: float
    backward_ms: float
    optimizer_ms: float
    fused_optimizer_ms: float
    foreach_optimizer_ms: float
    matmul_share: float


def preset_config(task: str) -> RunConfig:
    """The tiny preset's standard model of ``task``, its length and vocabulary read off two
    generated examples."""
    config = resolve_config(task, "standard", "tiny", 0)
    fields = {f.name for f in dataclasses.fields(config.task)}
    sample = dataclasses.replace(
        config.task, **{name: 2 for name in ("n_train", "n_test") if name in fields}
    )
    return fit_model_to_data(config, get_task(task).make_data(sample, 0))


# The AdamW forms timed: mixit's own (``make_optimizer``), then with each of torch's options.
ADAMW_FORMS = {"own": {}, "fused": {"fused": True}, "foreach": {"foreach": True}}


def adamw_form(optimizer: torch.optim.AdamW, form: str) -> torch.optim.AdamW:
    """``optimizer``'s parameter groups and settings under AdamW's ``form`` (``ADAMW_FORMS``):
    itself for mixit's own. A group's own ``foreach`` and ``fused`` keys would override the
    constructor's, so they are left out of the copies."""
    if not ADAMW_FORMS[form]:
        return optimizer
    options = ("foreach", "fused")
    groups = [{k: v for k, v in g.items() if k not in options} for g in optimizer.param_groups]
    return torch.optim.AdamW(groups, **ADAMW_FORMS[form])


def _phases(config: RunConfig, rounds: int, form: str) -> tuple[dict[str, float], Any]:
    """Median ms of forward (with the loss), backward and the optimizer step of AdamW's
    ``form`` (``ADAMW_FORMS``), and a function that runs one whole step (for the profiler)."""
    device = torch.device("cpu")
    model = mixit_model(config, config.model.block_size, device)
    optimizer = adamw_form(make_optimizer(model, config), form)
    generator = torch.Generator().manual_seed(0)
    shape = (config.train.batch_size, config.model.block_size + 1)
    tokens = torch.randint(0, config.model.vocab_size, shape, generator=generator)

    def step(times: dict[str, list[float]] | None = None) -> None:
        marks = [time.perf_counter()]
        logits = model(tokens[:, :-1])  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        marks.append(time.perf_counter())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        marks.append(time.perf_counter())
        optimizer.step()
        marks.append(time.perf_counter())
        if times is not None:
            for name, start, end in zip(times, marks, marks[1:], strict=False):
                times[name].append(1000 * (end - start))

    for _ in range(3):
        step()
    times: dict[str, list[float]] = {"forward": [], "backward": [], "optimizer": []}
    for _ in range(rounds):
        synchronize(device)
        step(times)
    return {name: statistics.median(values) for name, values in times.items()}, step


def _matmul_share(step: Any) -> float:
    """The share of the profiled operators' self time (forward and backward) in matmuls."""
    with profile(activities=[ProfilerActivity.CPU]) as profiled:
        for _ in range(PROFILED_STEPS):
            step()
    averages = [event for event in profiled.key_averages() if event.key.startswith("aten::")]
    # AdamW's own operators run under the optimizer's step: left out of both sides.
    total = sum(e.self_cpu_time_total for e in averages if not e.key.startswith("aten::_foreach"))
    matmul = sum(e.self_cpu_time_total for e in averages if e.key in MATMULS)
    return matmul / total if total else 0.0


def preset_rows(tasks: Sequence[str] = TINY_TASKS, rounds: int = 10) -> JSONObject:
    """The JSON of ``mixit bench --presets``: the CPU's matmul peaks and one row per task."""
    for task in tasks:  # an unknown task is refused before anything is measured
        get_task(task)
    peaks = matmul_peaks(torch.device("cpu"))
    rows: list[PresetRow] = []
    for task in tasks:
        config = preset_config(task)
        m, batch = config.model, config.train.batch_size
        phases, step = _phases(config, rounds, "own")
        fused, _ = _phases(config, rounds, "fused")
        foreach, _ = _phases(config, rounds, "foreach")
        seconds = sum(phases.values()) / 1000
        tokens_per_s = batch * m.block_size / seconds
        flops = flops_per_token(config, m.block_size)
        rows.append(
            PresetRow(
                preset=task, n_embd=m.n_embd, n_layer=m.n_layer, n_head=m.n_head,
                seq_len=m.block_size, vocab_size=m.vocab_size, batch=batch,
                tokens_per_s=tokens_per_s,
                mfu=tokens_per_s * flops / (peaks[config.train.precision] * 1e9),
                forward_ms=phases["forward"], backward_ms=phases["backward"],
                optimizer_ms=phases["optimizer"], fused_optimizer_ms=fused["optimizer"],
                foreach_optimizer_ms=foreach["optimizer"],
                matmul_share=_matmul_share(step),
            )
        )  # fmt: skip
    return {"device": "cpu", "peak_gflops": peaks, "rounds": rounds, "rows": rows}


def format_presets(result: JSONObject) -> str:
    """The table ``mixit bench --presets`` prints."""
    lines = [
        f"{'preset':<13} {'shape':<24} {'tokens/s':>9} {'MFU':>6} {'fwd ms':>7} {'bwd ms':>7} "
        f"{'opt ms':>7} {'fused':>7} {'foreach':>7} {'matmul':>7}"
    ]
    for r in result["rows"]:
        shape = f"n={r['n_embd']} L={r['n_layer']} T={r['seq_len']} B={r['batch']}"
        lines.append(
            f"{r['preset']:<13} {shape:<24} {r['tokens_per_s']:>9,.0f} {r['mfu']:>6.1%} "
            f"{r['forward_ms']:>7.1f} {r['backward_ms']:>7.1f} {r['optimizer_ms']:>7.2f} "
            f"{r['fused_optimizer_ms']:>7.2f} {r['foreach_optimizer_ms']:>7.2f} "
            f"{r['matmul_share']:>7.1%}"
        )
    lines.append(
        "(fused, foreach: AdamW's step with fused=True, foreach=True; matmul: mm/addmm/bmm "
        "share of the forward and backward operators' self time)"
    )
    return "\n".join(lines)
