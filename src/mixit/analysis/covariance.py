"""Covariance between the representations of different tokens of one sequence (Table 7).

Rank collapse means every token ends up with nearly the same representation. For each
sequence, each token's last-layer residual vector (``blocks.{L-1}.hook_resid_post``, before the
final norm) is centred over its n coordinates; the covariance of tokens i and j is
<x_i, x_j> / n and the correlation its normalised form. Both are averaged over pairs i != j,
then over sequences.
"""

from __future__ import annotations

import torch

from mixit.config.schema import RunConfig
from mixit.models.decoder import Decoder
from mixit.models.taps import run_with_taps
from mixit.training.rundir import new_model


def token_covariance(model: Decoder, input_ids: torch.Tensor) -> dict[str, float]:
    """``{"covariance": ..., "correlation": ...}``: mean over token pairs i != j, sequences."""
    name = f"blocks.{len(model.blocks) - 1}.hook_resid_post"
    _, cache = run_with_taps(model, input_ids, [name])
    h = cache[name].double()  # (B, T, n)
    _, T, n = h.shape
    x = h - h.mean(-1, keepdim=True)  # (B, T, n) centred per token
    covariance = x @ x.transpose(1, 2) / n  # (B, T, T)
    scale = covariance.diagonal(dim1=1, dim2=2).clamp(min=1e-30).sqrt()  # (B, T)
    correlation = covariance / (scale[:, :, None] * scale[:, None, :])  # (B, T, T)
    off_diagonal = ~torch.eye(T, dtype=torch.bool)  # (T, T)
    return {
        "covariance": covariance[:, off_diagonal].mean().item(),
        "correlation": correlation[:, off_diagonal].mean().item(),
    }


def covariance_at_initialisation(config: RunConfig, input_ids: torch.Tensor) -> dict[str, float]:
    """``token_covariance`` of the model ``config`` builds (seeded by ``config.seed``),
    untrained. ``config.model`` must have its vocabulary and block size filled in."""
    return token_covariance(new_model(config).eval(), input_ids)
