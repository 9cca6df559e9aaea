"""The task interface: a task turns its typed config and a seed into token tensors.

Every task is a sequence task: the model reads ``inputs`` (N, T) and is scored, position by
position, on ``targets`` (N, T); positions that are not part of the answer hold ``IGNORE_INDEX``
and contribute neither to the loss nor to the accuracy (the loss mask).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from mixit.common.errors import UsageError, did_you_mean
from mixit.common.io import JSONObject
from mixit.config.overrides import Settings
from mixit.data.vocabulary import Vocabulary

IGNORE_INDEX = -100
PAD = 0  # the padding token of every task that pads
PRESET_NAMES = ("tiny", "small", "paper")
# Where a task with answers of one length puts its padding: before the content (the answer at
# a fixed last position) or after it (the answer at each row's last real token).
PADDINGS = ("left", "right")


@dataclass(frozen=True)
class Split:
    """One split of a task: ``inputs`` (N, T) token ids, ``targets`` (N, T) expected tokens."""

    inputs: torch.Tensor
    targets: torch.Tensor

    def __len__(self) -> int:
        return self.inputs.shape[0]


@dataclass(frozen=True)
class TaskData:
    train: Split
    test: Split
    vocab_size: int
    # Memorization is scored on the training set itself; every other task on held-out data.
    test_is_train: bool = False
    # Train on every next token (``next_token_targets``) while each split's targets, which
    # every evaluation scores, hold the answers alone: MAD's recall tasks train so.
    train_on_every_token: bool = False


def next_token_targets(split: Split) -> torch.Tensor:
    """Targets (N, T) for every next token of ``split``: the next input, and at the last
    position the split's own target there (the sequence's last token, an answer)."""
    targets = torch.roll(split.inputs, -1, dims=1)  # (N, T)
    targets[:, -1] = split.targets[:, -1]
    return targets


def scored_answers(split: Split) -> torch.Tensor:
    """Each row's answer, its scored target tokens moved to the front in order, IGNORE_INDEX
    after them: (N, A) for the longest answer's length A, equal rows for equal answers wherever
    the layout puts them."""
    unscored = split.targets == IGNORE_INDEX  # (N, T)
    order = torch.sort(unscored.to(torch.uint8), dim=1, stable=True).indices  # scored first
    width = int((~unscored).sum(1).max()) if len(split) else 0  # the longest answer, A
    return torch.gather(split.targets, 1, order[:, :width])  # (N, A)


def most_frequent_row(rows: torch.Tensor) -> torch.Tensor:
    """The most frequent row of (N, A) integer ``rows`` (ties to the smallest). Rows are packed
    into one exact int64 key when they fit, because ``torch.unique(dim=0)`` is ten times slower
    than a one-dimensional unique."""
    digits = torch.where(rows == IGNORE_INDEX, 0, rows + 1)  # (N, A), non-negative
    base = int(digits.max()) + 1 if digits.numel() else 1
    if rows.min() < IGNORE_INDEX or rows.shape[1] * math.log2(base) >= 62:
        answers, counts = torch.unique(rows, dim=0, return_counts=True)
        return answers[counts.argmax()]
    powers = base ** torch.arange(rows.shape[1] - 1, -1, -1, dtype=torch.int64)  # (A,)
    keys = (digits * powers).sum(1)  # (N,), ordered like the rows
    unique, inverse, counts = torch.unique(keys, return_inverse=True, return_counts=True)
    first = torch.full_like(unique, len(rows)).scatter_reduce(
        0, inverse, torch.arange(len(rows)), "amin"
    )  # (U,) a row holding each key
    return rows[first[counts.argmax()]]


def constant_answer_accuracy(data: TaskData, config: Any = None) -> float:
    """Chance for an exact-match task: the test accuracy of always giving the training split's
    most frequent answer, the best a model that ignores its input can do."""
    if not len(data.train) or not len(data.test):
        return 0.0
    best = most_frequent_row(scored_answers(data.train))  # (A,)
    test = scored_answers(data.test)  # (N, A)
    width = min(test.shape[1], best.shape[0])
    same = (test[:, :width] == best[:width]).all(1)
    same &= (test[:, width:] == IGNORE_INDEX).all(1) & (best[width:] == IGNORE_INDEX).all()
    return float(same.double().mean())


def unigram_log_ppl(data: TaskData, config: Any = None) -> float:
    """Chance for a language model: the test tokens' mean negative log-likelihood in nats
    under the training tokens' frequencies (add-one smoothed), a model that ignores context."""
    train = data.train.targets[data.train.targets != IGNORE_INDEX]
    test = data.test.targets[data.test.targets != IGNORE_INDEX]
    counts = torch.bincount(train, minlength=data.vocab_size).double() + 1.0  # (V,)
    log_p = counts.log() - counts.sum().log()  # (V,)
    return float(-log_p[test].mean()) if len(test) else math.inf


