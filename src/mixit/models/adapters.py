"""The spectrum of any causal language model: ``mixit.spectrum(source)`` returns its standard,
Frozen-QK, Frozen-MLP, MixiT and random versions, all from the same initialisation.

What each version freezes is ``mixit.models.variants``' definition, the one the built-in decoder
follows: a variant names parameter groups (``qk``, ``vo``, ``mlp``, ``norm``), and
``parameter_groups`` finds each group in the model through its ``Parts``. The random
transformer thus freezes every block and the final norm, training only the embeddings and
the output head, as Zhong & Andreas' random transformer and the authors' code do.

A model's parts are found through a ``Parts`` description, never guessed from names: one per
Hugging Face architecture (``ADAPTERS``: GPT-2, Llama, Qwen2, Mistral), or the user's own.
GPT-2 computes queries, keys and values with one fused matrix; its adapter first splits it
into three (the same outputs), so that the queries and keys can be frozen as whole tensors.

MixiT replaces each attention module by fixed random mixing of its values (eq. 2.3, the
matrices of ``mixit.models.attention``): y = W_O (A V), A fixed at initialisation, with learned
positions added to the token embedding where the model has none (a RoPE model loses its only
positional signal with its queries and keys). Unlike mixit's own MixiT, the model's residual
stream is left as it is (no shaped residual).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from mixit.common.errors import UsageError, did_you_mean
from mixit.models.attention import mixing_matrices, mixing_std
from mixit.models.fused import split_gpt2
from mixit.models.variants import (
    HYBRID_SYNTAX,
    VARIANTS,
    AttentionKind,
    Variant,
    variant_named,
)

# The token mixers a model of any architecture can be given: its own softmax attention, or
# fixed mixing in its place. A variant with another mixer exists on mixit's decoder only.
BUILDABLE = (AttentionKind.SOFTMAX, AttentionKind.MIXING)
MODELS = tuple(name for name, variant in VARIANTS.items() if variant.attention in BUILDABLE)


def get_variant(name: str) -> Variant:
    """The variant ``name`` names, a hybrid's included (``variants.variant_named``); an
    unknown name is the user's mistake (exit status 2)."""
    try:
        return variant_named(name)
    except ValueError as error:
        raise UsageError(str(error)) from None


def buildable(name: str) -> Variant:
    """The variant ``name`` names, when a model of any architecture can be made it: one of
    ``MODELS``, or a hybrid of them; else a UsageError saying which can."""
    try:
        chosen = variant_named(name)
    except ValueError:
        chosen = None
    if chosen is None or any(VARIANTS[row].attention not in BUILDABLE for row in chosen.rows):
        raise UsageError(
            f"unknown model '{name}'{did_you_mean(name, MODELS)} for a model of any "
            "architecture; choose from: "
            f"{', '.join(MODELS)}, or a hybrid of them ({HYBRID_SYNTAX})"
        )
    return chosen


@dataclass(frozen=True)
class Parts:
    """Where a causal LM keeps what the spectrum freezes or replaces. ``blocks`` is the dotted
    path from the model to its list of blocks; the other module paths are relative to one
    block, except ``embedding``, ``positions`` and ``final_norm`` (relative to the model;
    ``positions`` None when the model has no learned position table, ``final_norm`` None when
    it has no norm before its output head). A block's parameters outside its queries, keys,
    values, output and MLP are its norms."""

    blocks: str
    attention: str
    queries_keys: tuple[str, ...]
    value: str
    output: str
    mlp: str
    embedding: str
    positions: str | None
    final_norm: str | None = None
    split: Callable[[nn.Module], None] | None = None  # run on a model first (once is enough)
    mlp_output: str | None = None  # the MLP's output matrix, for the small-output init


