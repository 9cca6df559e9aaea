"""The weights of a run's model as it is built, for the cost model (``mixit.cost.predict``): every
matrix a token passes through, the output head's apart (it runs at the scored positions
alone), what is trainable, and the buffers. Counted on ``build_model``'s own model on PyTorch's
meta device, so any ``model.arch`` and any task readout is counted as it runs, without
allocating or computing anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import torch
from torch import nn

from mixit.config.schema import RunConfig
from mixit.models.build import ArchModel, build_model
from mixit.models.readout import AnswerReadout, BottleneckReadout


@dataclass(frozen=True)
class Counts:
    """The weights of a run's model as ``build_model`` builds it, whatever its architecture
    (mixit's decoder, a ``model.arch``, a task's readout): ``matrices`` every matrix a token
    passes through but the output head, ``head`` the output head's (vocabulary rows; it runs
    at the scored positions alone), each with its trainable part; every parameter once (a
    tied one once), the trainable ones, and the buffers' bytes (RoPE tables, MixiT's fixed
    (H, T, T) matrices)."""

    matrices: int
    matrices_trainable: int
    head: int
    head_trainable: int
    parameters: int
    trainable: int
    buffer_bytes: int


_COUNTED: dict[str, Counts] = {}


def counted(config: RunConfig) -> Counts:
    """``Counts`` of ``config``'s model, built on the meta device (no memory, no arithmetic);
    a config whose data have not filled its vocabulary or block size (``mixit bench``'s)
    gets 1024 of each."""
    filled = config.with_model(
        vocab_size=config.model.vocab_size or 1024, block_size=config.model.block_size or 1024
    )
    # What the model is built from: neither the seed nor the training settings change a count.
    built_from = {k: v for k, v in filled.to_dict().items() if k in ("task_name", "model", "task")}
    key = json.dumps([built_from, filled.variant], sort_keys=True, default=str)
    if key not in _COUNTED:
        with torch.device("meta"):
            model = build_model(filled)
        _COUNTED[key] = _count(model)
    return _COUNTED[key]


def output_head(model: nn.Module) -> nn.Module | None:
    """The module that turns features into the vocabulary's logits, through any readout."""
    if isinstance(model, AnswerReadout):
        return output_head(model.body)
    if isinstance(model, BottleneckReadout):
        return model.head[-1] if isinstance(model.head, nn.Sequential) else model.head
    if isinstance(model, ArchModel):
        return getattr(model.inner, "get_output_embeddings", lambda: None)()
    return model.head


def _count(model: nn.Module) -> Counts:
    head = output_head(model)
    # The bottleneck readout reads its body's features: the body's own head never runs.
    idle = output_head(model.body) if isinstance(model, BottleneckReadout) else None
    matrices = {"body": [0, 0], "head": [0, 0]}
    for module in model.modules():
        weight = getattr(module, "weight", None)
        if isinstance(module, nn.Embedding) or not isinstance(weight, nn.Parameter):
            continue  # a table lookup costs no multiply-adds
        if module is idle:
            continue
        if weight.dim() != 2:
            continue  # a norm's gain
        part = matrices["head" if module is head else "body"]
        part[0] += weight.numel()
        part[1] += weight.numel() if weight.requires_grad else 0
    parameters = list(model.parameters())
    return Counts(
        *matrices["body"],
        *matrices["head"],
        parameters=sum(p.numel() for p in parameters),
        trainable=sum(p.numel() for p in parameters if p.requires_grad),
        buffer_bytes=sum(b.numel() * b.element_size() for b in model.buffers()),
    )