# The litmus test (the paper's section 5): a variant "matches" the standard model when its
# mean is at most this far behind (in the metric's units); `mixit compare --tolerance`. The
# plateau stop rule (train.plateau) reads progress against it too.
DEFAULT_TOLERANCE = {"test_accuracy": 0.02, "log_ppl": 0.05}

# The stretch of its budget, as a fraction of train.steps, over which a run of any preset
# stops once its held-out metric has gained no more than the tolerance (train.plateau): the
# half that rule 5 (docs/tuning.md) reads "still rising" over, so a run stops only after
# showing, over as long a stretch as that rule reads, that it has converged.
PLATEAU = 0.5
PLATEAU_KEY = "train.plateau"


@dataclass(frozen=True)
class TaskSpec:
    """A registered task: its typed config, its generator and its presets.

    ``presets`` maps a preset name (tiny, small, paper) to dotted overrides of the run config,
    e.g. ``{"task.max_pairs": 8, "model.n_embd": 64, "train.steps": 1500}``.
    ``extra_metrics(metrics, params_trainable, config)`` may add task-specific summary metrics.
    """

    name: str
    config_cls: type
    make_data: Callable[[Any, int], TaskData]
    presets: Mapping[str, Mapping[str, Any]]
    summary: str
    # The headline metric `mixit compare` reports (a key of summary["metrics"]).
    metric: str = "test_accuracy"
    # The headline metric's direction (accuracy rises, log perplexity falls): what "reached
    # train.stop_at" and "improved" mean.
    higher_is_better: bool = True
    # Whether "all answer tokens right" is meaningful (not for a 256-token language-model
    # window); without it only the loss and per-token accuracy are reported.
    exact_match: bool = True
    extra_metrics: Callable[[dict[str, float], int, Any], dict[str, float]] | None = None
    metadata: JSONObject = field(default_factory=dict)
    # The metric a model that ignores its input reaches, from the run's data and task config:
    # the litmus test needs the reference clearly beyond it.
    chance: Callable[[TaskData, Any], float] = constant_answer_accuracy
    # What ``chance`` is, in words, for a reading that names a model at or below it.
    chance_means: str = "always giving the training split's most frequent answer"
    # The dotted settings ``model.construction=authors`` adds for this task: its data layout
    # and set-up where the authors' scripts differ from the paper's text
    # (mixit.models.constructions).
    authors_settings: Settings = field(default_factory=dict)
    # For a task whose data may be out of reach (a hub corpus): its sequence length,
    # vocabulary and share of scored tokens from the config alone, where the config says them,
    # so that a cost estimate (mixit.cost.predict) need not build the data; else (None) it builds
    # them.
    declared_shape: Callable[[Any], tuple[int, int, float] | None] | None = None
    # Generated here from its config and seed, with no corpus, hub or user file: the tasks
    # `mixit suite` runs by default.
    synthetic: bool = True
    # Scored through mixit.models.readout.BottleneckReadout (the whole input rebuilt from the last
    # position's state) instead of each position's next-token logits.
    bottleneck_readout: bool = False
    # How the task's text maps to its ids, from its config (a task that reads text): a run
    # saves it so that a prompt can be written as text (mixit.data.vocabulary).
    vocabulary: Callable[[Any], Vocabulary | None] | None = None
    # The knob that makes the task harder (a dotted ``task.*`` key) and the values ``compare
    # --axis default`` walks by preset, where named (else factors of the preset's value).
    axis: str | None = None
    axis_values: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # What makes the task harder, in the words a reading's advice uses: dotted ``task.*`` key
    # -> words (``{"task.max_pairs": "more pairs"}``). Only the knobs that change its examples'
    # difficulty (the ones MAD and Zoology grade their tasks along); none for a task read from
    # files or a corpus, whose harder examples must come from there.
    harder_with: Mapping[str, str] = field(default_factory=dict)
    # The tokens a scored answer is chosen among, from the task config and the vocabulary size
    # (mixit.models.readout.AnswerReadout); None, or a None answer: every token of the vocabulary.
    answer_ids: Callable[[Any, int], tuple[int, ...] | None] | None = None
    # Also report its peer's accuracy, averaged over classes (MAD's ``MulticlassAccuracy``):
    # ``test_macro_accuracy`` beside the headline metric, which the litmus reading uses.
    reports_macro_accuracy: bool = False
    # Summary metrics that break the test split's exact match down by row (k-hop's accuracy
    # per number of hops): ``row_metrics(correct (N,), inputs (N, T), config)``, recorded at
    # every evaluation so that a report needs no weights to read them.
    row_metrics: Callable[[torch.Tensor, torch.Tensor, Any], dict[str, float]] | None = None
    # The files its data come from besides its config: a run's name covers their contents.
    read_files: Callable[[Any], tuple[Path, ...]] | None = None

    @property
    def tolerance(self) -> float:
        """The litmus tolerance of the headline metric: what counts as progress or a gap."""
        return DEFAULT_TOLERANCE.get(self.metric, 0.02)