LLAMA_PARTS = Parts(
    blocks="model.layers",
    attention="self_attn",
    queries_keys=("self_attn.q_proj", "self_attn.k_proj"),
    value="self_attn.v_proj",
    output="self_attn.o_proj",
    mlp="mlp",
    embedding="model.embed_tokens",
    positions=None,
    final_norm="model.norm",
    mlp_output="mlp.down_proj",
)
ADAPTERS: dict[str, Parts] = {
    "gpt2": Parts(
        blocks="transformer.h",
        attention="attn",
        queries_keys=("attn.c_attn.query", "attn.c_attn.key"),
        value="attn.c_attn.value",
        output="attn.c_proj",
        mlp="mlp",
        embedding="transformer.wte",
        positions="transformer.wpe",
        final_norm="transformer.ln_f",
        split=split_gpt2,
        mlp_output="mlp.c_proj",
    ),
    "llama": LLAMA_PARTS,
    "qwen2": LLAMA_PARTS,
    "mistral": LLAMA_PARTS,
}


class FixedMixingAttention(nn.Module):
    """An attention module's stand-in: its value and output projections around fixed mixing
    matrices A (H, T_max, T_max). Returns ``(output, None)`` as Hugging Face attention does."""

    def __init__(
        self, value: nn.Module, output: nn.Module, heads: int, kv_heads: int, mixing: torch.Tensor
    ) -> None:
        super().__init__()
        self.value, self.output = value, output
        self.heads, self.kv_heads = heads, kv_heads
        self.register_buffer("mixing", mixing)

    def forward(self, hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> tuple:
        B, T, _ = hidden_states.shape
        check_length(T, self.mixing.shape[-1])
        v = self.value(hidden_states).view(B, T, self.kv_heads, -1)  # (B, T, H_kv, hs)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=2)  # (B, T, H, hs)
        y = torch.einsum("hts,bshd->bthd", self.mixing[:, :T, :T], v)  # (B, T, H, hs)
        return self.output(y.reshape(B, T, -1)), None  # (B, T, n)


class WithPositions(nn.Module):
    """A token embedding plus a learned position table (MixiT on a model without one)."""

    def __init__(self, embedding: nn.Embedding, block_size: int) -> None:
        super().__init__()
        self.embedding = embedding
        self.positions = nn.Embedding(block_size, embedding.embedding_dim)
        nn.init.normal_(self.positions.weight, std=0.02)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.shape[-1]
        check_length(T, self.positions.num_embeddings)
        return self.embedding(input_ids) + self.positions.weight[:T]  # (B, T, n)


def check_length(tokens: int, positions: int) -> None:
    """Fixed mixing matrices (T_max, T_max) and a learned position table have no row past
    their ``positions``: more ``tokens`` is one clear error, not a shape mismatch deep in torch."""
    if tokens > positions:
        raise ValueError(
            f"{tokens} tokens, and this model's fixed mixing matrices and positions hold "
            f"{positions} (its config's max_position_embeddings or n_positions when it was "
            "converted): MixiT cannot read past them"
        )


def _builder(source: Any, settings: Mapping[str, Any]) -> Callable[[], nn.Module]:
    """A function that builds a fresh model from ``source``: a builder itself, a Hugging Face
    config (built with no weights to load), or an architecture name of ``ADAPTERS`` with the
    config ``settings`` (e.g. ``{"n_layer": 2}``)."""
    if callable(source) and not hasattr(source, "model_type"):
        return source
    from transformers import AutoConfig, AutoModelForCausalLM, PretrainedConfig

    if isinstance(source, str):
        if source not in ADAPTERS:
            raise UsageError(f"unknown architecture '{source}'; choose from: {', '.join(ADAPTERS)}")
        source = AutoConfig.for_model(source, **settings)
    if not isinstance(source, PretrainedConfig):
        raise UsageError("spectrum() takes a model builder, a transformers config or a name")
    return lambda: AutoModelForCausalLM.from_config(source)


def _find(root: nn.Module, path: str) -> nn.Module:
    return root.get_submodule(path)


def _set(root: nn.Module, path: str, module: nn.Module) -> None:
    parent, _, name = path.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, name, module)


