"""The memory model: what a training step holds (``step_memory``), used two ways.

- ``mixit.cost.predict`` prices a run on a target device at its model as built (``counts.counted``)
  and the target's measured activation factor.
- Before anything is allocated here, ``check_fits`` refuses in one line a config that cannot
  fit, instead of stalling the machine. Its figure is the same model at its floor, a lower
  bound so that no run that fits is ever refused: the weights from the sizes alone
  (``sized_counts``, without building a model a hostile size would make huge), each layer
  keeping only its input for the backward pass, and one scored position per row.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from mixit.common.errors import UsageError
from mixit.config.schema import RunConfig
from mixit.cost.counts import Counts
from mixit.models.attention import MixerTraits
from mixit.models.mixers import variant_traits

FLOAT = 4  # bytes per fp32 value


def mixer_of(config: RunConfig) -> MixerTraits:
    """The traits of the token mixer ``config``'s variant declares: what the memory model
    sizes its projections, position table and buffers by."""
    return variant_traits(config.variant_spec, config.model)


def sized_counts(config: RunConfig, mixer: MixerTraits) -> Counts:
    """The weights of ``config``'s model from its sizes alone, at the least (every parameter
    counted trainable), with the projections, position table and buffers its token ``mixer``
    declares."""
    m = config.model
    n, layers, heads, block = m.n_embd, m.n_layer, m.n_head, m.block_size
    body = layers * (mixer.projections * n * n + 3 * n * m.mlp_ratio * n)
    head = m.vocab_size * n
    # The blocks, the embedding and the head, and a learned position table (the norms' gains
    # left out: a lower bound).
    learned = mixer.learned_positions
    matrices = heads * block * block
    trained = layers * matrices if mixer.matrices == "trained" else 0
    parameters = body + 2 * head + (block * n if learned else 0) + trained
    fixed = matrices if mixer.matrices == "fixed" else 0
    rope = block * (n // max(heads, 1)) if mixer.rope else 0
    buffers = layers * (fixed + rope)
    return Counts(body, body, head, head, parameters, parameters, FLOAT * buffers)


def step_memory(
    config: RunConfig,
    counts: Counts,
    seq_len: int,
    scored_share: float,
    activation_factor: float,
) -> dict[str, int]:
    """Bytes a training step holds, by part. Activations kept for the backward pass, per token
    and layer: the block's two norm inputs and outputs, Q, K, V and the mixed output (8 n), and
    the gated MLP's four hidden tensors (4 r n), in the autocast dtype; at the scored
    positions, the loss's tensors: the fp32 logits, the log-softmax the loss keeps for
    backward and the gradient (12 bytes an entry; under bf16 autocast also the bf16 logits
    and their bf16 gradient, 16). The activations are then scaled by ``activation_factor``
    (a target's measured one, or ``floor_factor`` for the lower bound)."""
    m, c = config.model, counts
    n, layers = m.n_embd, m.n_layer
    tokens = micro_batch_rows(config) * seq_len  # the activations of one micro-batch at once
    autocast = 2 if config.train.precision == "bf16" else FLOAT
    logit_bytes = 3 * FLOAT + (2 * 2 if config.train.precision == "bf16" else 0)
    return {
        "weights": FLOAT * c.parameters,
        "gradients": FLOAT * c.trainable,
        "optimizer": 2 * FLOAT * c.trainable,
        "buffers": c.buffer_bytes,
        "activations": round(
            activation_factor * autocast * tokens * (layers * (8 * n + 4 * m.mlp_ratio * n) + 3 * n)
        ),
        "logits": round(logit_bytes * tokens * scored_share * m.vocab_size),
    }


def floor_factor(config: RunConfig) -> float:
    """The activation factor at which ``step_memory`` keeps only each layer's input: n of the
    8 n + 4 r n values a token it counts per layer."""
    return 1.0 / (8 + 4 * config.model.mlp_ratio)


def training_bytes(config: RunConfig, seq_len: int, mixer: MixerTraits) -> int:
    """At least the bytes one training step of ``config`` needs at ``seq_len`` tokens per
    sequence: ``step_memory`` at its floor (``sized_counts``, ``floor_factor``, one scored
    position per row)."""
    counts = sized_counts(config, mixer)
    return sum(step_memory(config, counts, seq_len, 1 / seq_len, floor_factor(config)).values())


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


def check_fits(config: RunConfig, seq_len: int, device: torch.device, shape: str = "") -> None:
    """Refuse, in one line with both figures, a run whose estimate exceeds free memory;
    ``shape`` names the sizes as the command took them (default: the config's keys)."""
    free = available_bytes(device)
    needed = training_bytes(config, seq_len, mixer_of(config))
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


def check_loads(config: RunConfig) -> None:
    """Refuse, in one line, loading a stored run whose model alone exceeds the host's free
    memory (a damaged or foreign ``config.json`` naming huge sizes)."""
    counts = sized_counts(config, mixer_of(config))
    needed = FLOAT * counts.parameters + counts.buffer_bytes
    free = available_bytes(torch.device("cpu"))
    if needed > free:
        raise UsageError(
            f"its model needs at least {_gib(needed)} of memory "
            f"(model.n_layer={config.model.n_layer}, model.n_embd={config.model.n_embd}, "
            f"model.vocab_size={config.model.vocab_size}, "
            f"model.block_size={config.model.block_size}); {_gib(free)} is free"
        )


def _gib(size: int) -> str:
    return f"{size / 2**30:,.1f} GiB"
