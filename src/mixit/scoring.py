"""Losses and metrics over a batch's scored positions (those whose target is not
``IGNORE_INDEX``): the training loss, and a run's evaluation on its splits."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mixit.arch import RunModel
from mixit.config import RunConfig
from mixit.distributed import ALONE, Ranks
from mixit.tasks import IGNORE_INDEX, Split, TaskData, get_task


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


@torch.no_grad()
def _score_rows(
    model: RunModel, split: Split, max_examples: int, batch_size: int
) -> tuple[float, int, int, torch.Tensor]:
    """Over the first ``max_examples`` rows of ``split``: the summed loss of the answer
    tokens, their number, how many are right, and per row whether all of them are (n,)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    n = min(len(split), max_examples)
    loss_sum, tokens, token_hits, rows = 0.0, 0, 0, []
    for start in range(0, n, batch_size):
        stop = min(start + batch_size, n)
        inputs = split.inputs[start:stop].to(device).long()  # (B, T)
        targets = split.targets[start:stop].to(device).long()  # (B, T)
        scored = targets != IGNORE_INDEX  # (B, T)
        logits, answers = scored_logits(model, inputs, targets)  # (S, V), (S,)
        loss_sum += F.cross_entropy(logits, answers, reduction="sum").item()
        hits = torch.zeros_like(scored)  # (B, T)
        hits[scored] = logits.argmax(-1) == answers
        tokens += int(scored.sum())
        token_hits += int(hits.sum())
        rows.append((hits == scored).all(-1).cpu())  # (B,)
    model.train(was_training)
    return loss_sum, tokens, token_hits, torch.cat(rows)


def evaluate(model: RunModel, split: Split, max_examples: int, batch_size: int) -> dict[str, float]:
    """Loss, exact-match accuracy (all answer tokens right) and per-token accuracy."""
    loss_sum, tokens, token_hits, rows = _score_rows(model, split, max_examples, batch_size)
    return {
        "loss": loss_sum / tokens,
        "accuracy": int(rows.sum()) / len(rows),
        "token_accuracy": token_hits / tokens,
    }


def correct_rows(model: RunModel, split: Split, max_examples: int, batch_size: int) -> torch.Tensor:
    """Whether the model gets every answer token of each of the first ``max_examples`` rows of
    ``split`` right: (n,) booleans, for accuracies by any grouping of the rows."""
    return _score_rows(model, split, max_examples, batch_size)[3]


def evaluate_run(model: RunModel, data: TaskData, config: RunConfig) -> dict[str, float]:
    """The summary metrics: test loss and accuracies, train accuracy, the task's own extras."""
    spec = get_task(config.task_name)
    batch = max(config.train.batch_size, 256)
    limits = (config.train.eval_examples, batch)
    test = evaluate(model, data.test, *limits)
    metrics = {"test_loss": test["loss"], "test_token_accuracy": test["token_accuracy"]}
    if spec.exact_match:
        metrics["test_accuracy"] = test["accuracy"]
        # Memorization scores the training set itself: no second pass over the same examples.
        train = test if data.test_is_train else evaluate(model, data.train, *limits)
        metrics["train_accuracy"] = train["accuracy"]
    if spec.extra_metrics is not None:
        params_trainable = sum(p.numel() for p in model.trainable_parameters())
        metrics |= spec.extra_metrics(metrics, params_trainable, config.task)
    return metrics
