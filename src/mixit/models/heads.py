"""Head scores: circuits found by number rather than by eye, read through the model's taps.

Both scores are the fraction of a head's attention that lands where a circuit would put it,
averaged over the query positions that have such a place (TransformerLens' head detector, in
its "mul" form, restricted to rows with a target):

- previous-token score: attention from position t to t - 1;
- induction score: attention from position t to the position just after an earlier occurrence
  of token ``ids[t]`` (on retrieval, from the query to the value that followed its key).

Beside them, a head's uniformity: the entropy of each row over the log of the number of
positions it can see, averaged over rows that see two or more. 1 is plain averaging of what a
row sees, 0 a single position: a frozen query-key pair that starts at 1 (Frozen-QK under the
authors' N(0, 0.02^2) initialisation) can never leave it.

They sit beside the models rather than with the analyses so that a training run can track them
at every evaluation (``train.track_heads``); ``mixit.analysis`` shows them.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from mixit.models.decoder import Decoder
from mixit.models.taps import run_with_taps

# A head whose previous-token or induction score reaches this is one such head (claim C10's
# rule reads the same).
HEAD_THRESHOLD = 0.5


def attention_patterns(model: Decoder, input_ids: torch.Tensor) -> torch.Tensor:
    """Every layer's attention (L, B, H, T, T); rows sum to 1 (MixiT: its fixed matrices)."""
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(len(model.blocks))]
    _, cache = run_with_taps(model, input_ids, names)
    return torch.stack([cache[name] for name in names]).float()  # (L, B, H, T, T)