def parts_of(model: nn.Module, parts: Parts | None) -> Parts:
    if parts is not None:
        return parts
    kind = getattr(getattr(model, "config", None), "model_type", None)
    if kind is None:
        raise UsageError(
            f"this {type(model).__name__} has no Hugging Face config.model_type to find its "
            f"adapter by (adapters: {', '.join(ADAPTERS)}); describe its parts with mixit.Parts"
        )
    if kind not in ADAPTERS:
        raise UsageError(
            f"no adapter for model type '{kind}' (adapters: {', '.join(ADAPTERS)}); "
            "describe its parts with mixit.Parts"
        )
    return ADAPTERS[kind]


def _parameters(modules: Sequence[nn.Module]) -> list[nn.Parameter]:
    return [p for module in modules for p in module.parameters()]


def block_groups(block: nn.Module, parts: Parts) -> dict[str, list[nn.Parameter]]:
    """One block's parameters by group: ``qk`` its queries and keys, ``vo`` its values and
    attention output, ``mlp`` its MLP, ``norm`` every other parameter of it."""
    held = {
        "qk": _parameters([_find(block, path) for path in parts.queries_keys]),
        "vo": _parameters([_find(block, parts.value), _find(block, parts.output)]),
        "mlp": _parameters([_find(block, parts.mlp)]),
    }
    claimed = {id(p) for params in held.values() for p in params}
    held["norm"] = [p for p in block.parameters() if id(p) not in claimed]
    return held


def parameter_groups(model: nn.Module, parts: Parts) -> dict[str, list[nn.Parameter]]:
    """The parameters of each group a Variant can freeze (``mixit.models.variants``), found through
    ``parts``: ``qk`` the queries and keys, ``vo`` the values and attention output, ``mlp``
    the MLPs, ``norm`` every other block parameter and the final norm."""
    groups: dict[str, list[nn.Parameter]] = {"qk": [], "vo": [], "mlp": [], "norm": []}
    for block in _find(model, parts.blocks):
        for name, params in block_groups(block, parts).items():
            groups[name].extend(params)
    if parts.final_norm is not None:
        groups["norm"].extend(_find(model, parts.final_norm).parameters())
    return groups


def freeze_variant(model: nn.Module, parts: Parts, variant: Variant) -> None:
    """Freeze what ``variant`` freezes: in each block its layer's variant's groups
    (``Variant.at``), and the final norm where the variant freezes norms."""
    for layer, block in enumerate(_find(model, parts.blocks)):
        held = block_groups(block, parts)
        for group in variant.at(layer).frozen:
            for parameter in held[group]:
                parameter.requires_grad_(False)
    if "norm" in variant.frozen and parts.final_norm is not None:
        for parameter in _find(model, parts.final_norm).parameters():
            parameter.requires_grad_(False)


def _matrices(model: nn.Module) -> list[tuple[torch.Tensor, int]]:
    """Every matrix of ``model`` with its fan-in: ``nn.Linear`` (out, in) and the (in, out)
    ``Conv1D`` of Hugging Face's GPT-2."""
    transposed: tuple[type, ...] = ()
    try:
        from transformers.pytorch_utils import Conv1D

        transposed = (Conv1D,)
    except ImportError:  # without transformers, no model holds a Conv1D
        pass
    found = []
    for module in model.modules():
        if isinstance(module, nn.Linear):
            found.append((module, module.weight.shape[1]))
        elif isinstance(module, transposed):
            found.append((module, module.weight.shape[0]))
    return found


def small_output_init(model: nn.Module, parts: Parts, output_std: float) -> None:
    """mixit's ``small-output`` initialisation on any model (``model.arch_init``), as
    ``mixit.models.decoder.init_weights`` gives it to the decoder: token and position embeddings
    N(0, 1/n), every matrix N(0, 1/fan_in), biases 0, then each block's residual-branch
    outputs (attention's output and ``parts.mlp_output``) N(0, output_std^2), so every block
    starts near the identity. Norms keep the model's own initialisation."""
    if parts.mlp_output is None:
        raise UsageError(
            "model.arch_init=small-output needs the MLP's output matrix: give Parts.mlp_output"
        )
    with torch.no_grad():
        for embedding in (m for m in model.modules() if isinstance(m, nn.Embedding)):
            embedding.weight.normal_(std=embedding.embedding_dim**-0.5)
        for module, fan_in in _matrices(model):
            module.weight.normal_(std=fan_in**-0.5)
            if getattr(module, "bias", None) is not None:
                module.bias.zero_()
        for block in _find(model, parts.blocks):
            for path in (parts.output, parts.mlp_output):
                _find(block, path).weight.normal_(std=output_std)


