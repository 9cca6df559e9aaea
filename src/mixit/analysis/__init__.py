"""Layer 7: analyses of models and run directories, read through the model's named taps. It
imports ``inference`` (``speed`` times decoding) and the layers below it; ``speed`` and
``presets`` measure this machine (``mixit bench``).

- ``attention``: attention maps as heat maps; the taps (``mixit.models.taps``: activations by
  tap name, ``blocks.0.attn.hook_pattern``) and the previous-token, induction and uniformity
  scores per head (``mixit.models.heads``) sit with the models, shown here.
- ``ablation``: each head and MLP mean-ablated in turn, the drop in the task's metric.
- ``covariance``: covariance / correlation between token representations (rank collapse).
"""

from mixit.analysis.attention import plot_attention_maps
from mixit.analysis.covariance import token_covariance
from mixit.models.heads import (
    attention_patterns,
    head_scores,
    induction_score,
    previous_token_score,
    uniformity,
)
from mixit.models.taps import run_with_taps, tap_names

__all__ = [
    "attention_patterns",
    "head_scores",
    "induction_score",
    "plot_attention_maps",
    "previous_token_score",
    "run_with_taps",
    "tap_names",
    "token_covariance",
    "uniformity",
]
