"""A run's config, resolved: the defaults, the variant's, the task preset's, the
construction's and the user's settings in that order, validated, then fitted to the task's
data (vocabulary, sequence length, memory)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from mixit.common.errors import UsageError
from mixit.config.overrides import Settings, from_dict, with_settings
from mixit.config.schema import MAX_SEED, RunConfig
from mixit.cost.memory import available_bytes, check_fits, mixer_of
from mixit.models.adapters import MODELS as SPECTRUM_MODELS
from mixit.models.adapters import get_variant
from mixit.models.build import BUILT_IN, check_arch
from mixit.models.constructions import construction_overrides
from mixit.models.mixers import variant_traits
from mixit.tasks import IGNORE_INDEX, PRESET_NAMES, Split, TaskData, get_task
from mixit.tasks.base import PLATEAU, PLATEAU_KEY
from mixit.training.devices import present_device


def resolve_config(
    task: str,
    model: str,
    preset: str = "tiny",
    seed: int = 0,
    overrides: Settings | None = None,
) -> RunConfig:
    """defaults < the variant's model defaults < the task preset < the construction
    (``model.construction``, see mixit.models.constructions) < ``overrides``."""
    spec, variant = get_task(task), get_variant(model)
    if preset not in PRESET_NAMES:
        raise UsageError(f"unknown preset '{preset}'; choose one of: {', '.join(PRESET_NAMES)}")
    check_seed(seed)
    config = RunConfig(
        task_name=task,
        variant=model,
        preset=preset,
        seed=seed,
        task=spec.config_cls(),
        task_spec=spec,
        variant_spec=variant,
    )
    config = with_settings(config, {f"model.{k}": v for k, v in variant.model_defaults.items()})
    config = with_settings(config, {PLATEAU_KEY: PLATEAU} | dict(spec.presets[preset]))
    asked = with_settings(config, overrides or {})  # for model.construction itself
    bundle = construction_overrides(asked.model.construction, variant, spec.authors_settings)
    config = with_settings(with_settings(config, bundle), overrides or {})
    if not variant.draws_frozen:  # the same model with or without it: one run, one name
        config = config.with_model(frozen_seed=None)
    validate(config)
    return config


def check_seed(seed: int) -> None:
    """A run's seed, checked: the seeds of a task's data add offsets to it, and torch takes
    seeds below 2^64."""
    if not 0 <= seed < MAX_SEED:
        raise UsageError(f"--seed must be in [0, 2^62), got {seed}")


def check_runnable_here(config: RunConfig) -> None:
    """For a run about to train on this machine (not one estimated for a target, nor one
    submitted to a cluster), before any data, model or file is made: the device
    ``train.device`` names is here, a logger it names is installed, and the model's weights
    and optimizer state fit the free memory (``memory.check_fits``'s lower bound at one token
    a row; ``fit_model_to_data`` checks again at the data's length and vocabulary)."""
    device = present_device(config.train.device)
    check_fits(config, 1, device)
    if config.train.wandb:
        try:
            import wandb  # noqa: F401
        except ImportError:
            raise UsageError(
                f"train.wandb={config.train.wandb} needs the wandb package: pip install wandb"
            ) from None


def stored_config(data: Any) -> RunConfig:
    """A run's config as ``config.json`` stores it (``RunConfig.to_dict``), its values checked
    as the command line's are: anything else is a UsageError naming the key."""
    name = data.get("task_name") if isinstance(data, Mapping) else None
    if not isinstance(name, str):
        raise UsageError("expected a JSON object of a run's settings with its task_name")
    variant = data.get("variant")
    if not isinstance(variant, str):
        raise UsageError(f"'variant' must be a str, got {variant!r}")
    return from_dict(data, get_task(name), get_variant(variant))


def validate(config: RunConfig) -> None:
    """Check every section of a resolved or stored config (a UsageError names the value)."""
    variant = config.variant_spec
    built_in = config.model.arch == BUILT_IN
    config.model.validate(uses_rope=built_in and variant_traits(variant, config.model).rope)
    check_arch(config.model.arch)
    named = [layer for layer, _ in variant.layers if layer >= config.model.n_layer]
    if named:
        raise UsageError(
            f"model '{config.variant}' names layer {named[0]}, and model.n_layer="
            f"{config.model.n_layer} has layers 0-{config.model.n_layer - 1}"
        )
    if not built_in and not set(variant.rows) <= set(SPECTRUM_MODELS):
        raise UsageError(
            f"model '{config.variant}' exists on mixit's decoder only; model.arch="
            f"{config.model.arch} takes: {', '.join(SPECTRUM_MODELS)}"
        )
    if config.train.track_heads and not built_in:
        raise UsageError(
            f"train.track_heads reads mixit's decoder through its taps; model.arch="
            f"{config.model.arch} has none (mixit analyze attention reads it after training)"
        )
    config.task.validate()
    config.train.validate()
    check_data_fits(config)


# Below this many rows a synthetic task's data is small next to any machine's memory: the
# sequence length is then not worth generating sample rows to learn.
ROWS_WITHOUT_CHECK = 10**6


def check_data_fits(config: RunConfig) -> None:
    """Refuse a synthetic task's ``task.n_train`` + ``task.n_test`` rows whose token ids
    (inputs and targets, int64) alone exceed the host's free memory, before generating any."""
    rows = getattr(config.task, "n_train", 0) + getattr(config.task, "n_test", 0)
    if rows <= ROWS_WITHOUT_CHECK:
        return
    sample = dataclasses.replace(config.task, n_train=2, n_test=2)
    length = config.task_spec.make_data(sample, config.seed).train.inputs.shape[1]
    needed, free = 2 * 8 * rows * length, available_bytes(torch.device("cpu"))
    if needed > free:
        raise UsageError(
            f"task.n_train={config.task.n_train} and task.n_test={config.task.n_test} rows of "
            f"{length} tokens need at least {needed / 2**30:,.1f} GiB of memory; "
            f"{free / 2**30:,.1f} GiB is free"
        )


def check_examples(config: RunConfig) -> None:
    """Generate a synthetic task's examples once, so that a size whose example space cannot
    hold ``task.n_train`` + ``task.n_test`` distinct rows (``sample_disjoint``), or whose
    sequences outgrow a set ``model.block_size``, is refused before anything trains; a task of
    more than ``ROWS_WITHOUT_CHECK`` rows is not generated twice for it."""
    rows = getattr(config.task, "n_train", 0) + getattr(config.task, "n_test", 0)
    if 0 < rows <= ROWS_WITHOUT_CHECK:
        fit_model_to_data(config, config.task_spec.make_data(config.task, config.seed))


def fit_model_to_data(config: RunConfig, data: TaskData) -> RunConfig:
    """``config`` with the model's vocabulary and length filled from the data where left at 0,
    checked to fit; ``config`` itself is left as it is (its sizes at 0 name its run)."""
    device, seq_len = present_device(config.train.device), data.train.inputs.shape[1]
    sizes = {
        "vocab_size": config.model.vocab_size or data.vocab_size,
        "block_size": config.model.block_size or seq_len,
    }
    config = config.with_model(**sizes)
    if config.model.vocab_size < data.vocab_size:
        raise UsageError(
            f"model.vocab_size={config.model.vocab_size} is smaller than the task's "
            f"vocabulary ({data.vocab_size} tokens)"
        )
    if seq_len > config.model.block_size:
        raise UsageError(
            f"sequences of length {seq_len} are longer than model.block_size="
            f"{config.model.block_size}: MixiT's T x T mixing matrices and the learned position "
            "tables hold that many positions and cannot run past them (leave model.block_size "
            "at 0 to size them to each task's data)"
        )
    traits = mixer_of(config)
    if not traits.causal and not all(map(classification_layout, (data.train, data.test))):
        raise UsageError(
            f"non-causal mixing (model.mixing_causal=false) would let positions read the "
            f"answers of task {config.task_name}; it needs one scored position per row with "
            "only padding (id 0) after it: sentiment, or custom data with one-token targets"
        )
    check_fits(config, seq_len, device)
    return config


def classification_layout(split: Split) -> bool:
    """Whether every row is scored at exactly one position with nothing but padding (id 0)
    after it, so that a model reading the whole row still cannot see the answer."""
    scored = split.targets != IGNORE_INDEX  # (N, T)
    after = scored.int().cumsum(-1).bool() & ~scored  # (N, T): positions past the scored one
    return bool((scored.sum(-1) == 1).all() and (split.inputs[after] == 0).all())
