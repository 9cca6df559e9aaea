"""``mixit bench``: training tokens/s, MFU and peak memory per variant at a given shape, the
machine's matmul peak, Hugging Face's Llama at the same shape (``--vs-hf``) and decoding
speed with the KV / V-only caches (``--decode``). A benchmark: run it alone on a quiet
machine, compare ratios from one run.

FLOPs per trained token are 6 N + 12 L T n (N: the parameters of the blocks and the output
head; the embedding lookups cost no multiply-adds), the usual estimate for a decoder.
"""

from __future__ import annotations

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
from mixit.config import RunConfig
from mixit.errors import UsageError
from mixit.generate import cache_bytes_per_token, generate


def matmul_peak_gflops(device: torch.device, dtype: torch.dtype, size: int = 1024) -> float:
    """Measured GFLOP/s of a square matmul (median of 10 after warm-up)."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        synchronize(device)
        start = time.perf_counter()
        a @ b
        synchronize(device)
        times.append(time.perf_counter() - start)
    return 2 * size**3 / statistics.median(times) / 1e9


def flops_per_token(config: RunConfig, seq_len: int) -> float:
    m = config.model
    n, L = m.n_embd, m.n_layer
    vocab = m.vocab_size or 1024
    block = 4 * n * n + 3 * m.mlp_ratio * n * n  # attention (or V and O) + gated MLP
    return 6 * (L * block + n * vocab) + 12 * L * seq_len * n


def _hf_step(config: RunConfig, seq_len: int, batch: int, device: torch.device):
    try:
        import transformers
    except ImportError:
        raise UsageError("--vs-hf needs transformers: pip install transformers") from None
    m = config.model
    vocab = m.vocab_size or 1024
    from mixit.export import llama_config

    hf_config = llama_config(m, vocab, seq_len)
    hf_config._attn_implementation = "sdpa"
    torch.manual_seed(config.seed)
    model = transformers.LlamaForCausalLM(hf_config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.train.lr)
    tokens = torch.randint(0, vocab, (batch, seq_len + 1), device=device)
    return language_model_step(lambda ids: model(ids).logits, optimizer, tokens)


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
) -> list[dict[str, Any]]:
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


def bench(
    configs: Mapping[str, RunConfig],
    seq_len: int,
    batch: int,
    vs_hf: bool = False,
    decode: bool = False,
    rounds: int = 10,
    device: str = "auto",
) -> dict[str, Any]:
    """The JSON ``mixit bench --json`` writes."""
    target = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else "cpu")
    if device not in ("auto", "cpu", "cuda"):
        target = torch.device(device)
    peak = matmul_peak_gflops(target, torch.float32)
    result: dict[str, Any] = {"device": str(target), "peak_gflops": peak}
    if target.type == "cuda":
        result["peak_gflops_bf16"] = matmul_peak_gflops(target, torch.bfloat16)
    steps, rows = {}, []
    for name, config in configs.items():
        steps[("mixit", name)] = mixit_step(config, seq_len, batch, target)
    if vs_hf:
        first = next(iter(configs.values()))
        steps[("hf", "standard")] = _hf_step(first, seq_len, batch, target)
    memory = {key: _peak_memory_mb(step, target) for key, step in steps.items()}
    medians = time_interleaved(steps, rounds, 3, str(target))
    for (impl, name), seconds in medians.items():
        config = configs[name] if impl == "mixit" else next(iter(configs.values()))
        m = config.model
        tokens_per_s = batch * seq_len / seconds
        rows.append(
            {
                "impl": impl,
                "variant": name,
                "n_embd": m.n_embd,
                "n_layer": m.n_layer,
                "n_head": m.n_head,
                "seq_len": seq_len,
                "batch": batch,
                "tokens_per_s": tokens_per_s,
                "samples_per_s": batch / seconds,
                "mfu": tokens_per_s * flops_per_token(config, seq_len) / (peak * 1e9),
                "peak_mem_mb": memory[(impl, name)],
            }
        )
    result["rows"] = rows
    if decode:
        result["decode"] = _decode_rows(configs, seq_len, batch, target)
    return result


def format_bench(result: Mapping[str, Any]) -> str:
    lines = [f"device {result['device']}, fp32 matmul peak {result['peak_gflops']:.0f} GFLOP/s"]
    header = (
        f"{'impl':<6} {'variant':<11} {'tokens/s':>10} {'samples/s':>10} {'MFU':>6} {'ratio':>6}"
    )
    lines += [header, "-" * len(header)]
    base = next(r for r in result["rows"] if r["impl"] == "mixit")["tokens_per_s"]
    for r in result["rows"]:
        lines.append(
            f"{r['impl']:<6} {r['variant']:<11} {r['tokens_per_s']:>10.0f} "
            f"{r['samples_per_s']:>10.1f} {r['mfu']:>6.1%} {r['tokens_per_s'] / base:>6.2f}"
        )
    for r in result.get("decode", []):
        lines.append(
            f"decode {r['variant']:<11} {r['decode_tokens_per_s']:>10.0f} tokens/s, "
            f"cache {r['cache_bytes_per_token']} bytes/token"
        )
    return "\n".join(lines)


def bench_configs(
    models: Sequence[str], overrides: Mapping[str, Any], preset: str = "tiny"
) -> dict[str, RunConfig]:
    """Each variant's config at the lm task's shape with the overrides applied."""
    from mixit.train import resolve_config

    return {m: resolve_config("lm", m, preset, 0, overrides) for m in models}
