"""What the decoder reads from a model config: ``ModelShape``, the fields of
``mixit.config.schema.ModelConfig`` that build the model (the rest configure training around it).

The decoder's own modules (``shape``, ``variants``, ``attention``, ``decoder``,
``modeling_mixit``) import only torch, transformers and one another, relatively: an exported
model's folder carries them as its modelling code (Hugging Face copies a modelling file's
relative imports beside it), so that it loads where mixit is not installed.
"""

from __future__ import annotations

from typing import Protocol


class ModelShape(Protocol):
    """The decoder's view of a config (``ModelConfig`` has these fields, and so does an
    exported model's ``MixitConfig``); see ModelConfig for what each one means."""

    n_layer: int
    n_embd: int
    n_head: int
    mlp_ratio: int
    vocab_size: int
    block_size: int
    init: str
    output_init_std: float
    rope_base: float
    mlp_activation: str
    leaky_relu_c: float
    residual_lambda: float | None
    mixing_scale: str
    attention_sink: bool
    sink_first_row_weight: float
    mixing_causal: bool
    pad_masking: bool
    mixing_centering: str
    mixing_identity: bool
    bias: bool
    width_scaling: bool
    width_base: float
    width_base_down: float
    activation_gain: bool
    residual_depth_alpha: float | None
    residual_depth_base: float


# Every field the decoder reads, in ModelConfig's order: what an exported config must hold.
DECODER_FIELDS: tuple[str, ...] = tuple(ModelShape.__annotations__)
