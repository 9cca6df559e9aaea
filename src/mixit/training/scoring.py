"""Losses and metrics over a batch's scored positions (those whose target is not
``IGNORE_INDEX``): the training loss, and a run's evaluation on its splits."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mixit.config.schema import RunConfig
from mixit.models.build import RunModel
from mixit.tasks import IGNORE_INDEX, Split, TaskData
from mixit.training.distributed import ALONE, Ranks


def scored_logits(
    model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (S, V) and targets (S,) at the S scored positions only.

    The output head runs only where a target is scored: for a classification-style task with a
    large vocabulary (sentiment: one scored position of 50) that skips most of the step.
    """
    scored = targets != IGNORE_INDEX  # (B, T)
    return model(inputs, scored), targets[scored]


def sequence_loss(
    model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy over the scored (non-IGNORE) positions of a batch (B, T)."""
    return F.cross_entropy(*scored_logits(model, inputs, targets))


def scored_count(targets: torch.Tensor, ranks: Ranks = ALONE) -> torch.Tensor:
    """The global batch's number of scored tokens (a float tensor), summed over ranks."""
    return ranks.sum((targets != IGNORE_INDEX).sum().float())


def summed_loss(
    model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """The cross-entropy summed over the scored positions of a batch (B, T).

    A training step differentiates each micro-batch's sum over the global batch's
    ``scored_count`` (times the world size under data parallelism, whose gradient average
    then gives the global mean's gradient): the gradient of the global mean loss however the
    batch is split across ranks and micro-batches.
    """
    return F.cross_entropy(*scored_logits(model, inputs, targets), reduction="sum")


@dataclass
class Tallies:
    """What an evaluation counts over the scored positions: the summed loss, the positions
    and how many are right, per row whether all of them are, and per class (target token)
    the right answers, the targets and the predictions (3, V)."""

    loss_sum: float
    tokens: int
    token_hits: int
    rows: torch.Tensor  # (n,) bool
    classes: torch.Tensor  # (3, V): hits, targets, predictions per token id


@torch.no_grad()
def _score_rows(model: RunModel, split: Split, max_examples: int, batch_size: int) -> Tallies:
    """The tallies over the first ``max_examples`` rows of ``split``."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    n = min(len(split), max_examples)
    loss_sum, tokens, token_hits, rows = 0.0, 0, 0, []
    classes = None
    for start in range(0, n, batch_size):
        stop = min(start + batch_size, n)
        inputs = split.inputs[start:stop].to(device).long()  # (B, T)
        targets = split.targets[start:stop].to(device).long()  # (B, T)
        scored = targets != IGNORE_INDEX  # (B, T)
        logits, answers = scored_logits(model, inputs, targets)  # (S, V), (S,)
        loss_sum += F.cross_entropy(logits, answers, reduction="sum").item()
        predicted = logits.argmax(-1)  # (S,)
        hits = torch.zeros_like(scored)  # (B, T)
        hits[scored] = predicted == answers
        tokens += int(scored.sum())
        token_hits += int(hits.sum())
        rows.append((hits == scored).all(-1).cpu())  # (B,)
        vocab = logits.shape[-1]
        counts = torch.stack(
            [
                torch.bincount(answers[predicted == answers], minlength=vocab),
                torch.bincount(answers, minlength=vocab),
                torch.bincount(predicted, minlength=vocab),
            ]
        ).cpu()  # (3, V)
        classes = counts if classes is None else classes + counts
    model.train(was_training)
    return Tallies(loss_sum, tokens, token_hits, torch.cat(rows), classes)


def macro_accuracy(classes: torch.Tensor) -> float:
    """MAD's accuracy (torchmetrics' ``MulticlassAccuracy``, its default macro average): each
    class's share of its targets answered right, averaged over the classes that were a target
    or a prediction (a class predicted but never a target counts as 0)."""
    hits, targets, predictions = classes.double()  # (V,) each
    present = (targets + predictions) > 0
    recall = torch.where(targets > 0, hits / targets.clamp(min=1), torch.zeros_like(hits))
    return float(recall[present].mean())


def evaluate(model: RunModel, split: Split, max_examples: int, batch_size: int) -> dict[str, float]:
    """Loss, exact-match accuracy (all answer tokens right), per-token accuracy and the
    class-averaged accuracy of ``macro_accuracy``."""
    return _summarised(_score_rows(model, split, max_examples, batch_size))


def _summarised(tallies: Tallies) -> dict[str, float]:
    return {
        "loss": tallies.loss_sum / tallies.tokens,
        "accuracy": int(tallies.rows.sum()) / len(tallies.rows),
        "token_accuracy": tallies.token_hits / tallies.tokens,
        "macro_accuracy": macro_accuracy(tallies.classes),
    }


def correct_rows(model: RunModel, split: Split, max_examples: int, batch_size: int) -> torch.Tensor:
    """Whether the model gets every answer token of each of the first ``max_examples`` rows of
    ``split`` right: (n,) booleans, for accuracies by any grouping of the rows."""
    return _score_rows(model, split, max_examples, batch_size).rows


def evaluate_run(
    model: RunModel, data: TaskData, config: RunConfig, training_rows: bool = True
) -> dict[str, float]:
    """The summary metrics: test loss and accuracies, train accuracy (``training_rows``: a
    pass over the training rows, which no rule reads; without it only where the test split
    is the training set), the task's own extras."""
    spec = config.task_spec
    limits = _limits(config)
    test_rows = _score_rows(model, data.test, *limits)
    test = _summarised(test_rows)
    metrics = {"test_loss": test["loss"], "test_token_accuracy": test["token_accuracy"]}
    if spec.reports_macro_accuracy:
        metrics["test_macro_accuracy"] = test["macro_accuracy"]
    if spec.exact_match:
        metrics["test_accuracy"] = test["accuracy"]
        # Memorization scores the training set itself: no second pass over the same examples.
        if data.test_is_train:
            metrics["train_accuracy"] = test["accuracy"]
    if training_rows:
        metrics |= train_accuracy(model, data, config)
    if spec.row_metrics is not None:
        inputs = data.test.inputs[: len(test_rows.rows)]  # (N, T), the rows scored
        metrics |= spec.row_metrics(test_rows.rows, inputs, config.task)
    if spec.extra_metrics is not None:
        params_trainable = sum(p.numel() for p in model.trainable_parameters())
        metrics |= spec.extra_metrics(metrics, params_trainable, config.task)
    return metrics


def train_accuracy(model: RunModel, data: TaskData, config: RunConfig) -> dict[str, float]:
    """The exact-match accuracy on the first ``eval_examples`` training rows, for a task
    scored by exact match ({} otherwise, and where the test split is the training set, which
    ``evaluate_run`` scored already)."""
    if not config.task_spec.exact_match or data.test_is_train:
        return {}
    return {"train_accuracy": evaluate(model, data.train, *_limits(config))["accuracy"]}


def _limits(config: RunConfig) -> tuple[int, int]:
    """The rows an evaluation scores, and its batch."""
    return config.train.eval_examples, max(config.train.batch_size, 256)
