"""A run's config, resolved: the defaults, the variant's, the task preset's, the
construction's and the user's settings in that order, validated, then fitted to the task's
data (vocabulary, sequence length, memory)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from mixit.arch import BUILT_IN, check_arch
from mixit.attention import mixer_traits
from mixit.config import MAX_SEED, RunConfig, apply_overrides
from mixit.constructions import construction_overrides
from mixit.devices import auto_device
from mixit.errors import UsageError
from mixit.memory import check_fits
from mixit.tasks import IGNORE_INDEX, PRESET_NAMES, Split, TaskData, get_task
from mixit.variants import get_variant


def resolve_config(
    task: str,
    model: str,
    preset: str = "tiny",
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
) -> RunConfig:
    """defaults < the variant's model defaults < the task preset < the construction
    (``model.construction``, see mixit.constructions) < ``overrides``."""
    spec, variant = get_task(task), get_variant(model)
    if preset not in PRESET_NAMES:
        raise UsageError(f"unknown preset '{preset}'; choose one of: {', '.join(PRESET_NAMES)}")
    if not 0 <= seed < MAX_SEED:
        raise UsageError(f"--seed must be in [0, 2^62), got {seed}")
    config = RunConfig(task_name=task, variant=model, preset=preset, seed=seed)
    config.task = spec.config_cls()
    apply_overrides(config, {f"model.{k}": v for k, v in variant.model_defaults.items()})
    apply_overrides(config, spec.presets[preset])
    apply_overrides(config, overrides or {})  # first for model.construction itself
    bundle = construction_overrides(config.model.construction, variant, spec.authors_settings)
    apply_overrides(config, bundle)
    apply_overrides(config, overrides or {})
    validate(config)
    return config


def validate(config: RunConfig) -> None:
    """Check every section of a resolved or stored config (a UsageError names the value)."""
    variant = get_variant(config.variant)
    built_in = config.model.arch == BUILT_IN
    config.model.validate(
        uses_rope=built_in and mixer_traits(variant.attention, config.model).positions == "rope"
    )
    check_arch(config.model.arch)
    config.task.validate()
    config.train.validate()


def fit_model_to_data(config: RunConfig, data: TaskData) -> None:
    """Fill the model's vocabulary and length from the data, and check they fit."""
    seq_len = data.train.inputs.shape[1]
    if config.model.vocab_size == 0:
        config.model.vocab_size = data.vocab_size
    if config.model.block_size == 0:
        config.model.block_size = seq_len
    if config.model.vocab_size < data.vocab_size:
        raise UsageError(
            f"model.vocab_size={config.model.vocab_size} is smaller than the task's "
            f"vocabulary ({data.vocab_size} tokens)"
        )
    if seq_len > config.model.block_size:
        raise UsageError(
            f"sequences of length {seq_len} are longer than model.block_size="
            f"{config.model.block_size} (MixiT's mixing matrices and the position tables)"
        )
    traits = mixer_traits(get_variant(config.variant).attention, config.model)
    if not traits.causal and not all(map(classification_layout, (data.train, data.test))):
        raise UsageError(
            f"non-causal mixing (model.mixing_causal=false) would let positions read the "
            f"answers of task {config.task_name}; it needs one scored position per row with "
            "only padding (id 0) after it: sentiment, or custom data with one-token targets"
        )
    mixing = traits.positions == "learned"  # MixiT: fixed (H, T, T) matrices, no RoPE tables
    check_fits(config, seq_len, mixing, resolve_device(config.train.device))


def classification_layout(split: Split) -> bool:
    """Whether every row is scored at exactly one position with nothing but padding (id 0)
    after it, so that a model reading the whole row still cannot see the answer."""
    scored = split.targets != IGNORE_INDEX  # (N, T)
    after = scored.int().cumsum(-1).bool() & ~scored  # (N, T): positions past the scored one
    return bool((scored.sum(-1) == 1).all() and (split.inputs[after] == 0).all())


def resolve_device(name: str) -> torch.device:
    return auto_device() if name == "auto" else torch.device(name)
