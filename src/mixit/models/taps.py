"""Read activations at the model's named taps (``mixit.models.attention.Tap``) with forward hooks.

Tap names are module paths: ``hook_embed``, ``blocks.{l}.hook_resid_pre``,
``blocks.{l}.hook_attn_out``, ``blocks.{l}.hook_mlp_out``, ``blocks.{l}.hook_resid_post``,
``blocks.{l}.attn.hook_pattern`` (B, H, T, T) and ``hook_final``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from mixit.common.errors import UsageError
from mixit.models.attention import Tap


def tap_names(model: nn.Module) -> list[str]:
    """Every tap of ``model``, in forward order."""
    return [name for name, module in model.named_modules() if isinstance(module, Tap)]


@torch.no_grad()
def run_with_taps(
    model: nn.Module, input_ids: torch.Tensor, names: Sequence[str]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``(logits, {tap name: activation})`` for one forward pass of ``input_ids`` (B, T)."""
    modules = dict(model.named_modules())
    unknown = [name for name in names if not isinstance(modules.get(name), Tap)]
    if unknown:
        raise UsageError(f"no tap named {unknown[0]!r}; taps are: {', '.join(tap_names(model))}")
    cache: dict[str, torch.Tensor] = {}

    def keep(name: str):
        def hook(_module: nn.Module, _inputs: tuple, output: torch.Tensor) -> None:
            cache[name] = output.detach()

        return hook

    handles = [modules[name].register_forward_hook(keep(name)) for name in names]
    try:
        logits = model(input_ids)
    finally:
        for handle in handles:
            handle.remove()
    return logits, cache
