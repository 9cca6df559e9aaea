"""Typed run configuration: the model, training and run dataclasses (what identifies a run
among their settings, and so its directory's hash, is ``mixit.config.identity``).

``mixit.config.overrides`` parses the dotted ``section.key=value`` overrides and
``mixit.training.resolve`` layers a run's config: dataclass defaults < the variant's model defaults
< the task preset < the construction < the user's overrides. The fully resolved result is what
``config.json`` holds.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from mixit.common.errors import UsageError
from mixit.common.io import JSONObject
from mixit.config.identity import has_stop_rule, without_execution_settings

# The options that take one of a few names: each field's type lists them, and validation and
# the command line read them from there (``choices``).
Init = Literal["small-output", "fan-in", "gpt2"]
ArchInit = Literal["own", "small-output"]
MlpActivation = Literal["silu", "shaped-leaky-relu"]
Precision = Literal["fp32", "bf16"]
MixingScale = Literal["paper", "per-head-spread", "sequence"]
MixingCentering = Literal["row-mean", "row-sum-over-position"]
Construction = Literal["equations", "authors"]
ARCH_INITS: tuple[str, ...] = typing.get_args(ArchInit)
# torch.manual_seed takes seeds below 2^64; a run's seed plus the offsets tasks add stays below.
MAX_SEED = 2**62


def _check_finite(section: str, config: Any) -> None:
    """Every float option of ``config`` is a finite number (or None where None is allowed)."""
    for option in dataclasses.fields(config):
        value = getattr(config, option.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{section}.{option.name} must be a finite number, got {value}")


def _check_range(key: str, value: float, low: float, high: float, closed_high: bool) -> None:
    inside = low <= value <= high if closed_high else low <= value < high
    if not inside:
        bracket = "]" if closed_high else ")"
        raise UsageError(f"{key} must be in [{low:g}, {high:g}{bracket}, got {value}")


@dataclass(frozen=True)
class ModelConfig:
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 2
    mlp_ratio: int = 4  # n_m = mlp_ratio * n (the paper: 4)
    vocab_size: int = 0  # 0: taken from the task
    block_size: int = 0  # longest sequence (size of MixiT's matrices); 0: the task's length
    # Initialisation scheme, documented in mixit.models.decoder.init_weights and docs/presets.md.
    init: Init = "small-output"
    output_init_std: float = 0.02  # std of W_O and W_D under "small-output"
    rope_base: float = 10000.0
    # MLP non-linearity phi in W_D(phi(W_G h) * W_U h): "silu" (Llama's SwiGLU) or the shaped
    # leaky ReLU of the shaped-transformer line of work, slope 1 + c / sqrt(n) for x < 0.
    mlp_activation: MlpActivation = "silu"
    leaky_relu_c: float = -1.0
    # Shaped residual h <- lam h + sqrt(1 - lam^2) f(h); None is the plain h + f(h).
    residual_lambda: float | None = None
    # MixiT only: the std of W^M's entries, see mixit.models.attention.mixing_std. "paper": 1/sqrt(n
    # m) (appendix A); "per-head-spread": per head uniform in [1/sqrt(m n_h), 1/sqrt(m)] (the
    # authors' public code); "sequence": 1/sqrt(m) (section 2's simplest case).
    mixing_scale: MixingScale = "paper"
    # MixiT only, off by default (not in the paper; the authors' code has it): head 0 of
    # every layer puts half its weight on the token itself and half on the first token.
    attention_sink: bool = False
    # The sink's weight of row 0 on token 0: 1.0 keeps every row summing to 1; the authors'
    # sink has 0.5 there (column 0 is set to 0.5 after the diagonal's 0.5).
    sink_first_row_weight: float = 1.0
    # A named bundle of the options below (mixit.models.constructions): "equations" (the paper's
    # equations, these defaults) or "authors" (what the authors' code builds). It is applied
    # over the preset; an option the user sets still wins over it.
    construction: Construction = "equations"
    # MixiT only. Causal mixing (eq. 2.3) or a full matrix; non-causal mixing needs a task
    # scored at one position per row (classification), where no input follows the answer.
    mixing_causal: bool = True
    # No position reads a pad token (id 0): softmax attention masks pad keys (each position
    # still sees itself), MixiT re-centres each row over the real tokens it sees. Off in both
    # readings: the paper is silent, the authors' MixiT mixes pads and their softmax models
    # never reach one (right padding, causal). Not with incremental decoding.
    pad_masking: bool = False
    # MixiT only. How W^M is centred: "row-mean" subtracts the mean of each row's visible
    # entries (rows of A sum to 1); "row-sum-over-position" subtracts row i's visible sum
    # divided by i + 1 (the authors' code: the same under the causal mask, a constant offset
    # on every column of a non-causal row).
    mixing_centering: MixingCentering = "row-mean"
    # MixiT only. A = I + centred W^M (eq. 2.3), or the centred W^M alone (the authors' code
    # with a depth-scaled residual).
    mixing_identity: bool = True
    # Biases on every projection of the blocks (W_Q, W_K, W_V, W_O, W_G, W_U, W_D), zero at
    # initialisation; the output head never has one.
    bias: bool = False
    # Multiply each projection's output by sqrt(base / fan_in): base = width_base for the
    # projections that read the residual stream (and the output head), width_base_down for
    # W_D, which reads the MLP's n_m features.
    width_scaling: bool = False
    width_base: float = 512.0
    width_base_down: float = 1.0
    # Multiply the shaped leaky ReLU by its variance-preserving gain sqrt(2 / (1 + slope^2)).
    activation_gain: bool = False
    # Depth-scaled residual h <- h + (residual_depth_base / n_layer)^alpha f(h); None: off.
    residual_depth_alpha: float | None = None
    residual_depth_base: float = 4.0
    # What the run trains (mixit.models.build): "mixit" (this decoder), "hf:NAME" (a Hugging Face
    # architecture built from config) or "module:MODULE:FACTORY" (the user's own model).
    arch: str = "mixit"
    # A model.arch model's initialisation: "own" (its library's) or "small-output" (every
    # matrix N(0, 1/fan_in), each residual branch's output matrix N(0, output_init_std^2):
    # mixit's default, offered so that a verdict does not hinge on it; docs/tuning.md).
    arch_init: ArchInit = "own"
    # The seed of what the variant freezes (MixiT's mixing matrices, Frozen-QK's W_Q and W_K,
    # Frozen-MLP's MLPs, the random transformer's blocks); None: the run's seed. The data, the
    # batch order and the trained weights' initialisation keep the run's seed
    # (docs/configuration.md); a variant that keeps no draw ignores it (training/resolve.py).
    frozen_seed: int | None = None

    def validate(self, uses_rope: bool = True) -> None:
        _check_finite("model", self)
        if self.rope_base <= 0:
            raise UsageError(f"model.rope_base must be > 0, got {self.rope_base}")
        for name in ("n_layer", "n_embd", "n_head", "mlp_ratio"):
            if getattr(self, name) < 1:
                raise UsageError(f"model.{name} must be >= 1, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise UsageError(
                f"model.n_embd={self.n_embd} is not divisible by model.n_head={self.n_head}"
            )
        if uses_rope and (self.n_embd // self.n_head) % 2:
            raise UsageError(
                f"head size n_embd/n_head={self.n_embd // self.n_head} must be even (RoPE)"
            )
        if self.frozen_seed is not None and not 0 <= self.frozen_seed < MAX_SEED:
            raise UsageError(f"model.frozen_seed must be in [0, 2^62), got {self.frozen_seed}")
        if not 0.0 <= self.output_init_std < float("inf"):
            raise UsageError(f"model.output_init_std must be >= 0, got {self.output_init_std}")
        _check_choices("model", self)
        if self.arch == "mixit" and self.arch_init != "own":
            raise UsageError(
                "model.arch_init applies to model.arch models; mixit's decoder takes model.init"
            )
        for name in ("width_base", "width_base_down", "residual_depth_base"):
            if not 0.0 < getattr(self, name) < float("inf"):
                raise UsageError(f"model.{name} must be > 0, got {getattr(self, name)}")
        if not 0.0 <= self.sink_first_row_weight < float("inf"):
            raise UsageError(
                f"model.sink_first_row_weight must be >= 0, got {self.sink_first_row_weight}"
            )
        if self.residual_lambda is not None and self.residual_depth_alpha is not None:
            raise UsageError(
                "model.residual_lambda and model.residual_depth_alpha are two residual rules; "
                "set one of them to none"
            )
        if self.residual_lambda is not None and not 0.0 < self.residual_lambda < 1.0:
            raise UsageError(
                f"model.residual_lambda must be in (0, 1) or none, got {self.residual_lambda}"
            )


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.98
    warmup_steps: int = 100
    min_lr_ratio: float = 0.1  # the cosine schedule ends at lr * min_lr_ratio
    grad_clip: float = 1.0
    eval_every: int = 250
    eval_examples: int = 4000  # examples per split scored at each evaluation
    device: str = "auto"  # "auto": CUDA when available, else CPU; or any torch device name
    # Save a resumable checkpoint every N steps (0: only at the end). Needs a run directory.
    checkpoint_every: int = 0
    # fp32, or bf16 autocast (mixed precision: weights and optimizer stay fp32).
    precision: Precision = "fp32"
    # torch.compile the training forward: fuses the element-wise work; the first steps pay
    # the compilation (docs/speed.md's performance table has both).
    compile: bool = False
    # Multiply lr by (model.residual_depth_base / n_layer) * (model.width_base / n_embd), the
    # authors' --scale_lr (their scripts leave it off).
    lr_scaling: bool = False
    # Stop at the first evaluation whose headline metric (the task's) reaches this value; None:
    # never. train.steps stays the ceiling.
    stop_at: float | None = None
    # Stop after this many evaluations in a row without a better headline metric; 0: never.
    patience: int = 0
    # Stop once the held-out headline metric has gained no more than the task's tolerance over
    # this fraction of train.steps (three evaluations at least; docs/tuning.md, rule 5); 0:
    # never. Every preset sets tasks.base.PLATEAU.
    plateau: float = 0.0
    # When > 0: train on the rest of the training split and evaluate on this fraction of it
    # (the "test_" metrics are then the validation split's); the test split stays unseen.
    validation_fraction: float = 0.0
    # A run with a stop rule (has_stop_rule) that is no validation run holds out this fraction
    # of its training rows for the rule to read: the test split never decides when a run
    # stops (docs/tuning.md, rule 5).
    stop_validation_fraction: float = 0.1
    # Accumulate each step's gradient over this many pieces of the batch: the same step, with
    # 1/micro_batches of the activations in memory at once (for a batch too large for a GPU).
    micro_batches: int = 1
    # Stop at this step with a checkpoint and no summary, to be resumed later by the same
    # config (the tuning protocol's successive halving, docs/tuning.md); 0: train to the end.
    halt_at: int = 0
    # At every evaluation, log each head's previous-token and induction score on the first
    # rows of the evaluated split (metrics.jsonl's heads.KIND.L{l}.H{h}; mixit analyze
    # dynamics draws them). It reads the model and changes nothing it computes.
    track_heads: bool = False
    tensorboard: bool = True  # event files in RUN_DIR/tensorboard (if tensorboard is installed)
    wandb: str = ""  # a Weights & Biases project name: log there too (needs wandb)

    def validate(self) -> None:
        _check_finite("train", self)
        _check_choices("train", self)
        _check_range("train.beta1", self.beta1, 0.0, 1.0, closed_high=False)
        _check_range("train.beta2", self.beta2, 0.0, 1.0, closed_high=False)
        _check_range("train.min_lr_ratio", self.min_lr_ratio, 0.0, 1.0, closed_high=True)
        if self.weight_decay < 0:
            raise UsageError(f"train.weight_decay must be >= 0, got {self.weight_decay}")
        if self.grad_clip <= 0:
            raise UsageError(f"train.grad_clip must be > 0, got {self.grad_clip}")
        if self.halt_at < 0:
            raise UsageError(f"train.halt_at must be >= 0, got {self.halt_at}")
        if self.checkpoint_every < 0:
            raise UsageError(f"train.checkpoint_every must be >= 0, got {self.checkpoint_every}")
        for name in ("steps", "batch_size", "eval_every", "eval_examples", "micro_batches"):
            if getattr(self, name) < 1:
                raise UsageError(f"train.{name} must be >= 1, got {getattr(self, name)}")
        if self.micro_batches > self.batch_size:
            raise UsageError(
                f"train.micro_batches={self.micro_batches} is more than the batch's "
                f"{self.batch_size} rows (train.batch_size)"
            )
        if self.lr <= 0:
            raise UsageError(f"train.lr must be > 0, got {self.lr}")
        try:
            torch.device("cpu" if self.device == "auto" else self.device)
        except RuntimeError:
            raise UsageError(
                f"train.device='{self.device}' is not a device; use auto, cpu, cuda or cuda:N"
            ) from None
        if self.warmup_steps < 0:
            raise UsageError(f"train.warmup_steps must be >= 0, got {self.warmup_steps}")
        if not 0.0 <= self.validation_fraction < 1.0:
            raise UsageError(
                f"train.validation_fraction must be in [0, 1), got {self.validation_fraction}"
            )
        if self.patience < 0:
            raise UsageError(f"train.patience must be >= 0, got {self.patience}")
        _check_range("train.plateau", self.plateau, 0.0, 1.0, closed_high=True)
        if not 0.0 <= self.stop_validation_fraction < 1.0:
            raise UsageError(
                "train.stop_validation_fraction must be in [0, 1), got "
                f"{self.stop_validation_fraction}"
            )

    def stop_split_fraction(self) -> float:
        """The share of the training rows held out for the stop rule: 0 without a rule, or
        in a validation run, whose evaluation the rule reads already."""
        has_rule = has_stop_rule(self.stop_at, self.patience, self.plateau)
        return self.stop_validation_fraction if has_rule and not self.validation_fraction else 0.0


def _plain(value: Any) -> Any:
    """``dataclasses.asdict`` without its deep copy of every leaf: a config's leaves are
    numbers, strings and None, and planning a reproduction turns thousands of configs into
    dicts (their run directories' hashes)."""
    if isinstance(value, int | float | str | None):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: _plain(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, list | tuple):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


# Marks a RunConfig field that resolving fills from its names, not a setting: it stays out of
# ``to_dict``, the run's name and equality.
RESOLVED = "resolved"


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get(RESOLVED))


