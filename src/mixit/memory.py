"""What a run needs in memory at the least, from its config, before anything is allocated:
a config that cannot fit is refused in one line instead of stalling the machine.

The figure is a lower bound, so that no run that fits is ever refused: the fp32 parameters
with their gradients and AdamW's two moments, the buffers sized by ``block_size`` (RoPE
tables; MixiT's fixed (H, T, T) mixing matrices), the residual stream each layer keeps for
the backward pass, and the logits, at ``batch_size`` x ``seq_len`` tokens. A real step needs
several times the activation part (``mixit.cost`` models that for GPU estimates).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from mixit.config import RunConfig
from mixit.errors import UsageError

FLOAT = 4  # bytes per fp32 value


def model_values(config: RunConfig, mixing: bool) -> tuple[int, int]:
    """``(parameters, buffer values)`` of ``config``'s model, at the least; ``mixing``: it holds
    MixiT's fixed (H, T, T) matrices, not RoPE tables."""
    m = config.model
    n, layers, heads, block = m.n_embd, m.n_layer, m.n_head, m.block_size
    params = layers * (4 * n * n + 3 * n * m.mlp_ratio * n) + 2 * m.vocab_size * n + block * n
    buffers = layers * (heads * block * block if mixing else block * (n // max(heads, 1)))
    return params, buffers


def training_bytes(config: RunConfig, seq_len: int, mixing: bool) -> int:
    """At least the bytes one training step of ``config`` needs at ``seq_len`` tokens per
    sequence; ``mixing``: the model holds MixiT's fixed (H, T, T) matrices, not RoPE tables."""
    m = config.model
    n = m.n_embd
    params, buffers = model_values(config, mixing)
    tokens = micro_batch_rows(config) * seq_len
    activations = (m.n_layer + 1) * tokens * n + tokens * m.vocab_size  # the stream; the logits
    activation_bytes = 2 if config.train.precision == "bf16" else FLOAT
    return FLOAT * (4 * params + buffers) + activation_bytes * activations


def micro_batch_rows(config: RunConfig) -> int:
    """The rows one micro-batch holds at once (``train.micro_batches`` pieces of a batch)."""
    return -(-config.train.batch_size // config.train.micro_batches)


def available_bytes(device: torch.device) -> int:
    """Free memory of ``device``: the GPU's free memory, or the host's available memory."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_fits(
    config: RunConfig, seq_len: int, mixing: bool, device: torch.device, shape: str = ""
) -> None:
    """Refuse, in one line with both figures, a run whose estimate exceeds free memory;
    ``shape`` names the sizes as the command took them (default: the config's keys)."""
    needed, free = training_bytes(config, seq_len, mixing), available_bytes(device)
    if needed > free:
        hint = "" if shape else " (more train.micro_batches hold less of a batch at once)"
        shape = shape or (
            f"train.batch_size={config.train.batch_size}, "
            f"train.micro_batches={config.train.micro_batches}"
        )
        raise UsageError(
            f"this config needs at least {_gib(needed)} of memory on {device.type} "
            f"(model.n_layer={config.model.n_layer}, model.n_embd={config.model.n_embd}, "
            f"model.block_size={config.model.block_size}, {shape}); {_gib(free)} is free{hint}"
        )


def check_loads(config: RunConfig, mixing: bool) -> None:
    """Refuse, in one line, loading a stored run whose model alone exceeds the host's free
    memory (a damaged or foreign ``config.json`` naming huge sizes)."""
    needed, free = FLOAT * sum(model_values(config, mixing)), available_bytes(torch.device("cpu"))
    if needed > free:
        raise UsageError(
            f"its model needs at least {_gib(needed)} of memory "
            f"(model.n_layer={config.model.n_layer}, model.n_embd={config.model.n_embd}, "
            f"model.vocab_size={config.model.vocab_size}, "
            f"model.block_size={config.model.block_size}); {_gib(free)} is free"
        )


def _gib(size: int) -> str:
    return f"{size / 2**30:,.1f} GiB"
