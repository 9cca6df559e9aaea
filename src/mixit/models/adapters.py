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

from mixit.common.errors import UsageError
from mixit.models.attention import mixing_matrices, mixing_std
from mixit.models.variants import VARIANTS, AttentionKind, Variant

# The token mixers a model of any architecture can be given: its own softmax attention, or
# fixed mixing in its place. A variant with another mixer exists on mixit's decoder only.
BUILDABLE = (AttentionKind.SOFTMAX, AttentionKind.MIXING)
MODELS = tuple(name for name, variant in VARIANTS.items() if variant.attention in BUILDABLE)


def get_variant(name: str) -> Variant:
    """The variant ``name`` names; an unknown name is the user's mistake (exit status 2)."""
    if name not in VARIANTS:
        raise UsageError(f"unknown model '{name}'; choose one of: {', '.join(VARIANTS)}")
    return VARIANTS[name]


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


class SplitQKV(nn.Module):
    """GPT-2's fused ``c_attn`` (x @ W + b, W (n, 3n)) as three (n, n) projections whose
    concatenated outputs are the fused one's, so that queries and keys can be frozen apart
    from values. Its state dict is the fused one's (``weight`` (n, 3n), ``bias`` (3n)), so a
    converted model saved with ``save_pretrained`` loads back into a plain GPT-2, and a fused
    state dict loads into it."""

    PARTS = ("query", "key", "value")

    def __init__(self, fused: nn.Module) -> None:
        super().__init__()
        n = fused.weight.shape[0]
        self.query, self.key, self.value = (nn.Linear(n, n) for _ in range(3))
        with torch.no_grad():
            for i, part in enumerate((self.query, self.key, self.value)):
                part.weight.copy_(fused.weight[:, i * n : (i + 1) * n].T)
                part.bias.copy_(fused.bias[i * n : (i + 1) * n])
        self.register_state_dict_post_hook(_fuse_state)
        self.register_load_state_dict_pre_hook(_split_state)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.query(x), self.key(x), self.value(x)], dim=-1)  # (B, T, 3n)


def _fuse_state(module: nn.Module, state: dict, prefix: str, metadata: Any) -> None:
    """``SplitQKV``'s state as GPT-2's fused ``Conv1D`` holds it: W (n, 3n), b (3n)."""
    weights = [state.pop(f"{prefix}{part}.weight") for part in SplitQKV.PARTS]  # (n, n) each
    biases = [state.pop(f"{prefix}{part}.bias") for part in SplitQKV.PARTS]  # (n,) each
    state[f"{prefix}weight"] = torch.cat([w.T for w in weights], dim=1)  # (n, 3n)
    state[f"{prefix}bias"] = torch.cat(biases)  # (3n,)


def _split_state(module: nn.Module, state: dict, prefix: str, *rest: Any) -> None:
    """A fused ``Conv1D`` state (W (n, 3n), b (3n)) as ``SplitQKV``'s three projections."""
    if f"{prefix}weight" not in state:
        return
    weight, bias = state.pop(f"{prefix}weight"), state.pop(f"{prefix}bias")
    n = weight.shape[0]
    for i, part in enumerate(SplitQKV.PARTS):
        state[f"{prefix}{part}.weight"] = weight[:, i * n : (i + 1) * n].T  # (n, n)
        state[f"{prefix}{part}.bias"] = bias[i * n : (i + 1) * n]


def _split_gpt2(model: nn.Module) -> None:
    for block in model.transformer.h:
        if not isinstance(block.attn.c_attn, SplitQKV):  # a model converted before
            block.attn.c_attn = SplitQKV(block.attn.c_attn)


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
        split=_split_gpt2,
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
        return self.embedding(input_ids) + self.positions.weight[:T]  # (B, T, n)


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


def parameter_groups(model: nn.Module, parts: Parts) -> dict[str, list[nn.Parameter]]:
    """The parameters of each group a Variant can freeze (``mixit.models.variants``), found through
    ``parts``: ``qk`` the queries and keys, ``vo`` the values and attention output, ``mlp``
    the MLPs, ``norm`` every other block parameter and the final norm."""
    groups: dict[str, list[nn.Parameter]] = {"qk": [], "vo": [], "mlp": [], "norm": []}
    for block in _find(model, parts.blocks):
        held = {
            "qk": _parameters([_find(block, path) for path in parts.queries_keys]),
            "vo": _parameters([_find(block, parts.value), _find(block, parts.output)]),
            "mlp": _parameters([_find(block, parts.mlp)]),
        }
        claimed = {id(p) for params in held.values() for p in params}
        held["norm"] = [p for p in block.parameters() if id(p) not in claimed]
        for name, params in held.items():
            groups[name].extend(params)
    if parts.final_norm is not None:
        groups["norm"].extend(_find(model, parts.final_norm).parameters())
    return groups


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


def _mixit(model: nn.Module, parts: Parts, scale: str, seed: int) -> None:
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
    for block in _find(model, parts.blocks):
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
    in place of every attention module."""
    groups = parameter_groups(model, parts)
    for group in VARIANTS[variant].frozen:
        for parameter in groups[group]:
            parameter.requires_grad_(False)
    config = getattr(model, "config", None)
    if config is not None:  # saved with the model: ``mixit.freeze`` applies them after loading
        config.mixit_frozen = sorted(VARIANTS[variant].frozen)
    if VARIANTS[variant].attention is AttentionKind.MIXING:
        _mixit(model, parts, mixing_scale, seed)


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
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise UsageError(f"unknown model '{unknown[0]}'; choose from: {', '.join(MODELS)}")
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
