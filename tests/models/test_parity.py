"""Parity with the authors' code: the ``authors`` construction computes their models' logits.

tests/fixtures/authors/ holds small models of theirs (made by make_fixture.py there, with
their modeling_llama.py at commit 22ce029 and transformers 4.50.3): weights, the fixed mixing
matrices and the noise they were drawn from, inputs and logits. Here each is loaded into the
mixit model that ``model.construction=authors`` builds for the same variant and task, and
must give the same logits to 1e-5. No network, no transformers.
"""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mixit.models.attention import attention_sink_matrix, mixing_matrices
from mixit.models.decoder import Decoder
from mixit.models.variants import VARIANTS
from mixit.training.resolve import resolve_config

FIXTURE = Path(__file__).parents[1] / "fixtures" / "authors"
CASES = json.loads((FIXTURE / "cases.json").read_text())
LABELS = [11, 12]  # the classifier's two labels as mixit output ids (any two ids do)

# Per case: the mixit variant and task whose authors' construction it is, and the options a
# user sets on top (the language-model script's depth_alpha=1 residual is not in the bundle).
BUILDS = {
    "mixit_causal": ("mixit", "dyck", {}),
    "mixit_classifier": ("mixit", "sentiment", {}),
    "standard_causal": ("standard", "dyck", {}),
    "mixit_causal_depth": (
        "mixit",
        "dyck",
        {
            "model.residual_lambda": None,
            "model.residual_depth_alpha": 1.0,
            "model.residual_depth_base": 4.0,
            "model.mixing_identity": False,
        },
    ),
}

# Their parameter names (modeling_llama.py; ScaledLinear keeps its nn.Linear as .linear)
# against ours, per block.
BLOCK_NAMES = {
    "input_layernorm.weight": "norm_attn.weight",
    "post_attention_layernorm.weight": "norm_mlp.weight",
    **{
        f"self_attn.{x}_proj.linear.{p}": f"attn.w_{x}.{p}"
        for x in "qkvo"
        for p in ("weight", "bias")
    },
    **{
        f"mlp.{theirs}_proj.linear.{p}": f"mlp.w_{ours}.{p}"
        for theirs, ours in (("gate", "g"), ("up", "u"), ("down", "d"))
        for p in ("weight", "bias")
    },
}


def ours_from_theirs(tensors: dict[str, torch.Tensor], n_layer: int) -> dict[str, torch.Tensor]:
    names = {
        "model.embed_tokens.weight": "tok_emb.weight",
        "model.wpe.weight": "pos_emb.weight",
        "model.norm.weight": "norm_final.weight",
        "lm_head.linear.weight": "head.weight",
    }
    for layer in range(n_layer):
        theirs, ours = f"model.layers.{layer}", f"blocks.{layer}"
        names |= {f"{theirs}.{t}": f"{ours}.{o}" for t, o in BLOCK_NAMES.items()}
        names[f"model.layers.{layer}.self_attn.attn_weights"] = f"blocks.{layer}.attn.mixing"
    return {ours: tensors[theirs] for theirs, ours in names.items() if theirs in tensors}


def build(case: str) -> tuple[Decoder, dict[str, torch.Tensor]]:
    variant, task, options = BUILDS[case]
    sizes = CASES[case]["sizes"]
    overrides = {
        "model.construction": "authors",
        "model.n_embd": sizes["hidden_size"],
        "model.n_layer": sizes["num_hidden_layers"],
        "model.n_head": sizes["num_attention_heads"],
        "model.mlp_ratio": sizes["intermediate_size"] // sizes["hidden_size"],
        "model.block_size": sizes["max_seq_len"],
        "model.vocab_size": sizes["vocab_size"],
        **options,
    }
    config = resolve_config(task, variant, "tiny", overrides=overrides)
    torch.manual_seed(0)
    model = Decoder(config.model, VARIANTS[variant]).eval()
    tensors = load_file(FIXTURE / f"{case}.safetensors")
    state = ours_from_theirs(tensors, sizes["num_hidden_layers"])
    if "score.linear.weight" in tensors:  # the classifier's head: the label rows of ours
        state["head.weight"] = model.head.weight.detach().clone()
        state["head.weight"][LABELS] = tensors["score.linear.weight"]
    missing = set(model.state_dict()) - set(state)
    assert not missing, f"the fixture does not set {sorted(missing)}"
    model.load_state_dict(state)
    return model, tensors


@pytest.mark.parametrize("case", ["mixit_causal", "standard_causal", "mixit_causal_depth"])
def test_authors_construction_gives_their_language_model_logits(case):
    model, tensors = build(case)
    with torch.no_grad():
        logits = model(tensors["input_ids"])  # (B, T, V)
    torch.testing.assert_close(logits, tensors["logits"], rtol=0, atol=1e-5)


def test_authors_construction_gives_their_classifier_logits():
    model, tensors = build("mixit_classifier")
    ids = tensors["input_ids"]  # (B, T), right-padded with 0
    last_real = (ids != 0).long().cumsum(-1).argmax(-1)  # (B,) last non-pad position
    with torch.no_grad():
        logits = model(ids)  # (B, T, V)
    pooled = logits[torch.arange(len(ids)), last_real][:, LABELS]  # (B, 2)
    torch.testing.assert_close(pooled, tensors["logits"], rtol=0, atol=1e-5)


@pytest.mark.parametrize("case", ["mixit_causal", "mixit_classifier"])
def test_mixing_matrices_from_their_noise_are_theirs(case):
    """Given their raw W^M draw, our centring and sink build their matrices exactly."""
    model, tensors = build(case)
    config = model.config
    for layer in range(config.n_layer):
        prefix = f"model.layers.{layer}.self_attn"
        built = mixing_matrices(
            tensors[f"{prefix}.mixing_noise"],
            causal=config.mixing_causal,
            centering=config.mixing_centering,
            identity=config.mixing_identity,
        )  # (H, T, T)
        built[0] = attention_sink_matrix(config.block_size, config.sink_first_row_weight)
        torch.testing.assert_close(built, tensors[f"{prefix}.attn_weights"], rtol=0, atol=1e-6)
