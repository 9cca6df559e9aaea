"""GPT-2's fused query-key-value projection split in three, so that the spectrum can freeze
queries and keys apart from values (``mixit.models.adapters``' GPT-2 parts)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class SplitQKV(nn.Module):
    """GPT-2's fused ``c_attn`` (x @ W + b, W (n, 3n)) as three (n, n) projections whose
    concatenated outputs are the fused one's, so that queries and keys can be frozen apart
    from values. Its state dict is the fused one's (``weight`` (n, 3n), ``bias`` (3n)), so a
    converted model saved with ``save_pretrained`` loads back into a plain GPT-2, and a fused
    state dict loads into it."""

    PARTS = ("query", "key", "value")

    def __init__(self, fused: nn.Module) -> None:
        super().__init__()
        n = fused.weight.shape[0]
        self.query, self.key, self.value = (nn.Linear(n, n) for _ in range(3))
        with torch.no_grad():
            for i, part in enumerate((self.query, self.key, self.value)):
                part.weight.copy_(fused.weight[:, i * n : (i + 1) * n].T)
                part.bias.copy_(fused.bias[i * n : (i + 1) * n])
        self.register_state_dict_post_hook(_fuse_state)
        self.register_load_state_dict_pre_hook(_split_state)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.query(x), self.key(x), self.value(x)], dim=-1)  # (B, T, 3n)


def _fuse_state(module: nn.Module, state: dict, prefix: str, metadata: Any) -> None:
    """``SplitQKV``'s state as GPT-2's fused ``Conv1D`` holds it: W (n, 3n), b (3n)."""
    weights = [state.pop(f"{prefix}{part}.weight") for part in SplitQKV.PARTS]  # (n, n) each
    biases = [state.pop(f"{prefix}{part}.bias") for part in SplitQKV.PARTS]  # (n,) each
    state[f"{prefix}weight"] = torch.cat([w.T for w in weights], dim=1)  # (n, 3n)
    state[f"{prefix}bias"] = torch.cat(biases)  # (3n,)


def _split_state(module: nn.Module, state: dict, prefix: str, *rest: Any) -> None:
    """A fused ``Conv1D`` state (W (n, 3n), b (3n)) as ``SplitQKV``'s three projections."""
    if f"{prefix}weight" not in state:
        return
    weight, bias = state.pop(f"{prefix}weight"), state.pop(f"{prefix}bias")
    n = weight.shape[0]
    for i, part in enumerate(SplitQKV.PARTS):
        state[f"{prefix}{part}.weight"] = weight[:, i * n : (i + 1) * n].T  # (n, n)
        state[f"{prefix}{part}.bias"] = bias[i * n : (i + 1) * n]


def split_gpt2(model: nn.Module) -> None:
    """Each block's fused ``c_attn`` of a GPT-2 as a ``SplitQKV`` (once, however often asked)."""
    for block in model.transformer.h:
        if not isinstance(block.attn.c_attn, SplitQKV):  # a model converted before
            block.attn.c_attn = SplitQKV(block.attn.c_attn)