def _mixit(model: nn.Module, parts: Parts, layers: Sequence[int], scale: str, seed: int) -> None:
    """Fixed mixing (``scale``, drawn from ``seed``, layer after layer) in place of the
    attention of the blocks ``layers`` names, and a learned position table where the model
    has none."""
    config = getattr(model, "config", None)
    if not all(
        hasattr(config, key)
        for key in ("num_attention_heads", "hidden_size", "max_position_embeddings")
    ):
        raise UsageError(
            "MixiT sizes its mixing from the model's config: give the model a .config with "
            "num_attention_heads, hidden_size and max_position_embeddings"
        )
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    n, block_size = config.hidden_size, config.max_position_embeddings
    generator = torch.Generator().manual_seed(seed)
    blocks = _find(model, parts.blocks)
    for layer in layers:
        block = blocks[layer]
        sigma = mixing_std(scale, n, heads, block_size)  # (H, 1, 1)
        weights = sigma * torch.randn(heads, block_size, block_size, generator=generator)
        attention = FixedMixingAttention(
            _find(block, parts.value),
            _find(block, parts.output),
            heads,
            kv_heads,
            mixing_matrices(weights),  # (H, T, T): causal, rows centred, plus the identity
        )
        _set(block, parts.attention, attention)
    if parts.positions is None:
        _set(model, parts.embedding, WithPositions(_find(model, parts.embedding), block_size))


def make_variant(
    model: nn.Module, parts: Parts, variant: str, mixing_scale: str, seed: int
) -> None:
    """Turn ``model`` (its parts already split) into ``variant`` in place: freeze the groups
    the variant names; for MixiT, put fixed mixing (``mixing_scale``, drawn from ``seed``)
    in place of every attention module. A hybrid (``variants.HYBRID_SYNTAX``) does so layer
    by layer."""
    chosen = buildable(variant)
    blocks = len(_find(model, parts.blocks))
    beyond = [layer for layer, _ in chosen.layers if layer >= blocks]
    if beyond:
        raise UsageError(
            f"model '{variant}' names layer {beyond[0]}; this model has 0-{blocks - 1}"
        )
    kinds = [chosen.at(layer) for layer in range(blocks)]
    mixing = [layer for layer, v in enumerate(kinds) if v.attention is AttentionKind.MIXING]
    freeze_variant(model, parts, chosen)
    config = getattr(model, "config", None)
    if config is not None:  # saved with the model: ``mixit.freeze`` applies them after loading
        config.mixit_frozen = sorted(chosen.frozen)
        if chosen.layers or mixing:  # a structure of its own: ``convert.load_converted``
            config.mixit_variant = variant
    if mixing:
        _mixit(model, parts, mixing, mixing_scale, seed)


def spectrum(
    source: Any,
    parts: Parts | None = None,
    models: Sequence[str] = MODELS,
    *,
    seed: int = 0,
    mixing_scale: str = "sequence",
    settings: Mapping[str, Any] | None = None,
    init: str = "own",
    output_std: float = 0.02,
) -> dict[str, nn.Module]:
    """The ``models`` of the spectrum of ``source`` (a function that builds a causal LM, a
    Hugging Face config, or an architecture name built with the config ``settings``), each
    built afresh from the same seed, so that every variant starts from the same weights;
    ``parts`` where no adapter knows the model. ``init="small-output"`` re-initialises each
    model with ``small_output_init`` (``output_std``) before its variant is made."""
    build = _builder(source, settings or {})
    for name in models:
        buildable(name)
    built = {}
    for variant in models:
        torch.manual_seed(seed)
        model = build()
        found = parts_of(model, parts)
        if found.split is not None:
            found.split(model)
        if init == "small-output":
            small_output_init(model, found, output_std)
        make_variant(model, found, variant, mixing_scale, seed)
        built[variant] = model
    return built
