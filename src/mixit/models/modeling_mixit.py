"""mixit's decoder as a Hugging Face model: ``MixitConfig`` and ``MixitForCausalLM``.

Every model the decoder builds (the five variants, both constructions, the shaped residual,
the shaped leaky ReLU) is this one class; the config holds the decoder's fields
(``mixit.models.shape``), the kind of token mixer and the frozen parameter groups.
``mixit export-hf`` saves a run through it, and ``save_pretrained`` writes this file and its
relative imports beside the weights, so that

    AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)

loads the run where mixit is not installed. MixiT's fixed mixing matrices are buffers, saved
with the weights. A loaded model freezes its config's groups again, so a Frozen-QK model keeps
W_Q and W_K fixed in ``transformers.Trainer`` or any loop that trains what requires a gradient.

``generate()`` decodes with the decoder's own cache: keys and values per layer for softmax
attention, values only for MixiT (``mixit generate``'s cache).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .attention import LayerCache, SoftmaxAttention
from .decoder import Decoder
from .shape import DECODER_FIELDS
from .variants import HYBRID_JOIN, AttentionKind, Variant, variant_named

# The name under which a model's output hands its cache back to ``generate`` (``cache`` in
# recent transformers, ``past_key_values`` before).
_CACHE_FIELD = next(
    name
    for name in ("cache", "past_key_values")
    if name in CausalLMOutputWithPast.__dataclass_fields__
)
IGNORE_INDEX = -100  # the label Hugging Face's losses skip


class MixitConfig(PretrainedConfig):
    """The decoder's fields (``DECODER_FIELDS``), plus ``variant`` (its name), ``attention``
    (``softmax`` or ``mixing``) and ``frozen`` (the parameter groups that do not train)."""

    model_type = "mixit"
    attribute_map: ClassVar[dict[str, str]] = {
        "hidden_size": "n_embd",
        "num_attention_heads": "n_head",
        "num_hidden_layers": "n_layer",
        "max_position_embeddings": "block_size",
    }

    def __init__(
        self,
        variant: str = "standard",
        attention: str = "softmax",
        frozen: list[str] | tuple[str, ...] = (),
        **kwargs: Any,
    ) -> None:
        for name in DECODER_FIELDS:
            setattr(self, name, kwargs.pop(name, None))
        self.variant, self.attention, self.frozen = variant, attention, sorted(frozen)
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(**kwargs)

    def decoder_variant(self) -> Variant:
        if HYBRID_JOIN in self.variant:  # a hybrid's layers are named by its name
            return variant_named(self.variant)
        return Variant(self.variant, AttentionKind(self.attention), frozenset(self.frozen), "")


class MixitForCausalLM(PreTrainedModel, GenerationMixin):
    """``model(input_ids, labels=...)`` gives logits (B, T, V) and, with labels, the mean
    next-token loss over the labels that are not -100 (labels are the inputs, shifted here)."""

    config_class = MixitConfig
    base_model_prefix = "decoder"
    main_input_name = "input_ids"

    def __init__(self, config: MixitConfig) -> None:
        super().__init__(config)
        self.decoder = Decoder(config, config.decoder_variant())
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        # generate() must not hand in a DynamicCache: the decoder keeps its own (values only
        # for MixiT), created on the first call and handed back in the output.
        return False

    def _init_weights(self, module: torch.nn.Module) -> None:
        # The decoder drew every weight when it was built (mixit.models.decoder.init_weights),
        # and a loaded model takes them from its file; only the RoPE tables, never saved,
        # are left to fill.
        if isinstance(module, SoftmaxAttention):
            module.fill_rope_tables()

    def freeze(self) -> None:
        """Leave the config's frozen groups without gradients (again, after loading)."""
        groups = self.decoder.param_groups()
        for name in self.config.frozen:
            for parameter in groups[name]:
                parameter.requires_grad_(False)

    def get_input_embeddings(self) -> torch.nn.Embedding:
        return self.decoder.tok_emb

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        """``attention_mask`` may only mark padding at the end of a row (which a causal model
        never reads before it): left padding would shift the positions, and is refused."""
        if attention_mask is not None and bool(
            (attention_mask[:, 1:] > attention_mask[:, :-1]).any()
        ):
            raise ValueError("MixitForCausalLM takes right padding only; pad after the tokens")
        caches: list[LayerCache] | None = kwargs.get(_CACHE_FIELD)
        if caches is None and use_cache:
            caches = self.decoder.new_caches()
        logits = self.decoder(input_ids, caches=caches)  # (B, T, V)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(
                logits[:, :-1].flatten(0, 1),  # (B (T - 1), V)
                labels[:, 1:].flatten(),  # (B (T - 1),)
                ignore_index=IGNORE_INDEX,
            )
        return CausalLMOutputWithPast(loss=loss, logits=logits, **{_CACHE_FIELD: caches})

    def post_init(self) -> None:
        super().post_init()
        self.freeze()

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> Any:
        # Loading puts new parameters in place of those post_init froze: freeze them again.
        loaded = super().from_pretrained(*args, **kwargs)
        (loaded[0] if isinstance(loaded, tuple) else loaded).freeze()
        return loaded


MixitConfig.register_for_auto_class()
MixitForCausalLM.register_for_auto_class("AutoModelForCausalLM")
