"""Members: many runs trained as one batched model.

Runs that share a variant and every shape (the seeds of a comparison, the rates of a tuning
rung) stack their parameters along a leading member dimension and take each optimiser step
together: one forward and backward over all of them under ``torch.func.vmap``, then each
member's own gradient clipping, AdamW step and learning-rate schedule on its slice of the
stacked parameters. Each keeps its own seed (initialisation, data and batch order), learning
rate, stop rule, metrics and run directory, and goes through the same ``RunLoop`` as a run
trained alone, so it trains to that run's numbers up to float rounding (the batched matmuls
add in another order, and the loss is read over every position's logits). A member that stops
(its stop rule, its budget or ``train.halt_at``) leaves the stack before the next step.

Only mixit's own decoder trains as members: a Hugging Face model's attention masks branch on
their values, which ``vmap`` cannot follow. Members run in one process, eager, whole batches
(no ``train.compile``, no ``train.micro_batches``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap

from mixit.common.errors import TrainingDiverged, UsageError
from mixit.common.progress import progress_bar
from mixit.config.schema import RunConfig
from mixit.models.attention import SoftmaxAttention
from mixit.models.build import RunModel
from mixit.tasks import IGNORE_INDEX
from mixit.training.rundir import RunSummary, resumed
from mixit.training.step import apply_gradients, mixed_precision
from mixit.training.threads import ThreadShare
from mixit.training.train import RunLoop, close_run, open_run, run


def member_key(config: RunConfig) -> str | None:
    """What runs must share to train as members, as a string (equal strings: one group), or
    None for a run that trains alone (a Hugging Face model, a compiled or micro-batched run).
    Their seeds, learning rates, budgets and stop rules may differ."""
    if config.model.arch != "mixit" or config.train.compile or config.train.micro_batches > 1:
        return None
    stored = config.to_dict()
    train = stored["train"]
    shared = {key: train[key] for key in ("batch_size", "precision", "device")}
    return json.dumps(
        [stored["task_name"], stored["variant"], stored["task"], stored["model"], shared],
        sort_keys=True,
    )


class Stack:
    """The members' parameters and buffers stacked along a leading member dimension, the
    tensors ``vmap`` differentiates through. Each member's own parameters are views of its
    slice (``Parameter.data``), so its optimiser's in-place step updates the stack, and its
    evaluation and checkpoint read the values the stack trains."""

    def __init__(self, models: Sequence[RunModel]) -> None:
        self.models = list(models)
        self.base = copy.deepcopy(self.models[0])  # the structure functional_call runs
        for module in self.base.modules():
            if isinstance(module, SoftmaxAttention):
                module.explicit = True
        self.params: dict[str, torch.Tensor] = {}
        self.buffers: dict[str, torch.Tensor] = {}
        self.named: list[dict[str, torch.nn.Parameter]] = []  # each member's, by name
        self.restack()

    def restack(self) -> None:
        """Stack the members' current values anew (after one has left) and point each
        member's parameters at its slice."""
        self.named = named = [dict(model.named_parameters()) for model in self.models]
        for name, first in named[0].items():
            shapes = {tuple(member[name].shape) for member in named}
            if len(shapes) > 1:
                raise UsageError(f"members differ in the shape of {name}: {sorted(shapes)}")
            stacked = torch.stack([member[name].detach() for member in named])  # (M, ...)
            self.params[name] = stacked.requires_grad_(first.requires_grad)
            for index, member in enumerate(named):
                member[name].data = stacked.detach()[index]
        buffers = [dict(model.named_buffers()) for model in self.models]
        self.buffers = {
            name: torch.stack([member[name] for member in buffers]) for name in buffers[0]
        }  # (M, ...) each

    def keep(self, indices: Sequence[int]) -> None:
        self.models = [self.models[index] for index in indices]
        self.restack()

    def losses(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Each member's cross-entropy summed over its batch's scored positions (M,), from
        ``inputs`` and ``targets`` (M, B, T)."""

        def summed(params: Any, buffers: Any, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            logits = functional_call(self.base, (params, buffers), (x,))  # (B, T, V)
            flat = logits.flatten(0, 1)  # (B * T, V)
            return F.cross_entropy(flat, y.flatten(), ignore_index=IGNORE_INDEX, reduction="sum")

        return vmap(summed)(self.params, self.buffers, inputs, targets)

    def hand_out_gradients(self) -> None:
        """Each member's slice of the stacked gradients as its parameters' ``.grad``."""
        for name, stacked in self.params.items():
            if stacked.grad is not None:
                for index, member in enumerate(self.named):
                    member[name].grad = stacked.grad[index]
                stacked.grad = None


def train_members(
    configs: Sequence[RunConfig], outs: Sequence[Path | None], resume: bool = False
) -> list[RunSummary]:
    """Train ``configs`` (resolved, one ``member_key``) as members, each writing its run
    directory in ``outs``; their summaries, in order. With ``resume``, a finished run is
    returned as it is and the others go on from their checkpoints."""
    if len(configs) != len(outs):
        raise UsageError(f"{len(configs)} members but {len(outs)} run directories")
    keys = {member_key(config) for config in configs}
    if None in keys or len(keys) != 1:
        raise UsageError("members must share a variant, task, model and batch (member_key)")
    summaries: dict[int, RunSummary] = {}
    opened = {}
    for index, (config, out) in enumerate(zip(configs, outs, strict=True)):
        finished = resumed(out, config) if resume else None
        if finished is not None:
            summaries[index] = finished
        else:
            opened[index] = open_run(config, out, resume)
    if opened:
        _train_together(opened)
    for index, (loop, _) in opened.items():
        summaries[index] = close_run(loop)
    return [summaries[index] for index in range(len(configs))]


def _train_together(opened: dict[int, tuple[RunLoop, range]]) -> None:
    """Step the opened members together until each has ended."""
    loops = {index: loop for index, (loop, _) in opened.items()}
    last = {index: steps.stop for index, (_, steps) in opened.items()}
    active = [index for index in loops if loops[index].progress["step"] < last[index]]
    if not active:
        return
    stack = Stack([loops[index].training.model for index in active])
    first = loops[active[0]].training
    bar = progress_bar(mode="off")  # a group's runs show no bar of their own
    # One thread while the cores are shared.
    with ThreadShare.on(first.device) as share:
        while active:
            batches = [loops[index].training.batch() for index in active]
            inputs = torch.stack([x for x, _ in batches])  # (M, B, T)
            targets = torch.stack([y for _, y in batches])  # (M, B, T)
            counts = (targets != IGNORE_INDEX).sum((1, 2)).float()  # (M,)
            with mixed_precision(first.device, first.config):
                losses = stack.losses(inputs, targets) / counts  # (M,)
            losses.sum().backward()
            stack.hand_out_gradients()
            ended = []
            for index, loss_value in zip(active, losses.detach().tolist(), strict=True):
                loop = loops[index]
                training = loop.training
                grad_norm = apply_gradients(
                    training.model, training.optimizer, loss_value, training.config
                )
                step = loop.progress["step"]
                if loop.after_step(step, loss_value, grad_norm, bar) or step + 1 >= last[index]:
                    ended.append(index)
            if ended:
                kept = [position for position, index in enumerate(active) if index not in ended]
                active = [active[position] for position in kept]
                if active:
                    stack.keep(kept)
            share.tick()
    bar.close()


def train_group(configs: Sequence[RunConfig], outs: Sequence[Path]) -> list[RunSummary | str]:
    """``train_members`` with resume, for a plan's runs: each one's summary, or for a run
    that diverged the message saying so. When a member diverges the group trains again one run
    at a time (each from its checkpoint), so that one run's divergence is its own."""
    try:
        return list(train_members(configs, outs, resume=True))
    except TrainingDiverged:
        pass
    results: list[RunSummary | str] = []
    for config, out in zip(configs, outs, strict=True):
        try:
            results.append(run(config, out, resume=True))
        except TrainingDiverged as error:
            results.append(str(error))
    return results
