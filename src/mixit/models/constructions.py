"""Named constructions: which reading of the model a run builds, as values of typed options.

The paper's numbers were produced by the authors' code (``princeton-pli/MixiT``), which differs
from the paper's equations in ways that change results. Each difference is its own option of
``ModelConfig`` (or ``TrainConfig``, or a task's config); a construction only names a set of
values for them. docs/constructions.md has the table: each option, the equations' reading, the
authors' code with file and line, the default and why.

Resolution (``mixit.training.resolve.resolve_config``): defaults < the variant's defaults < the
preset < the construction < the user's overrides, so a construction replaces a preset's choice and
an option the user sets still wins over the construction.
"""

from __future__ import annotations

import math
from typing import Any

from mixit.common.errors import UsageError
from mixit.config.overrides import Settings
from mixit.models.variants import MATRIX_MIXERS, Variant

# What every model of the authors' code has: biases on every projection (trainer.py:253-254
# sets attention_bias and mlp_bias) and N(0, 0.02^2) weights and embeddings, biases zero
# (modeling_llama.py _init_weights; LlamaConfig's initializer_range 0.02).
_AUTHORS_ALL = {"model.bias": True, "model.init": "gpt2"}

# What their MixiT ("shaped_attention=mixing") adds; every entry is keyed in their code on
# the mixing model alone (modeling_llama.py line numbers at commit 22ce029).
_AUTHORS_MIXING = {
    # Per-head std U[1/sqrt(m n_h), 1/sqrt(m)] (436-443).
    "model.mixing_scale": "per-head-spread",
    # drift = row sum / (row index + 1) (458), the same as eq. 2.3's under the causal mask.
    "model.mixing_centering": "row-sum-over-position",
    # Head 0 is 0.5 I with column 0 set to 0.5, row 0 included (471-473).
    "model.attention_sink": True,
    "model.sink_first_row_weight": 0.5,
    # ScaledLinear (67-81): output times sqrt(base / fan_in); the scripts' base_hidden_size is
    # 512 (utils.py ScriptArguments) and W_D's base_intermediate_size keeps its default 1.
    "model.width_scaling": True,
    "model.width_base": 512.0,
    "model.width_base_down": 1.0,
    # LeakyReLU(1 + c / sqrt(n)) times its gain (268-286) with the scripts' c = +1.
    "model.mlp_activation": "shaped-leaky-relu",
    "model.leaky_relu_c": 1.0,
    "model.activation_gain": True,
    # skip sqrt(1/2), branch sqrt(1/2) (575-586) when depth_alpha is 0.
    "model.residual_lambda": math.sqrt(0.5),
}


# Options only fixed mixing reads: a task's authors' settings give them to MixiT alone.
_MIXING_ONLY = frozenset(
    {
        "model.mixing_causal",
        "model.mixing_centering",
        "model.mixing_scale",
        "model.mixing_identity",
        "model.attention_sink",
        "model.sink_first_row_weight",
    }
)


def construction_overrides(name: str, variant: Variant, task_settings: Settings) -> dict[str, Any]:
    """The dotted option values that construction ``name`` sets for ``variant``.

    ``task_settings`` are the task's own authors' settings (``TaskSpec.authors_settings``):
    its data layout and set-up where the authors' scripts differ from the paper's text.
    """
    if name == "equations":
        return {}  # the dataclass defaults are the equations' reading
    if name != "authors":
        raise UsageError(f"model.construction='{name}' is not one of: equations, authors")
    # MixiT's family takes MixiT's construction, so that its rows differ in the matrix alone.
    mixing = variant.attention in MATRIX_MIXERS
    values = _AUTHORS_ALL | (_AUTHORS_MIXING if mixing else {})
    # A task's setting of an option the authors' code gives MixiT alone stays MixiT's.
    mixing_only = _MIXING_ONLY | _AUTHORS_MIXING.keys()
    return values | {k: v for k, v in task_settings.items() if mixing or k not in mixing_only}
