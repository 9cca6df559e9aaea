"""Greedy decoding with a cache: keys and values for softmax variants, values only for MixiT.

MixiT's attention weights are fixed numbers, so a new token needs the cached values of the
earlier tokens but no keys: its cache is half the size of a softmax layer's.
"""

from __future__ import annotations

import torch

from mixit.model import Decoder
from mixit.variants import AttentionKind


@torch.no_grad()
def generate(
    model: Decoder, prompt: torch.Tensor, max_new_tokens: int, use_cache: bool = True
) -> torch.Tensor:
    """``prompt`` (B, T0) followed by ``max_new_tokens`` greedy tokens: (B, T0 + N).

    Without the cache every step runs the whole sequence again (the reference the cached
    path is tested against).
    """
    model.eval()
    tokens = prompt
    if max_new_tokens < 1:
        return tokens
    caches = model.new_caches() if use_cache else None
    logits = model(tokens, caches=caches)[:, -1]  # (B, V)
    for step in range(max_new_tokens):
        following = logits.argmax(-1, keepdim=True)  # (B, 1)
        tokens = torch.cat([tokens, following], dim=1)  # (B, T + 1)
        if step + 1 == max_new_tokens:
            break
        # Cached: feed only the new token. Uncached: the whole sequence again.
        step_input = following if use_cache else tokens
        logits = model(step_input, caches=caches)[:, -1]  # (B, V)
    return tokens


def cache_bytes_per_token(model: Decoder) -> int:
    """Bytes the decoding cache grows by per token (per sequence)."""
    itemsize = next(model.parameters()).element_size()
    per_layer = 1 if model.variant.attention is AttentionKind.MIXING else 2  # v, or k and v
    return len(model.blocks) * per_layer * model.config.n_embd * itemsize
