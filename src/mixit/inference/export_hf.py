"""``mixit export-hf RUN_DIR OUT_DIR``: a run as a Hugging Face model folder.

Two forms (``--as``):

- ``llama``: a stock ``LlamaForCausalLM``, for the softmax variants (standard, frozen-qk,
  frozen-mlp, random) with the plain residual and the SiLU MLP: pre-norm RMSNorm blocks, RoPE
  on queries and keys (the same half-split rotation as HF's ``rotate_half``), a SiLU-gated
  MLP, an untied output head. Freezing changes which weights trained, not the architecture;
  the config records the frozen groups (``mixit_frozen``) and ``mixit.freeze`` applies them.
- ``mixit``: ``mixit.models.modeling_mixit.MixitForCausalLM``, for every run of mixit's
  decoder (MixiT, the authors' construction, the shaped residual and leaky ReLU). The folder
  carries the modelling code, so it loads with ``trust_remote_code=True`` where mixit is not
  installed, and the model freezes its groups itself.

``auto`` (default) writes a Llama where one can hold the run, else mixit's class.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from safetensors import SafetensorError

from mixit.common.errors import UsageError
from mixit.common.io import follow_umask, make_dir
from mixit.config.schema import ModelConfig, RunConfig
from mixit.models.decoder import Decoder
from mixit.models.shape import DECODER_FIELDS
from mixit.training.rundir import load_run

FORMS = ("auto", "llama", "mixit")

# Our parameter names -> HF Llama's, per block.
_BLOCK_NAMES = {
    "norm_attn.weight": "input_layernorm.weight",
    "attn.w_q.weight": "self_attn.q_proj.weight",
    "attn.w_k.weight": "self_attn.k_proj.weight",
    "attn.w_v.weight": "self_attn.v_proj.weight",
    "attn.w_o.weight": "self_attn.o_proj.weight",
    "norm_mlp.weight": "post_attention_layernorm.weight",
    "mlp.w_g.weight": "mlp.gate_proj.weight",
    "mlp.w_u.weight": "mlp.up_proj.weight",
    "mlp.w_d.weight": "mlp.down_proj.weight",
}

# With model.bias: every projection's bias (HF's attention_bias and mlp_bias).
_BIAS_NAMES = {
    ours.replace(".weight", ".bias"): theirs.replace(".weight", ".bias")
    for ours, theirs in _BLOCK_NAMES.items()
    if ours.startswith(("attn.", "mlp."))
}


def llama_config(
    model: ModelConfig, vocab_size: int, max_positions: int, attn_implementation: str | None = None
):
    """The ``transformers.LlamaConfig`` of a softmax-variant model shape."""
    import transformers

    return transformers.LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=model.n_embd,
        intermediate_size=model.mlp_ratio * model.n_embd,
        num_hidden_layers=model.n_layer,
        num_attention_heads=model.n_head,
        num_key_value_heads=model.n_head,
        max_position_embeddings=max_positions,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": model.rope_base},
        tie_word_embeddings=False,
        attention_bias=model.bias,
        mlp_bias=model.bias,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation=attn_implementation,
    )


def is_run_dir(folder: Path) -> bool:
    """Whether ``folder`` holds a mixit run (which an export must not overwrite); an earlier
    export's Hugging Face ``config.json`` does not count."""
    if (folder / "summary.json").exists() or (folder / "metrics.jsonl").exists():
        return True
    try:
        stored = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stored, dict) and "train" in stored


