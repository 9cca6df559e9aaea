"""Training-step throughput of several models at one shape, timed interleaved.

Each round times one optimizer step of every model in turn, so a slow moment of a shared
machine hits all of them alike; the figure per model is the median over rounds.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F

from mixit.config.schema import RunConfig
from mixit.models.decoder import Decoder
from mixit.training.step import make_optimizer, mixed_precision, use_tensor_cores

Step = Callable[[], None]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def language_model_step(
    logits_of: Callable[[torch.Tensor], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    tokens: torch.Tensor,
    config: RunConfig,
) -> Step:
    """One next-token training step on ``tokens`` (B, T + 1) for any model, at the precision
    ``config`` trains with (bf16 autocast or fp32, on TF32 tensor cores on CUDA)."""
    use_tensor_cores(tokens.device)

    def step() -> None:
        with mixed_precision(tokens.device, config):
            logits = logits_of(tokens[:, :-1])  # (B, T, V)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), tokens[:, 1:].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def mixit_model(config: RunConfig, seq_len: int, device: torch.device) -> Decoder:
    """The model of ``config`` on ``device``; vocabulary / block size left at 0 become
    1024 / ``seq_len``."""
    sizes = {"vocab_size": config.model.vocab_size or 1024}
    sizes["block_size"] = max(config.model.block_size, seq_len)
    torch.manual_seed(config.seed)
    shape = dataclasses.replace(config.model, **sizes)
    return Decoder(shape, config.variant_spec).to(device)


def mixit_step(
    config: RunConfig, seq_len: int, batch: int, device: torch.device, compile: bool = False
) -> Step:
    """One training step of ``config``'s model on random tokens (B, seq_len + 1)."""
    model = mixit_model(config, seq_len, device)
    optimizer = make_optimizer(model, config)
    tokens = torch.randint(0, model.config.vocab_size, (batch, seq_len + 1), device=device)
    return language_model_step(
        torch.compile(model) if compile else model, optimizer, tokens, config
    )


def time_interleaved(
    steps: Mapping[str, Step], rounds: int = 10, warmup: int = 3, device: str = "cpu"
) -> dict[str, float]:
    """Median seconds per step of each step function, timed one after another per round."""
    target = torch.device(device)
    for step in steps.values():
        for _ in range(warmup):
            step()
    seconds: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            synchronize(target)
            start = time.perf_counter()
            step()
            synchronize(target)
            seconds[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in seconds.items()}


def training_throughput(
    configs: Mapping[str, RunConfig],
    seq_len: int,
    batch: int,
    rounds: int = 10,
    warmup: int = 3,
    device: str = "cpu",
) -> dict[str, dict[str, float]]:
    """``{name: {"samples_per_s", "tokens_per_s", "step_ms"}}``, medians over ``rounds``."""
    target = torch.device(device)
    steps = {name: mixit_step(c, seq_len, batch, target) for name, c in configs.items()}
    medians = time_interleaved(steps, rounds, warmup, device)
    return {
        name: {
            "samples_per_s": batch / median,
            "tokens_per_s": batch * seq_len / median,
            "step_ms": 1000 * median,
        }
        for name, median in medians.items()
    }
