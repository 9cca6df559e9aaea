"""One optimisation step and what it needs: the optimizer and its learning-rate schedule, the
batch, the precision and the compilation."""

from __future__ import annotations

import math

import torch

from mixit.config.schema import RunConfig
from mixit.models.build import RunModel
from mixit.training.distributed import ALONE, Ranks
from mixit.training.scoring import scored_count, summed_loss


def mixed_precision(device: torch.device, config: RunConfig) -> torch.autocast:
    """bf16 autocast when ``train.precision=bf16`` (a no-op context for fp32)."""
    enabled = config.train.precision == "bf16"
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)


def use_tensor_cores(device: torch.device) -> None:
    """On CUDA, fp32 matmuls run on TF32 tensor cores: mixit's fp32 on a GPU (the cost model
    prices it at the TF32 peak)."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


def make_optimizer(model: RunModel, config: RunConfig) -> torch.optim.AdamW:
    """AdamW over the trainable parameters only; no weight decay on norm gains."""
    trainable = model.trainable_parameters()
    groups = [
        {
            "params": [p for p in trainable if p.dim() >= 2],
            "weight_decay": config.train.weight_decay,
        },
        {"params": [p for p in trainable if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        [g for g in groups if g["params"]],
        lr=config.train.lr * lr_multiplier(config),
        betas=(config.train.beta1, config.train.beta2),
    )


def lr_multiplier(config: RunConfig) -> float:
    """The factor ``train.lr_scaling`` puts on the learning rate: (base depth / L) times
    (base width / n), the authors' --scale_lr; 1.0 when it is off."""
    if not config.train.lr_scaling:
        return 1.0
    m = config.model
    return (m.residual_depth_base / m.n_layer) * (m.width_base / m.n_embd)


def lr_factor(step: int, config: RunConfig) -> float:
    """Linear warm-up, then cosine decay from 1 to ``min_lr_ratio`` at the last step."""
    t = config.train
    if step < t.warmup_steps:
        return (step + 1) / t.warmup_steps
    progress = (step - t.warmup_steps) / max(1, t.steps - t.warmup_steps)
    return t.min_lr_ratio + (1 - t.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def sample_batch(
    inputs: torch.Tensor,
    targets: torch.Tensor,
    batches: torch.Generator,
    config: RunConfig,
    ranks: Ranks = ALONE,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A training batch drawn with replacement, this rank's slice of it: (B / world, T) each."""
    index = torch.randint(len(inputs), (config.train.batch_size,), generator=batches)
    index = ranks.shard(index).to(inputs.device)
    return inputs[index].long(), targets[index].long()


def compiled(module: torch.nn.Module, config: RunConfig) -> torch.nn.Module:
    """``module`` under torch.compile when ``train.compile`` asks for it, else itself.

    A worker of `reproduce` or `sweep` (or `--estimate`) handles many runs in turn. Forgetting
    the earlier runs' compiled graphs keeps each run's numbers independent of what ran before
    it (a second shape could otherwise get a dynamic-shape graph) and keeps a long-lived
    process under torch's limit of compiled versions, past which it quietly runs eager.
    """
    if not config.train.compile:
        return module
    torch.compiler.reset()
    return torch.compile(module)


def train_step(
    trained: torch.nn.Module,
    model: RunModel,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    config: RunConfig,
    ranks: Ranks = ALONE,
) -> tuple[float, float]:
    """One optimiser step: ``(global mean loss, gradient norm before clipping)``.

    ``trained`` runs the forward pass (``model`` itself, or its DDP or compiled wrapper);
    ``model`` owns the parameters. The batch's gradient accumulates over
    ``train.micro_batches`` pieces, each holding its share of the activations, so a batch too
    large for the device's memory trains as one step. A non-finite loss returns before any
    update.
    """
    optimizer.zero_grad(set_to_none=True)
    count = scored_count(targets, ranks)
    total = torch.zeros((), device=inputs.device)
    pieces = config.train.micro_batches
    for piece_inputs, piece_targets in zip(
        inputs.chunk(pieces), targets.chunk(pieces), strict=True
    ):  # (B / pieces, T) each
        with mixed_precision(inputs.device, config):
            loss = summed_loss(trained, piece_inputs, piece_targets)
        (loss / count * ranks.world).backward()
        total += loss.detach()
    loss_value = (ranks.sum(total) / count).item()
    return loss_value, float(apply_gradients(model, optimizer, loss_value, config))


def apply_gradients(
    model: RunModel, optimizer: torch.optim.Optimizer, loss_value: float, config: RunConfig
) -> torch.Tensor:
    """Clip ``model``'s gradients to ``train.grad_clip`` and take the optimiser's step: the
    gradient norm before clipping, on the device (members read it only when they log, so
    that a step waits on the device once, not once per member). A non-finite loss returns
    NaN before any update."""
    if not math.isfinite(loss_value):
        return torch.tensor(math.nan)
    grad_norm = torch.nn.utils.clip_grad_norm_(model.trainable_parameters(), config.train.grad_clip)
    optimizer.step()
    return grad_norm