def export_hf(
    run_dir: str | Path, out_dir: str | Path, overwrite: bool = False, form: str = "auto"
) -> Path:
    """Write ``out_dir`` so that Hugging Face loads the run: ``LlamaForCausalLM.from_pretrained``
    (``form="llama"``) or ``AutoModelForCausalLM.from_pretrained(out_dir,
    trust_remote_code=True)`` (``"mixit"``; ``"auto"`` picks). A mixit run directory is never
    written into; another folder that is not empty only with ``overwrite``."""
    if form not in FORMS:
        raise UsageError(f"unknown export form '{form}'; choose one of: {', '.join(FORMS)}")
    target, run = Path(out_dir), Path(run_dir).resolve()
    if target.resolve() == run or run in target.resolve().parents or is_run_dir(target):
        raise UsageError(
            f"{target} is a mixit run directory or inside one; export into a new folder "
            "outside it so that the run stays as it trained"
        )
    if target.is_dir() and any(target.iterdir()) and not overwrite:
        raise UsageError(f"{target} is not empty; name a new folder, or add --overwrite")
    model, config = load_run(run_dir)
    if not isinstance(model, Decoder):
        raise UsageError(
            "only runs of mixit's decoder export (model.arch=mixit, a language-model task): "
            "a model.arch run is already its own library's model, and a readout is not a "
            "causal LM"
        )
    try:
        import transformers  # noqa: F401  (an extra: imported only when exporting)
    except ImportError:
        raise UsageError("export-hf needs transformers: pip install 'mixit[hf]'") from None
    refusal = llama_refusal(model, config.model)
    if form == "llama" and refusal:
        raise UsageError(f"{refusal}; export it with --as mixit")
    hf_model = (
        mixit_model(model, config) if form == "mixit" or refusal else llama_model(model, config)
    )
    fresh = not target.exists()
    try:
        return _save(hf_model, make_dir(out_dir))
    except (OSError, SafetensorError) as error:  # a full disk: safetensors raises its own
        if fresh and target.is_dir() and not any(target.iterdir()):
            target.rmdir()  # the folder this export made, and nothing in it
        raise UsageError(
            f"the model could not be written to {target} ({error}); nothing of it was kept"
        ) from None


def llama_refusal(model: Decoder, m: ModelConfig) -> str | None:
    """Why a stock Llama cannot hold this model, or None when it can."""
    if model.variant.layers and not model.traits.exportable:
        return "a hybrid with layers of MixiT's family is not a Llama: they have no queries or keys"
    if not model.traits.exportable:
        return (
            "MixiT is not a Llama: its attention is a fixed mixing matrix with no queries or "
            "keys, and it learns absolute positions"
        )
    stock = (
        m.residual_lambda is None
        and m.residual_depth_alpha is None
        and m.mlp_activation == "silu"
        and not m.width_scaling
    )
    if not stock:
        return (
            "this run uses a scaled residual, the shaped leaky ReLU or width-scaled "
            "projections, which a stock Llama does not have"
        )
    return None


def mixit_model(model: Decoder, config: RunConfig) -> Any:
    """The run as a ``MixitForCausalLM`` holding the same weights and buffers."""
    # Imported here: the class needs transformers, an extra.
    from mixit.models.modeling_mixit import MixitConfig, MixitForCausalLM

    hf_config = MixitConfig(
        variant=config.variant,
        attention=model.variant.attention.value,
        frozen=sorted(model.variant.frozen),
        **{name: getattr(config.model, name) for name in DECODER_FIELDS},
    )
    hf_model = MixitForCausalLM(hf_config)
    hf_model.decoder.load_state_dict(model.state_dict(), strict=True)
    return hf_model


def llama_model(model: Decoder, config: RunConfig) -> Any:
    """The run as a ``LlamaForCausalLM``; its config names the variant and frozen groups."""
    import transformers

    m = config.model
    hf_config = llama_config(m, m.vocab_size, m.block_size)
    hf_config.mixit_variant = config.variant
    hf_config.mixit_frozen = sorted(model.variant.frozen)
    state = model.state_dict()
    mapped = {
        "model.embed_tokens.weight": state["tok_emb.weight"],
        "model.norm.weight": state["norm_final.weight"],
        "lm_head.weight": state["head.weight"],
    }
    names = _BLOCK_NAMES | (_BIAS_NAMES if m.bias else {})
    for layer in range(m.n_layer):
        for ours, theirs in names.items():
            mapped[f"model.layers.{layer}.{theirs}"] = state[f"blocks.{layer}.{ours}"]
    hf_model = transformers.LlamaForCausalLM(hf_config)
    hf_model.load_state_dict(mapped, strict=True)
    return hf_model


def _save(hf_model: Any, out_dir: Path) -> Path:
    """``save_pretrained`` into a folder beside its place first, so that a failed save leaves
    no half-written model, and each file then given the umask's mode (safetensors writes its
    file as 0600)."""
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=out_dir))
    try:
        hf_model.save_pretrained(staging)
        for written in sorted(staging.iterdir()):
            follow_umask(written)
            os.replace(written, out_dir / written.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir
