"""Training-step throughput of several variants at one shape, timed interleaved.

Each round times one optimizer step of every variant in turn, so a slow moment of a shared
machine hits all variants alike; the figure per variant is the median over rounds.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Mapping

import torch
import torch.nn.functional as F

from mixit.config import RunConfig
from mixit.model import Decoder
from mixit.train import make_optimizer
from mixit.variants import get_variant


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def training_throughput(
    configs: Mapping[str, RunConfig],
    seq_len: int,
    batch: int,
    rounds: int = 10,
    warmup: int = 3,
    device: str = "cpu",
) -> dict[str, dict[str, float]]:
    """``{name: {"samples_per_s", "tokens_per_s", "step_ms"}}``, medians over ``rounds``.

    Each config's model (its variant, shape, optimizer settings) trains on random tokens of
    length ``seq_len``; a vocabulary or block size left at 0 becomes 1024 / ``seq_len``.
    """
    target = torch.device(device)
    steps = {}
    for name, config in configs.items():
        config = copy.deepcopy(config)
        config.model.vocab_size = config.model.vocab_size or 1024
        config.model.block_size = max(config.model.block_size, seq_len)
        torch.manual_seed(config.seed)
        net = Decoder(config.model, get_variant(config.variant)).to(target)
        optimizer = make_optimizer(net, config)
        tokens = torch.randint(0, config.model.vocab_size, (batch, seq_len + 1), device=target)

        def step(net=net, optimizer=optimizer, tokens=tokens) -> None:
            logits = net(tokens[:, :-1])  # (B, T, V)
            loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        steps[name] = step
    for step in steps.values():
        for _ in range(warmup):
            step()
    seconds: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            _synchronize(target)
            start = time.perf_counter()
            step()
            _synchronize(target)
            seconds[name].append(time.perf_counter() - start)
    result = {}
    for name, times in seconds.items():
        median = statistics.median(times)
        result[name] = {
            "samples_per_s": batch / median,
            "tokens_per_s": batch * seq_len / median,
            "step_ms": 1000 * median,
        }
    return result
