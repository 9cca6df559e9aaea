"""The spectrum on a model the user already has: ``mixit.convert`` and ``mixit.freeze``.

``convert(model, "frozen-qk")`` turns a causal LM (GPT-2, Llama, Qwen2, Mistral, pretrained
or fresh; any other through ``Parts``) into one variant of the spectrum, with the same
definition ``mixit.spectrum`` and ``--arch`` use (``mixit.models.adapters.make_variant``):
``frozen-qk``, ``frozen-mlp`` and ``random`` leave their groups without gradients, ``mixit``
puts fixed causal mixing (eq. 2.3) in place of each attention module's scores and keeps its
value and output projections. ``freeze(model)`` applies the frozen groups an exported model's
config records, after loading; ``load_converted(folder)`` loads a converted model that
``save_pretrained`` saved whole, fixed mixing included, which the architecture's own
``from_pretrained`` cannot build.
"""

from __future__ import annotations

import copy as copying
import typing
from pathlib import Path

from torch import nn

from mixit.common.errors import UsageError
from mixit.config.schema import MixingScale
from mixit.models.adapters import (
    Parts,
    buildable,
    freeze_variant,
    make_variant,
    parameter_groups,
    parts_of,
)
from mixit.models.variants import HYBRID_JOIN

# The scales ``mixing_scale`` takes (``models.attention.mixing_std``).
MIXING_SCALES: tuple[str, ...] = typing.get_args(MixingScale)


def _parts(model: nn.Module, parts: Parts | None) -> Parts:
    """The model's parts, checked to be where they say (one line, not a traceback)."""
    found = parts_of(model, parts)
    try:
        if found.split is not None:
            found.split(model)
        parameter_groups(model, found)
    except AttributeError as error:
        raise UsageError(
            f"this model has no attention blocks where its parts say ({error}); describe "
            "them with mixit.Parts"
        ) from None
    return found


def convert(
    model: nn.Module,
    variant: str,
    parts: Parts | None = None,
    copy: bool = False,
    seed: int = 0,
    mixing_scale: str = "sequence",
) -> nn.Module:
    """``model`` as ``variant`` (one of ``MODELS``, or a hybrid of them layer by layer,
    ``mixit.models.variants.HYBRID_SYNTAX``): changed in place and returned, or, with
    ``copy=True``, a deep copy changed and ``model`` left as it was. MixiT's mixing matrices
    are drawn from ``seed`` at ``mixing_scale`` (``mixit.models.attention.mixing_std``);
    ``parts`` where no adapter knows the model. ``standard`` changes nothing."""
    if not isinstance(model, nn.Module):
        raise UsageError(
            f"convert takes a torch nn.Module (a causal LM), got {type(model).__name__}"
        )
    buildable(variant)
    if mixing_scale not in MIXING_SCALES:
        raise UsageError(
            f"unknown mixing_scale '{mixing_scale}'; choose one of: {', '.join(MIXING_SCALES)}"
        )
    target = copying.deepcopy(model) if copy else model
    make_variant(target, _parts(target, parts), variant, mixing_scale, seed)
    return target


def freeze(
    model: nn.Module, groups: list[str] | None = None, parts: Parts | None = None
) -> nn.Module:
    """Leave ``groups`` of ``model`` without gradients, in place, and return it. By default the
    groups its config records: ``mixit_frozen`` (``mixit export-hf --as llama``), a hybrid's
    ``mixit_variant`` (``convert``), layer by layer, or the ``frozen`` of a
    ``MixitForCausalLM``, which also freezes itself when it loads."""
    if not isinstance(model, nn.Module):
        raise UsageError(f"freeze takes a torch nn.Module, got {type(model).__name__}")
    config = getattr(model, "config", None)
    hybrid = getattr(config, "mixit_variant", None)
    if groups is None and isinstance(hybrid, str) and HYBRID_JOIN in hybrid:  # layer by layer
        freeze_variant(model, _parts(model, parts), buildable(hybrid))
        return model
    named = "groups"
    if groups is None:
        named, groups = "its config's mixit_frozen", getattr(config, "mixit_frozen", None)
        if groups is None and getattr(config, "model_type", None) == "mixit":
            named, groups = "its config's frozen", config.frozen
    if groups is None:
        raise UsageError(
            "this model's config records no frozen groups (no mixit_frozen): name them, "
            "freeze(model, groups=['qk'])"
        )
    if not isinstance(groups, list | tuple) or not all(isinstance(name, str) for name in groups):
        raise UsageError(f"{named} is a list of group names, e.g. ['qk'], got {groups!r}")
    held = (
        model.decoder.param_groups()
        if getattr(config, "model_type", None) == "mixit"
        else parameter_groups(model, _parts(model, parts))
    )
    unknown = sorted(set(groups) - set(held))
    if unknown:
        raise UsageError(
            f"unknown group '{unknown[0]}' in {named}; this model has: {', '.join(held)}"
        )
    for name in groups:
        for parameter in held[name]:
            parameter.requires_grad_(False)
    return model


def load_converted(folder: str | Path, parts: Parts | None = None) -> nn.Module:
    """The model ``convert`` changed and ``save_pretrained`` wrote to ``folder``, whole: its
    architecture built from the saved config, made the variant the config records
    (``mixit_variant``: MixiT's fixed mixing, or a hybrid's, in place of the attention the
    architecture's own ``from_pretrained`` would build and leave untrained), every saved
    tensor loaded into it (the mixing matrices too), its frozen groups frozen again; in eval
    mode, as ``from_pretrained`` returns a model. ``parts`` where no adapter knows it."""
    import transformers
    from safetensors.torch import load_file

    files = sorted(Path(folder).glob("model*.safetensors"))
    if not files:
        raise UsageError(f"{folder} holds no model*.safetensors that save_pretrained writes")
    config = transformers.AutoConfig.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_config(config)
    variant = getattr(config, "mixit_variant", None)
    if variant is not None:  # its groups frozen too, layer by layer; its mixing drawn, then loaded
        convert(model, variant, parts)
    elif getattr(config, "mixit_frozen", None) is not None:
        freeze(model, parts=parts)
    saved = {key: tensor for file in files for key, tensor in load_file(file).items()}
    loaded = model.load_state_dict(saved, strict=False)
    # save_pretrained leaves out a weight tied to another (GPT-2's head is its embedding).
    tensors = model.state_dict()
    kept = {tensors[key].untyped_storage().data_ptr() for key in saved if key in tensors}
    untied = [k for k in loaded.missing_keys if tensors[k].untyped_storage().data_ptr() not in kept]
    if loaded.unexpected_keys or untied:
        odd = [*loaded.unexpected_keys, *untied][:3]
        raise UsageError(
            f"{folder}'s weights are not those of its config's model ({', '.join(odd)}): "
            "load_converted reads what convert changed and save_pretrained saved"
        )
    return model.eval()
