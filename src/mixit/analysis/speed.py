"""``mixit bench``: training tokens/s, MFU and peak memory per variant at a given shape, the
machine's matmul peak, Hugging Face's Llama at the same shape (``--vs-hf``) and decoding
speed with the KV / V-only caches (``--decode``). A benchmark: run it alone on a quiet
machine, compare ratios from one run.

FLOPs per trained token are 6 N + 12 L T n (N: the parameters of the blocks and the output
head; the embedding lookups cost no multiply-adds), the usual estimate for a decoder.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from mixit.analysis.throughput import (
    language_model_step,
    mixit_model,
    mixit_step,
    synchronize,
    time_interleaved,
)
from mixit.common.errors import UsageError
from mixit.common.io import JSONObject
from mixit.config.overrides import Settings
from mixit.config.schema import RunConfig
from mixit.cost.memory import check_fits
from mixit.cost.predict import flops_per_token
from mixit.inference.export_hf import llama_config
from mixit.inference.generate import cache_bytes_per_token, generate
from mixit.models.adapters import get_variant
from mixit.tasks import TASKS
from mixit.training.devices import present_device
from mixit.training.resolve import resolve_config
from mixit.training.step import use_tensor_cores

PEAK_SIZE = {"cpu": 1024, "cuda": 8192}  # the square matmul of a peak: a GPU's needs a large one


def matmul_peaks(device: torch.device) -> dict[str, float]:
    """The device's measured matmul GFLOP/s per ``train.precision``, with fp32 matmuls as
    training runs them (on a GPU, TF32 tensor cores)."""
    use_tensor_cores(device)
    size = PEAK_SIZE[device.type]
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    return {name: matmul_peak_gflops(device, dtype, size) for name, dtype in dtypes.items()}


# A product slower than this is made smaller (down to MIN_PEAK_SIZE) before the peak is timed:
# a CPU without native bf16 takes seconds for one at 1024, and 13 of them made the peak most
# of a small bench's time, while the rate barely depends on the size from a few hundred up.
SLOW_PRODUCT_SECONDS = 0.2
MIN_PEAK_SIZE = 256
# Timed products: at least the first, at most the second, stopping once the budget is spent.
PEAK_REPEATS = (3, 10)
PEAK_BUDGET_SECONDS = 1.0


def _timed_product(device: torch.device, a: torch.Tensor, b: torch.Tensor) -> float:
    synchronize(device)
    start = time.perf_counter()
    a @ b
    synchronize(device)
    return time.perf_counter() - start


def matmul_peak_gflops(device: torch.device, dtype: torch.dtype, size: int = 1024) -> float:
    """Measured GFLOP/s of a square matmul: the median of 3 to 10 timed products within about
    a second, after warm-up, at ``size`` or, where one product is slow, a smaller size."""
    while True:
        a = torch.randn(size, size, device=device, dtype=dtype)
        b = torch.randn(size, size, device=device, dtype=dtype)
        first = _timed_product(device, a, b)  # warm-up
        if first <= SLOW_PRODUCT_SECONDS or size // 2 < MIN_PEAK_SIZE:
            break
        size //= 2
    _timed_product(device, a, b)
    fewest, most = PEAK_REPEATS
    times: list[float] = []
    while len(times) < most and (len(times) < fewest or sum(times) < PEAK_BUDGET_SECONDS):
        times.append(_timed_product(device, a, b))
    return 2 * size**3 / statistics.median(times) / 1e9


def _hf_step(config: RunConfig, seq_len: int, batch: int, device: torch.device):
    try:
        import transformers
    except ImportError:
        raise UsageError("--vs-hf needs transformers: pip install transformers") from None
    m = config.model
    vocab = m.vocab_size or 1024

    hf_config = llama_config(m, vocab, seq_len, attn_implementation="sdpa")
    torch.manual_seed(config.seed)
    model = transformers.LlamaForCausalLM(hf_config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.train.lr)
    tokens = torch.randint(0, vocab, (batch, seq_len + 1), device=device)
    return language_model_step(lambda ids: model(ids).logits, optimizer, tokens, config)


def _peak_memory_mb(step, device: torch.device) -> float | None:
    """Peak allocated memory of one step, on CUDA (None elsewhere: no allocator statistics)."""
    if device.type != "cuda":
        return None
    torch.cuda.reset_peak_memory_stats(device)
    step()
    synchronize(device)
    return torch.cuda.max_memory_allocated(device) / 2**20


def _decode_rows(
    configs: Mapping[str, RunConfig], seq_len: int, batch: int, device: torch.device
) -> list[JSONObject]:
    rows = []
    for name, config in configs.items():
        model = mixit_model(config, seq_len, device).eval()
        prompt = torch.randint(0, model.config.vocab_size, (batch, 1), device=device)
        new = seq_len - 1
        generate(model, prompt, min(new, 4))  # warm-up
        synchronize(device)
        start = time.perf_counter()
        generate(model, prompt, new)
        synchronize(device)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "variant": name,
                "decode_tokens_per_s": batch * new / seconds,
                "cache_bytes_per_token": cache_bytes_per_token(model),
            }
        )
    return rows


def synthetic_data_seconds(examples: int = 100_000) -> dict[str, float]:
    """Seconds to generate ``examples`` training examples of each synthetic task."""
    sizes = {
        "addition": {"task.n_train": examples},
        "dyck": {"task.n_train": examples},
        "khop": {"task.n_train": examples},
        "retrieval": {"task.n_train": examples},
        "modular-addition": {"task.n_train": examples, "task.p": 599},
        "memorization": {"task.num_pairs": examples, "task.num_values": 512},
    }
    seconds = {}
    for task, overrides in sizes.items():
        config = resolve_config(task, "standard", "tiny", 0, overrides)
        start = time.perf_counter()
        data = TASKS[task].make_data(config.task, config.seed)
        seconds[task] = time.perf_counter() - start
        assert len(data.train) == examples
    return seconds


def _row(
    impl: str, config: RunConfig, seq_len: int, batch: int, seconds: float, peak: float
) -> JSONObject:
    m = config.model
    tokens_per_s = batch * seq_len / seconds
    flops = flops_per_token(config, seq_len)
    return {
        "impl": impl,
        "variant": config.variant,
        "n_embd": m.n_embd,
        "n_layer": m.n_layer,
        "n_head": m.n_head,
        "seq_len": seq_len,
        "batch": batch,
        "tokens_per_s": tokens_per_s,
        "samples_per_s": batch / seconds,
        "precision": config.train.precision,
        "flops_per_token": flops,
        "mfu": tokens_per_s * flops / (peak * 1e9),
    }


def bench(
    configs: Mapping[str, RunConfig],
    seq_len: int,
    batch: int,
    *,
    vs_hf: bool = False,
    decode: bool = False,
    rounds: int = 10,
    device: str = "auto",
    compile: bool = False,
    data: bool = False,
) -> JSONObject:
    """The JSON ``mixit bench --json`` writes.

    Rows: ``impl`` "mixit" (the default eager path), "mixit+compile" (``train.compile``, with
    its ``compile_s``) and "hf"; each with its training FLOPs per token and MFU.
    """
    target = present_device(device)
    for config in configs.values():
        check_bench_fits(config, seq_len, batch, target)
    peaks = matmul_peaks(target)
    result: JSONObject = {"device": str(target), "peak_gflops": peaks}
    steps, compile_seconds = {}, {}
    for name, config in configs.items():
        steps[("mixit", name)] = mixit_step(config, seq_len, batch, target)
        if compile:
            step = mixit_step(config, seq_len, batch, target, compile=True)
            start = time.perf_counter()
            step()  # the first call compiles
            compile_seconds[name] = time.perf_counter() - start
            steps[("mixit+compile", name)] = step
    # HF's Llama is the standard model; it is counted with the standard model's FLOPs.
    first = next(iter(configs.values()))
    hf_config = dataclasses.replace(first, variant="standard", variant_spec=get_variant("standard"))
    if vs_hf:
        steps[("hf", "standard")] = _hf_step(hf_config, seq_len, batch, target)
    memory = {key: _peak_memory_mb(step, target) for key, step in steps.items()}
    medians = time_interleaved(steps, rounds, 3, str(target))
    rows = []
    for (impl, name), seconds in medians.items():
        config = hf_config if impl == "hf" else configs[name]
        row = _row(impl, config, seq_len, batch, seconds, peaks[config.train.precision])
        row["peak_mem_mb"] = memory[(impl, name)]
        if impl == "mixit+compile":
            row["compile_s"] = compile_seconds[name]
        rows.append(row)
    result["rows"] = rows
    if decode:
        result["decode"] = _decode_rows(configs, seq_len, batch, target)
    if data:
        result["data_seconds_per_100k"] = synthetic_data_seconds()
    return result


def format_bench(result: Mapping[str, Any]) -> str:
    """The table ``mixit bench`` prints; speed-ups and FLOP ratios are against the first
    eager mixit row (standard by default)."""
    peaks = ", ".join(f"{name} {value:,.0f}" for name, value in result["peak_gflops"].items())
    precisions = sorted({row["precision"] for row in result["rows"]})
    lines = [
        f"device {result['device']}, {'/'.join(precisions)} steps; matmul peak (GFLOP/s, fp32 "
        f"as training runs it) {peaks}"
    ]
    header = (
        f"{'impl':<14} {'variant':<11} {'tokens/s':>10} {'samples/s':>10} {'MFU':>6} "
        f"{'speed-up':>9} {'FLOP ratio':>11}"
    )
    lines += [header, "-" * len(header)]
    base = next(r for r in result["rows"] if r["impl"] == "mixit")
    for r in result["rows"]:
        compiled = f"   (compile {r['compile_s']:.0f} s)" if "compile_s" in r else ""
        lines.append(
            f"{r['impl']:<14} {r['variant']:<11} {r['tokens_per_s']:>10.0f} "
            f"{r['samples_per_s']:>10.1f} {r['mfu']:>6.1%} "
            f"{r['tokens_per_s'] / base['tokens_per_s']:>8.2f}x "
            f"{base['flops_per_token'] / r['flops_per_token']:>10.2f}x{compiled}"
        )
    for r in result.get("decode", []):
        lines.append(
            f"decode {r['variant']:<11} {r['decode_tokens_per_s']:>10.0f} tokens/s, "
            f"cache {r['cache_bytes_per_token']} bytes/token"
        )
    for task, seconds in result.get("data_seconds_per_100k", {}).items():
        lines.append(f"data   {task:<17} 100k examples in {seconds:.3f} s")
    return "\n".join(lines)


def check_bench_fits(config: RunConfig, seq_len: int, batch: int, device: torch.device) -> None:
    """Refuse, before anything is allocated, a shape whose training step cannot fit in the
    device's free memory (``memory.check_fits``, at the model ``mixit_model`` builds)."""
    shaped = config.with_model(
        vocab_size=config.model.vocab_size or 1024,
        block_size=max(config.model.block_size, seq_len),
    ).with_train(batch_size=batch, micro_batches=1)
    shape = f"--seq-len {seq_len}, --batch {batch}"
    check_fits(shaped, seq_len, device, shape)


def bench_configs(
    models: Sequence[str], overrides: Settings, preset: str = "tiny"
) -> dict[str, RunConfig]:
    """Each variant's config at the lm task's shape with the overrides applied."""
    return {m: resolve_config("lm", m, preset, 0, overrides) for m in models}