@dataclass(frozen=True)
class RunConfig:
    """One run's settings, frozen: a change is a new config (``dataclasses.replace``, or
    ``mixit.config.overrides.with_settings`` for dotted keys).

    ``task_spec`` and ``variant_spec`` are what ``task_name`` and ``variant`` name, looked up
    once where the config is made (``mixit.training.resolve``, or ``from_dict`` for a stored
    one) so that no later stage looks them up again: the task's ``mixit.tasks.base.TaskSpec``
    and the variant's ``mixit.models.variants.Variant``. The config layer sits below both
    packages, so their types are not named here."""

    task_name: str
    variant: str
    preset: str
    seed: int
    model: ModelConfig = field(default_factory=ModelConfig)
    task: Any = None  # the task's own typed config dataclass
    train: TrainConfig = field(default_factory=TrainConfig)
    task_spec: Any = field(kw_only=True, compare=False, repr=False, metadata={RESOLVED: True})
    variant_spec: Any = field(kw_only=True, compare=False, repr=False, metadata={RESOLVED: True})

    def with_model(self, **changes: Any) -> RunConfig:
        """This config with the model section's ``changes`` (a new config)."""
        return dataclasses.replace(self, model=dataclasses.replace(self.model, **changes))

    def with_train(self, **changes: Any) -> RunConfig:
        """This config with the training section's ``changes`` (a new config)."""
        return dataclasses.replace(self, train=dataclasses.replace(self.train, **changes))

    def to_dict(self) -> JSONObject:
        return _plain(self)

    def result_dict(self) -> JSONObject:
        """``to_dict`` without the settings that change how a run executes but not what it
        computes: two configs with the same result_dict train the same model."""
        return without_execution_settings(self.to_dict())

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


@functools.cache
def choices(section: type) -> dict[str, tuple[str, ...]]:
    """The names each ``Literal`` option of a config section takes, by field (resolved once
    per class: string annotations are slow to evaluate)."""
    hints = typing.get_type_hints(section)
    return {
        name: typing.get_args(kind)
        for name, kind in hints.items()
        if typing.get_origin(kind) is Literal
    }


def check_choice(key: str, value: Any, names: tuple[str, ...]) -> None:
    if value not in names:
        raise UsageError(f"{key}='{value}' is not one of: {', '.join(names)}")


def _check_choices(section: str, config: Any) -> None:
    for name, names in choices(type(config)).items():
        check_choice(f"{section}.{name}", getattr(config, name), names)