def _score(patterns: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over rows with a target of the attention mass on the targets, per (L, H)."""
    targets = targets.to(patterns.dtype)  # (B, T, T), 1 where a circuit would attend
    has_target = targets.sum(-1) > 0  # (B, T)
    mass = (patterns * targets[None, :, None]).sum(-1)  # (L, B, H, T)
    rows = has_target[None, :, None].expand_as(mass)  # (L, B, H, T)
    return (mass * rows).sum((1, 3)) / rows.sum((1, 3)).clamp(min=1)  # (L, H)


def previous_token_score(
    patterns: torch.Tensor, mask: torch.Tensor | None = None, rows: torch.Tensor | None = None
) -> torch.Tensor:
    """(L, H) mean attention from t to t - 1, over positions t >= 1 where ``mask`` (B, T) holds
    at both t and t - 1; with ``rows`` (B, T), only from the positions t it marks (a task's
    positions that need their previous token, e.g. retrieval's values)."""
    _, B, _, T, _ = patterns.shape
    targets = torch.zeros(B, T, T, dtype=torch.bool, device=patterns.device)
    targets[:, 1:, :-1] = torch.eye(T - 1, dtype=torch.bool, device=patterns.device)
    if mask is not None:
        targets &= mask[:, :, None] & mask[:, None, :]
    if rows is not None:
        targets &= rows[:, :, None]
    return _score(patterns, targets)


def induction_targets(input_ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T, T) True at (t, j + 1) for every j < t with ids[j] == ids[t] (and j + 1 < t)."""
    T = input_ids.shape[1]
    same = input_ids[:, :, None] == input_ids[:, None, :]  # (B, T, T): ids[t] == ids[j]
    earlier = torch.ones(T, T, dtype=torch.bool, device=input_ids.device).tril(-2)  # j + 1 < t
    if mask is not None:
        same &= mask[:, :, None] & mask[:, None, :]
    previous = same & earlier  # (B, T, T) at (t, j)
    targets = torch.zeros_like(previous)
    targets[:, :, 1:] = previous[:, :, :-1]  # shift j -> j + 1
    return targets


def induction_score(
    patterns: torch.Tensor, input_ids: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """(L, H) mean attention from a repeated token to the token after its earlier occurrence."""
    return _score(patterns, induction_targets(input_ids, mask))


def uniformity(
    patterns: torch.Tensor, mask: torch.Tensor | None = None, causal: bool = True
) -> torch.Tensor:
    """(L, H) mean over rows of the entropy of attention over log(positions the row sees): the
    real positions (``mask`` (B, T)) at or before it (every real position when not
    ``causal``), over rows that see at least two; NaN for a head with negative weights."""
    _, B, _, T, _ = patterns.shape
    sees = torch.ones(B, T, T, dtype=torch.bool, device=patterns.device)  # (B, T, T)
    if causal:
        sees &= torch.ones(T, T, dtype=torch.bool, device=patterns.device).tril()
    if mask is not None:
        sees &= mask[:, :, None] & mask[:, None, :]
    seen = sees.sum(-1)  # (B, T)
    weights = patterns * sees[None, :, None]  # (L, B, H, T, T)
    entropy = -(weights * weights.clamp_min(1e-30).log()).sum(-1)  # (L, B, H, T)
    rows = (seen >= 2)[None, :, None].expand_as(entropy)  # (L, B, H, T)
    ratio = entropy / seen.clamp(min=2).log()[None, :, None]
    score = (ratio * rows).sum((1, 3)) / rows.sum((1, 3)).clamp(min=1)  # (L, H)
    # Entropy is defined for probabilities: a head whose rows hold negative weights (MixiT's
    # centred mixing) has no uniformity, NaN, which the reports print as n/a.
    signed = (weights < 0).any(-1).any(-1).any(1)  # (L, H)
    return score.masked_fill(signed, float("nan"))


def logit_spread(patterns: torch.Tensor) -> float:
    """The spread of the logits softmax turned into ``patterns`` (L, B, H, T, T): per row, the
    standard deviation of log p over the positions it sees (the logits up to the row's own
    shift), averaged over rows that see two or more. Uniform attention reads 0; N(0, sigma^2)
    weights at width n read about n sigma^2 (docs/constructions.md)."""
    seen = patterns > 0  # (L, B, H, T, T)
    count = seen.sum(-1)  # (L, B, H, T)
    logp = torch.where(seen, patterns.clamp_min(1e-30).log(), 0.0)
    mean = logp.sum(-1) / count.clamp(min=1)  # (L, B, H, T)
    squares = torch.where(seen, (logp - mean[..., None]) ** 2, 0.0).sum(-1)
    spread = (squares / (count - 1).clamp(min=1)).sqrt()  # (L, B, H, T)
    return spread[count >= 2].mean().item()


def head_scores(
    model: Decoder, input_ids: torch.Tensor, mask: torch.Tensor | None = None
) -> dict[str, list[list[float | None]]]:
    """``{"previous_token": [[...H] * L], "induction": ..., "uniformity": ...}`` on
    ``input_ids``."""
    patterns = attention_patterns(model, input_ids)
    return scores_of_patterns(patterns, input_ids, mask, model.traits.causal)


def scores_of_patterns(
    patterns: torch.Tensor,
    input_ids: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = True,
) -> dict[str, list[list[float | None]]]:
    """``head_scores`` from attention already read (L, B, H, T, T) on ``input_ids``."""
    return {
        "previous_token": previous_token_score(patterns, mask).tolist(),
        "induction": induction_score(patterns, input_ids, mask).tolist(),
        # None where a head has no uniformity (signed weights), so the JSON stays JSON.
        "uniformity": [
            [None if math.isnan(u) else u for u in heads]
            for heads in uniformity(patterns, mask, causal).tolist()
        ],
    }


# The rows of the evaluated split a tracked run scores its heads on (``train.track_heads``).
TRACKED_ROWS = 64
TRACKED = ("previous_token", "induction")
PAD = 0  # every task pads with token 0


def decoder_of(model: nn.Module) -> Decoder:
    """The decoder inside a run's model (itself, or the body a readout wraps)."""
    return next(module for module in model.modules() if isinstance(module, Decoder))


def tracked_scores(model: nn.Module, inputs: torch.Tensor) -> dict[str, float]:
    """Each head's previous-token and induction score on the first ``TRACKED_ROWS`` rows of
    ``inputs``, flat for a metrics record: ``{"heads.induction.L1.H0": 0.91, ...}``."""
    rows = inputs[:TRACKED_ROWS]  # (S, T)
    scores = head_scores(decoder_of(model), rows, mask=rows != PAD)
    return {
        f"heads.{kind}.L{layer}.H{head}": value
        for kind in TRACKED
        for layer, heads in enumerate(scores[kind])
        for head, value in enumerate(heads)
    }
