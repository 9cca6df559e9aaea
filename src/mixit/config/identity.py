"""What identifies a run among its settings: a config dict without the settings that change
how it executes and not what it computes, nor those added later at the value every earlier
run had. Its hash names the run's directory (``mixit.running.runs.hashed_name``), so a
finished run is found again by any command that asks for the same model."""

from __future__ import annotations

from mixit.common.io import JSONObject


def has_stop_rule(stop_at: float | None, patience: int, plateau: float) -> bool:
    """Whether a run may stop before its budget: at a target, or on no progress."""
    return stop_at is not None or patience > 0 or plateau > 0


# Where to run, checkpoints and logging change no result (on one device type); nor does
# splitting a step's batch into micro-batches, beyond float rounding, as the number of GPUs.
EXECUTION_SETTINGS = (
    ("train", "device"),
    ("train", "micro_batches"),
    ("train", "checkpoint_every"),
    ("train", "halt_at"),
    ("train", "track_heads"),
    ("train", "tensorboard"),
    ("train", "wandb"),
)


# Result settings added after run directories existed, with the value every earlier run
# used: at that value they are left out of a run's identity, so earlier runs stay reusable.
ADDED_LATER = {
    ("train", "precision"): "fp32",
    ("train", "compile"): False,
    ("train", "lr_scaling"): False,
    ("train", "stop_at"): None,
    ("train", "patience"): 0,
    ("train", "plateau"): 0.0,
    ("train", "validation_fraction"): 0.0,
    # Runs before it let their stop rule read the test split.
    ("train", "stop_validation_fraction"): 0.0,
    ("model", "sink_first_row_weight"): 1.0,
    ("model", "construction"): "equations",
    ("model", "mixing_causal"): True,
    ("model", "pad_masking"): False,
    ("model", "mixing_centering"): "row-mean",
    ("model", "mixing_identity"): True,
    ("model", "bias"): False,
    ("model", "width_scaling"): False,
    ("model", "width_base"): 512.0,
    ("model", "width_base_down"): 1.0,
    ("model", "activation_gain"): False,
    ("model", "residual_depth_alpha"): None,
    ("model", "residual_depth_base"): 4.0,
    ("model", "arch"): "mixit",
    ("model", "arch_init"): "own",
    ("model", "frozen_seed"): None,
    ("task", "padding"): "left",
    ("task", "train_fraction"): 0.0,
    ("task", "key_pool"): "upper-half",
    ("task", "query_ids"): "key",
    ("task", "layout"): "equals",
    ("task", "reverse_operands"): False,
    ("task", "answer_ids"): "digits",
    ("task", "stop_token"): False,
    ("task", "scored_tokens"): "answer",
    ("task", "bos_token"): False,
    ("task", "readout"): "vocabulary",
}


def without_execution_settings(config: JSONObject) -> JSONObject:
    """A copy of a config dict (``RunConfig.to_dict``) without ``EXECUTION_SETTINGS`` (and
    without ``ADDED_LATER`` settings at their original value): what identifies a run."""
    stripped = {k: dict(v) if isinstance(v, dict) else v for k, v in config.items()}
    for section, key in EXECUTION_SETTINGS:
        stripped.get(section, {}).pop(key, None)
    for (section, key), original in ADDED_LATER.items():
        if stripped.get(section, {}).get(key, original) == original:
            stripped.get(section, {}).pop(key, None)
    train = stripped.get("train", {})
    rule = has_stop_rule(train.get("stop_at"), train.get("patience", 0), train.get("plateau", 0))
    if not rule or train.get("validation_fraction", 0.0):
        train.pop("stop_validation_fraction", None)  # it changes nothing there
    return stripped