TASKS: dict[str, TaskSpec] = {}


def harder(task: str) -> str:
    """The advice that would make ``task`` harder, from the knobs it declares
    (``TaskSpec.harder_with``): ``make it harder: more pairs (task.max_pairs), a larger
    vocabulary (task.vocab_size)``; a task that declares none is told where harder examples
    must come from instead of a setting that changes nothing."""
    knobs = [f"{words} ({key})" for key, words in TASKS[task].harder_with.items()]
    if knobs:
        return "make it harder: " + ", ".join(knobs)
    return "no setting makes its examples harder: harder ones must come from its data"


def model_size(n_layer: int, n_embd: int, n_head: int) -> dict[str, int]:
    """A preset's model, as the overrides that set it."""
    return {"model.n_layer": n_layer, "model.n_embd": n_embd, "model.n_head": n_head}


def schedule(
    batch_size: int, lr: float, steps: int, eval_every: int, weight_decay: float | None = None
) -> dict[str, float]:
    """A preset's training budget, as the overrides that set it (weight decay when it differs
    from the default)."""
    decay = {} if weight_decay is None else {"train.weight_decay": weight_decay}
    settings = {"train.batch_size": batch_size, "train.lr": lr, "train.steps": steps}
    return {**settings, "train.eval_every": eval_every, **decay}


# The tiny preset the recall and copying tasks of architecture research share (mqar,
# selective-copying, noisy-recall): retrieval's model and ceiling, so their readings compare.
RECALL_TINY: Settings = {
    **model_size(n_layer=2, n_embd=64, n_head=2),
    "model.mixing_scale": "sequence",
    **schedule(batch_size=128, lr=2e-3, steps=2400, eval_every=400),
    "train.stop_at": 0.99,
}


def register(spec: TaskSpec) -> None:
    TASKS[spec.name] = spec


class KeyValueIds:
    """MAD's split of a recall task's content ids (``content_ids``, set by the task): the
    first half, rounded down, are keys, the rest values."""

    content_ids: int

    @property
    def num_keys(self) -> int:
        return self.content_ids // 2

    @property
    def num_values(self) -> int:
        return self.content_ids - self.num_keys


def most_frequent_shown_guess(
    split: Split, first_value: int, num_values: int, least: float = 0.0
) -> float:
    """The accuracy of naming, at each scored position, the value id (``first_value`` ..
    ``first_value + num_values - 1``) the row has shown most often before it (ties: the one
    shown first), or ``least`` where higher: what a recall model that does not bind keys to
    values can learn, since a value shown often is more often asked."""
    inputs, targets = split.inputs, split.targets  # (N, T)
    is_value = (inputs >= first_value) & (inputs < first_value + num_values)  # (N, T)
    shown = torch.nn.functional.one_hot(torch.where(is_value, inputs - first_value, 0), num_values)
    counts = torch.cumsum(shown * is_value[..., None], dim=1)  # (N, T, V): shown so far
    # Ties go to the value shown first: a bonus below one showing for each earlier position.
    unseen = (counts == 0).sum(1, keepdim=True)  # (N, 1, V): positions before its first
    guess = first_value + (counts + unseen / (2 * inputs.shape[1])).argmax(-1)  # (N, T)
    scored = targets != IGNORE_INDEX
    return max(float((guess[scored] == targets[scored]).float().mean()), least)


def check_choice(config: Any, name: str, choices: tuple[str, ...]) -> None:
    """Raise a UsageError if ``task.<name>`` of ``config`` is not one of ``choices``."""
    value = getattr(config, name)
    if value not in choices:
        raise UsageError(f"task.{name}='{value}' is not one of: {', '.join(choices)}")


def check_positive(config: Any, *names: str) -> None:
    """Raise a UsageError naming the first ``task.<name>`` of ``config`` that is not >= 1."""
    for name in names:
        if getattr(config, name) < 1:
            raise UsageError(f"task.{name} must be >= 1, got {getattr(config, name)}")


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise UsageError(
            f"unknown task '{name}'{did_you_mean(name, TASKS)}; choose one of: {', '.join(TASKS)}"
        )
    return TASKS[name]
