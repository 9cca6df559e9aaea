"""Layer 7: analyses of models and run directories, read through the model's named taps. It
imports ``inference`` (``speed`` times decoding) and the layers below it; ``speed`` and
``presets`` measure this machine (``mixit bench``).

- ``taps``: run a model and collect activations by tap name (``blocks.0.attn.hook_pattern``).
- ``attention``: attention maps, previous-token, induction and uniformity scores per head,
  heat maps.
- ``covariance``: covariance / correlation between token representations (rank collapse).
"""

from mixit.analysis.attention import (
    attention_patterns,
    head_scores,
    induction_score,
    plot_attention_maps,
    previous_token_score,
    uniformity,
)
from mixit.analysis.covariance import token_covariance
from mixit.analysis.taps import run_with_taps, tap_names

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
