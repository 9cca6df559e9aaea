"""One Llama-style decoder for the whole spectrum (section 2 of the paper).

token embedding (+ learned positions for MixiT) -> L x [pre-RMSNorm attention, pre-RMSNorm
gated MLP, each with a residual connection] -> final RMSNorm -> untied output head.
The Variant decides which token mixer the blocks use and which parameter groups are frozen.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .attention import LayerCache, Tap, projection
from .mixers import MIXERS, variant_traits
from .shape import ModelShape
from .variants import Variant

PAD = 0  # the token every task pads with (mixit.tasks.base.PAD)

PARAM_GROUPS = ("qk", "vo", "mix", "mlp", "norm", "embed", "pos", "unembed")


class Trainable(nn.Module):
    """A model that training and scoring take: its parameters left trainable by its variant."""

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]


class GatedMLP(nn.Module):
    """MLP(h) = W_D (phi(W_G h) * W_U h) with n_m = mlp_ratio * n (eq. 2.2)."""

    def __init__(self, config: ModelShape) -> None:
        super().__init__()
        n, n_m = config.n_embd, config.mlp_ratio * config.n_embd
        self.w_g = projection(config, n, n_m)
        self.w_u = projection(config, n, n_m)
        self.w_d = projection(config, n_m, n, base=config.width_base_down)
        self.activation = config.mlp_activation
        # Shaped leaky ReLU: negative slope 1 + c/sqrt(n) tends to the identity as n grows.
        self.negative_slope = 1.0 + config.leaky_relu_c / math.sqrt(n)
        # Its variance-preserving gain sqrt(2 / (1 + slope^2)), or none.
        slope_gain = nn.init.calculate_gain("leaky_relu", self.negative_slope)
        self.gain = slope_gain if config.activation_gain else 1.0

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {"mlp": [*self.w_g.parameters(), *self.w_u.parameters(), *self.w_d.parameters()]}

    def phi(self, x: torch.Tensor) -> torch.Tensor:
        if self.activation == "silu":
            return F.silu(x)
        shaped = F.leaky_relu(x, self.negative_slope)
        return shaped if self.gain == 1.0 else self.gain * shaped

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_d(self.phi(self.w_g(x)) * self.w_u(x))


def residual_scales(config: ModelShape) -> tuple[float, float] | None:
    """(keep, branch) of the residual update h <- keep * h + branch * f(h), or None for the
    plain h + f(h).

    - ``residual_lambda``: the shaped residual (lam, sqrt(1 - lam^2)) keeps the stream's
      variance fixed across depth (section 2);
    - ``residual_depth_alpha``: (1, (base / L)^alpha), the depth-scaled residual of the
      authors' language-model script.
    """
    lam, alpha = config.residual_lambda, config.residual_depth_alpha
    if lam is not None:
        return lam, math.sqrt(1.0 - lam * lam)
    if alpha is not None:
        return 1.0, (config.residual_depth_base / config.n_layer) ** alpha
    return None


class Block(nn.Module):
    def __init__(self, config: ModelShape, attention: str) -> None:
        super().__init__()
        self.norm_attn = nn.RMSNorm(config.n_embd, eps=1e-6)
        self.attn = MIXERS[attention](config)
        self.norm_mlp = nn.RMSNorm(config.n_embd, eps=1e-6)
        self.mlp = GatedMLP(config)
        self.shaped = residual_scales(config)
        self.hook_resid_pre = Tap()
        self.hook_attn_out = Tap()
        self.hook_mlp_out = Tap()
        self.hook_resid_post = Tap()

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        groups = {**self.attn.param_groups(), **self.mlp.param_groups()}
        groups["norm"] = [self.norm_attn.weight, self.norm_mlp.weight]
        return groups

    def forward(
        self, h: torch.Tensor, cache: LayerCache | None = None, real: torch.Tensor | None = None
    ) -> torch.Tensor:
        h = self.hook_resid_pre(h)
        h = self.residual(h, self.hook_attn_out(self.attn(self.norm_attn(h), cache, real)))
        h = self.residual(h, self.hook_mlp_out(self.mlp(self.norm_mlp(h))))
        return self.hook_resid_post(h)

    def residual(self, h: torch.Tensor, update: torch.Tensor) -> torch.Tensor:
        # The plain sum skips two multiplications by 1.0 per branch (same numbers, fewer kernels).
        if self.shaped is None:
            return h + update
        keep, branch = self.shaped
        return keep * h + branch * update


class Decoder(Trainable):
    """The decoder. ``model(input_ids)`` with a LongTensor (B, T) returns logits (B, T, V)."""

    def __init__(self, config: ModelShape, variant: Variant) -> None:
        super().__init__()
        self.config, self.variant = config, variant
        n = config.n_embd
        self.tok_emb = nn.Embedding(config.vocab_size, n)
        self.traits = variant_traits(variant, config)
        # MixiT has no queries and keys for RoPE, so it learns absolute positions (section 2).
        self.pos_emb = nn.Embedding(config.block_size, n) if self.traits.learned_positions else None
        # A hybrid's layers are built each as its own variant (``Variant.at``).
        self.blocks = nn.ModuleList(
            [Block(config, variant.at(layer).attention) for layer in range(config.n_layer)]
        )
        self.norm_final = nn.RMSNorm(n, eps=1e-6)
        self.head = projection(config, n, config.vocab_size, bias=False)
        self.hook_embed = Tap()
        self.hook_final = Tap()
        init_weights(self, config)
        # Each layer freezes what its own variant does; the groups outside the blocks follow
        # the model's variant (a hybrid's base).
        outer = self.outer_groups()
        for layer, block in enumerate(self.blocks):
            inner = block.param_groups()
            for name in variant.at(layer).frozen:
                for p in inner.get(name, []):
                    p.requires_grad_(False)
        for name in variant.frozen:
            for p in outer.get(name, []):
                p.requires_grad_(False)

    def outer_groups(self) -> dict[str, list[nn.Parameter]]:
        """The groups of the parameters outside the blocks: the final norm's gain, the token
        and position tables, the output head."""
        positions = [] if self.pos_emb is None else [self.pos_emb.weight]
        return {
            "norm": [self.norm_final.weight],
            "embed": [self.tok_emb.weight],
            "pos": positions,
            "unembed": [self.head.weight],
        }

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        """Every parameter in exactly one named group (see mixit.models.variants)."""
        groups: dict[str, list[nn.Parameter]] = {name: [] for name in PARAM_GROUPS}
        for block in self.blocks:
            for name, params in block.param_groups().items():
                groups[name].extend(params)
        for name, params in self.outer_groups().items():
            groups[name].extend(params)
        return groups

    def forward(
        self,
        input_ids: torch.Tensor,
        scored: torch.Tensor | None = None,
        caches: list[LayerCache] | None = None,
    ) -> torch.Tensor:
        """Logits (B, T, V); with a boolean mask ``scored`` (B, T), only at the S scored
        positions (S, V): the output head then skips every position that is not scored.
        With ``caches`` (one per layer, see ``new_caches``), ``input_ids`` continue the
        sequence the caches hold (incremental decoding)."""
        features = self.features(input_ids, caches)  # (B, T, n)
        return self.head(features if scored is None else features[scored])

    def new_caches(self) -> list[LayerCache]:
        return [LayerCache() for _ in self.blocks]

    def features(
        self, input_ids: torch.Tensor, caches: list[LayerCache] | None = None
    ) -> torch.Tensor:
        """The final-normed hidden states (B, T, n) that the output head reads."""
        T = input_ids.shape[1]
        start = 0 if caches is None else caches[0].length  # position of the first token
        if self.config.block_size < start + T:
            raise ValueError(
                f"sequence length {start + T} exceeds block_size {self.config.block_size}"
            )
        h = self.tok_emb(input_ids)  # (B, T, n)
        if self.pos_emb is not None:
            h = h + self.pos_emb.weight[start : start + T]  # (B, T, n)
        h = self.hook_embed(h)
        real = self.real_positions(input_ids, caches)  # (B, T) or None
        for layer, block in enumerate(self.blocks):
            h = block(h, None if caches is None else caches[layer], real)
        return self.hook_final(self.norm_final(h))  # (B, T, n)

    def real_positions(
        self, input_ids: torch.Tensor, caches: list[LayerCache] | None
    ) -> torch.Tensor | None:
        """(B, T) True where a token is not a pad, with ``model.pad_masking``; else None."""
        if not self.config.pad_masking:
            return None
        real = input_ids != PAD  # (B, T)
        if caches is not None and not bool(real.all()):
            raise ValueError("model.pad_masking cannot decode incrementally over pad tokens")
        return None if caches is not None else real


def init_weights(model: Decoder, config: ModelShape) -> None:
    """Initialise every weight; the one place that says which distribution each weight gets.

    Draws from torch's global generator, so the run seed fixes the model (and MixiT's mixing
    matrices, drawn when the blocks are built). Norm gains start at 1 in every scheme.

    - ``small-output`` (default): token and position embeddings N(0, 1/n); every matrix that
      reads the residual stream (W_Q, W_K, W_V, W_G, W_U, the head) N(0, 1/fan_in),
      variance-preserving as in eq. 2.3's W^v ~ N(0, 1/n); the residual-output projections
      W_O and W_D N(0, output_init_std^2), so each block starts close to the identity and a
      small model can form an induction circuit early (docs/presets.md).
    - ``fan-in``: every matrix N(0, 1/fan_in), embeddings N(0, 1/n).
    - ``gpt2``: every matrix and embedding N(0, 0.02^2).

    Embeddings at N(0, 1/n) rather than N(0, 1), so that with the residual stream at RMS
    1/sqrt(n) the first updates of W_O and W_D are not drowned by the embedding.
    """
    gpt2 = config.init == "gpt2"
    for module in model.modules():
        if isinstance(module, nn.Linear):
            fan_in = module.weight.shape[1]
            nn.init.normal_(module.weight, std=0.02 if gpt2 else 1.0 / math.sqrt(fan_in))
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02 if gpt2 else 1.0 / math.sqrt(config.n_embd))
    if config.init == "small-output":
        for block in model.blocks:
            for projection in (block.attn.w_o, block.mlp.w_d):
                nn.init.normal_(projection.weight, std=config.output_init_std)
