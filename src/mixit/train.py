"""Resolve a run's config, train it, evaluate it, and write its run directory.

Run directory: ``config.json`` (fully resolved), ``metrics.jsonl`` (one object per
evaluation), ``model.safetensors`` (weights and MixiT's fixed matrices) and, last of all,
``summary.json``: its presence means the run finished.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from mixit.checkpoint import (
    check_resumable,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
    stored_config_matches,
)
from mixit.config import RunConfig, from_dict
from mixit.distributed import ALONE, Ranks
from mixit.errors import TrainingDiverged, UsageError
from mixit.model import Decoder
from mixit.resolve import fit_model_to_data, resolve_config, resolve_device
from mixit.rundir import RunWriter
from mixit.tasks import IGNORE_INDEX, Split, TaskData, TaskSpec, get_task
from mixit.tasks.base import hold_out_validation
from mixit.variants import get_variant


def mixed_precision(device: torch.device, config: RunConfig) -> torch.autocast:
    """bf16 autocast when ``train.precision=bf16`` (a no-op context for fp32)."""
    enabled = config.train.precision == "bf16"
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)


def build_model(config: RunConfig) -> Decoder:
    torch.manual_seed(config.seed)
    return Decoder(config.model, get_variant(config.variant))


def make_optimizer(model: Decoder, config: RunConfig) -> torch.optim.AdamW:
    """AdamW over the trainable parameters only; no weight decay on norm gains."""
    trainable = model.trainable_parameters()
    groups = [
        {
            "params": [p for p in trainable if p.dim() >= 2],
            "weight_decay": config.train.weight_decay,
        },
        {"params": [p for p in trainable if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        [g for g in groups if g["params"]],
        lr=config.train.lr * lr_multiplier(config),
        betas=(config.train.beta1, config.train.beta2),
    )


def lr_multiplier(config: RunConfig) -> float:
    """The factor ``train.lr_scaling`` puts on the learning rate: (base depth / L) times
    (base width / n), the authors' --scale_lr; 1.0 when it is off."""
    if not config.train.lr_scaling:
        return 1.0
    m = config.model
    return (m.residual_depth_base / m.n_layer) * (m.width_base / m.n_embd)


def lr_factor(step: int, config: RunConfig) -> float:
    """Linear warm-up, then cosine decay from 1 to ``min_lr_ratio`` at the last step."""
    t = config.train
    if step < t.warmup_steps:
        return (step + 1) / t.warmup_steps
    progress = (step - t.warmup_steps) / max(1, t.steps - t.warmup_steps)
    return t.min_lr_ratio + (1 - t.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


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


def training_loss(
    model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor, ranks: Ranks = ALONE
) -> tuple[torch.Tensor, float]:
    """The loss to differentiate, and the global batch's mean loss as a number.

    Alone, both are ``sequence_loss``. Under data parallelism each rank holds a slice: its
    summed loss over the global count of scored tokens, times the world size, so that
    DistributedDataParallel's gradient average is the gradient of the global mean.
    """
    if ranks.world == 1:
        loss = sequence_loss(model, inputs, targets)
        return loss, loss.item()
    logits, answers = scored_logits(model, inputs, targets)  # (S, V), (S,)
    total = F.cross_entropy(logits, answers, reduction="sum")
    count = ranks.sum(torch.tensor(float(answers.numel()), device=logits.device))
    global_mean = (ranks.sum(total.detach()) / count).item()
    return total / count * ranks.world, global_mean


@torch.no_grad()
def _score_rows(
    model: Decoder, split: Split, max_examples: int, batch_size: int
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


def evaluate(model: Decoder, split: Split, max_examples: int, batch_size: int) -> dict[str, float]:
    """Loss, exact-match accuracy (all answer tokens right) and per-token accuracy."""
    loss_sum, tokens, token_hits, rows = _score_rows(model, split, max_examples, batch_size)
    return {
        "loss": loss_sum / tokens,
        "accuracy": int(rows.sum()) / len(rows),
        "token_accuracy": token_hits / tokens,
    }


def correct_rows(model: Decoder, split: Split, max_examples: int, batch_size: int) -> torch.Tensor:
    """Whether the model gets every answer token of each of the first ``max_examples`` rows of
    ``split`` right: (n,) booleans, for accuracies by any grouping of the rows."""
    return _score_rows(model, split, max_examples, batch_size)[3]


def evaluate_run(model: Decoder, data: TaskData, config: RunConfig) -> dict[str, float]:
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


def sample_batch(
    inputs: torch.Tensor,
    targets: torch.Tensor,
    batches: torch.Generator,
    config: RunConfig,
    ranks: Ranks = ALONE,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A training batch drawn with replacement, this rank's slice of it: (B / world, T) each."""
    index = torch.randint(len(inputs), (config.train.batch_size,), generator=batches)
    index = ranks.shard(index).to(inputs.device)
    return inputs[index].long(), targets[index].long()


def compiled(module: torch.nn.Module, config: RunConfig) -> torch.nn.Module:
    """``module`` under torch.compile when ``train.compile`` asks for it, else itself.

    A worker of `reproduce` or `sweep` (or `--estimate`) handles many runs in turn. Forgetting
    the earlier runs' compiled graphs keeps each run's numbers independent of what ran before
    it (a second shape could otherwise get a dynamic-shape graph) and keeps a long-lived
    process under torch's limit of compiled versions, past which it quietly runs eager.
    """
    if not config.train.compile:
        return module
    torch.compiler.reset()
    return torch.compile(module)


def train_step(
    trained: torch.nn.Module,
    model: Decoder,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    config: RunConfig,
    ranks: Ranks = ALONE,
) -> tuple[float, float]:
    """One optimiser step: ``(global mean loss, gradient norm before clipping)``.

    ``trained`` runs the forward pass (``model`` itself, or its DDP or compiled wrapper);
    ``model`` owns the parameters. A non-finite loss returns before any update.
    """
    with mixed_precision(inputs.device, config):
        loss, loss_value = training_loss(trained, inputs, targets, ranks)
    if not math.isfinite(loss_value):
        return loss_value, math.nan
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.trainable_parameters(), config.train.grad_clip)
    optimizer.step()
    return loss_value, grad_norm.item()


@dataclass
class StopRule:
    """When a run ends before ``train.steps``: at the first evaluation whose headline metric
    reaches ``train.stop_at`` ("target"), or after ``train.patience`` evaluations in a row
    without a better one ("plateau"). Its state travels in the checkpoint, so a resumed run
    stops at the same step as an uninterrupted one."""

    target: float | None
    patience: int
    higher_is_better: bool
    best: float | None = None
    stale: int = 0  # evaluations since the best

    @classmethod
    def of(cls, config: RunConfig, spec: TaskSpec, state: Mapping[str, Any]) -> StopRule:
        rule = cls(config.train.stop_at, config.train.patience, spec.higher_is_better)
        rule.best, rule.stale = state.get("best"), state.get("stale", 0)
        return rule

    def _beats(self, value: float, other: float) -> bool:
        return value > other if self.higher_is_better else value < other

    def update(self, value: float) -> str | None:
        """Record one evaluation's headline metric; the reason to stop now, if any."""
        if math.isfinite(value) and (self.best is None or self._beats(value, self.best)):
            self.best, self.stale = value, 0
        else:
            self.stale += 1
        target = self.target
        if target is not None and math.isfinite(value) and not self._beats(target, value):
            return "target"
        if self.patience and self.stale >= self.patience:
            return "plateau"
        return None

    def state(self) -> dict[str, Any]:
        return {"best": self.best, "stale": self.stale}


@dataclass
class Training:
    """What a run trains with, built by ``setup`` in one order for a run and for its timing:
    the data, the model on its device, the optimizer, the module that runs the forward pass
    (the model, or its DDP or compiled wrapper) and the batch generator."""

    config: RunConfig
    data: TaskData
    model: Decoder
    trained: torch.nn.Module
    optimizer: torch.optim.AdamW
    batches: torch.Generator
    device: torch.device
    ranks: Ranks
    inputs: torch.Tensor  # (N, T) the training split, on the device
    targets: torch.Tensor  # (N, T)

    def step(self) -> tuple[float, float]:
        """One optimiser step on a sampled batch: ``(global mean loss, gradient norm)``."""
        config, ranks = self.config, self.ranks
        inputs, targets = sample_batch(self.inputs, self.targets, self.batches, config, ranks)
        return train_step(self.trained, self.model, self.optimizer, inputs, targets, config, ranks)


def setup(config: RunConfig, data: TaskData, ranks: Ranks = ALONE) -> Training:
    """Fit the config to the data and build everything a training step needs."""
    fit_model_to_data(config, data)
    model = build_model(config)
    ranks.check_batch(config.train.batch_size)
    device = ranks.device(resolve_device(config.train.device))
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # TF32 tensor cores for fp32 matmuls
        torch.backends.cudnn.allow_tf32 = True
    model.to(device)
    ranks.check_identical(dict(model.named_buffers()))
    optimizer = make_optimizer(model, config)
    trained = compiled(model if ranks.world == 1 else DistributedDataParallel(model), config)
    batches = torch.Generator().manual_seed(config.seed)  # on the CPU: same batches anywhere
    inputs, targets = data.train.inputs.to(device), data.train.targets.to(device)
    return Training(
        config, data, model, trained, optimizer, batches, device, ranks, inputs, targets
    )


def run(
    config: RunConfig,
    out: Path | None = None,
    progress: bool | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Train a resolved config, write the run directory ``out`` if given, return the summary.

    With ``resume``, continue from the last checkpoint in ``out`` (a finished run is returned
    as it is); the result is the same as that of an uninterrupted run.
    """
    spec = get_task(config.task_name)
    if resume:
        finished = check_resumable(out, config)
        if finished is not None:
            return finished
    data = hold_out_validation(
        spec.make_data(config.task, config.seed), config.train.validation_fraction
    )
    held_out = bool(config.train.validation_fraction) and not data.test_is_train
    ranks = Ranks.from_environment(resolve_device(config.train.device))
    training = setup(config, data, ranks)
    model, optimizer, batches = training.model, training.optimizer, training.batches
    device = training.device
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, config))
    progress_state = {"step": 0, "running_loss": None, "train_seconds": 0.0, "metrics": {}}
    if resume and out is not None and latest_checkpoint(out) is not None:
        progress_state = load_checkpoint(out, model, optimizer, schedule, batches)
    first_step = progress_state["step"]
    running_loss, metrics = progress_state["running_loss"], progress_state["metrics"]
    train_seconds = progress_state["train_seconds"]
    rule = StopRule.of(config, spec, progress_state)
    # A checkpoint written at an early stop, before the summary, resumes to that stop.
    stopped = progress_state.get("stopped")
    last_step = steps_run = first_step if stopped else config.train.steps
    show = (sys.stderr.isatty() if progress is None else progress) and ranks.is_main
    out = out if ranks.is_main else None  # only rank 0 writes
    bar = tqdm(
        range(first_step, last_step),
        initial=first_step,
        total=config.train.steps,
        desc=f"{config.task_name}/{config.variant}",
        disable=not show,
    )
    seq_len = data.train.inputs.shape[1]
    writer = RunWriter(out, config, resume_step=first_step)
    every = config.train.checkpoint_every
    start = time.perf_counter()
    for step in bar:
        loss_value, grad_norm = training.step()
        if not math.isfinite(loss_value):
            raise TrainingDiverged(f"training diverged: loss is {loss_value} at step {step}")
        schedule.step()
        running_loss = (
            loss_value if running_loss is None else 0.95 * running_loss + 0.05 * loss_value
        )
        last = step + 1 == config.train.steps
        if (step + 1) % config.train.eval_every == 0 or last:
            train_seconds += time.perf_counter() - start
            with mixed_precision(device, config):
                metrics = evaluate_run(model, data, config)
            record = {"step": step + 1, "lr": schedule.get_last_lr()[0], "train_loss": running_loss}
            seen = (step + 1) * config.train.batch_size * seq_len
            record |= metrics | {"train_seconds": train_seconds, "grad_norm": grad_norm}
            record["tokens_per_second"] = seen / max(train_seconds, 1e-9)
            writer.log(record)
            bar.set_postfix(loss=f"{running_loss:.3f}", test=f"{metrics[spec.metric]:.3f}")
            stopped = rule.update(metrics[spec.metric])
            start = time.perf_counter()
        if out is not None and (last or stopped or (every and (step + 1) % every == 0)):
            seconds = train_seconds + time.perf_counter() - start
            state = {"step": step + 1, "running_loss": running_loss, "metrics": metrics}
            state |= rule.state() | {"stopped": stopped, "train_seconds": seconds}
            save_checkpoint(out, model, optimizer, schedule, batches, state)
        if stopped:
            steps_run = step + 1
            break
    bar.close()
    summary = run_summary(training, steps_run, stopped or "budget", train_seconds, metrics)
    summary["evaluated_on"] = "validation" if held_out else "test"
    writer.finish(model, summary)
    ranks.close()
    return summary


def run_summary(
    training: Training,
    steps_run: int,
    stopped: str,
    train_seconds: float,
    metrics: Mapping[str, float],
) -> dict[str, Any]:
    """``summary.json``: the contract's keys, how far the run trained and why it stopped, and
    the task's chance level beside its metrics."""
    config, model, data = training.config, training.model, training.data
    seen = steps_run * config.train.batch_size * data.train.inputs.shape[1]
    return {
        "task": config.task_name,
        "model": config.variant,
        "seed": config.seed,
        "preset": config.preset,
        "steps": config.train.steps,
        "steps_run": steps_run,
        "stopped": stopped,
        "params_total": sum(p.numel() for p in model.parameters()),
        "params_trainable": sum(p.numel() for p in model.trainable_parameters()),
        "train_seconds": train_seconds,
        "tokens_per_second": seen / train_seconds,
        "metrics": dict(metrics),
        "chance": get_task(config.task_name).chance(data, config.task),
    }


def train(
    task: str,
    model: str,
    preset: str = "tiny",
    seed: int = 0,
    out: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    resume: bool = False,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Train one model on one task; returns the summary (also written to ``out/summary.json``).

    ``resume=True`` continues ``out`` from its last checkpoint (``train.checkpoint_every``) and
    returns a finished run as it is. Without it, a folder holding a finished run, or a run of
    another config, is refused unless ``overwrite=True``.
    """
    config = resolve_config(task, model, preset, seed, overrides)
    folder = Path(out) if out is not None else None
    if folder is not None and not (resume or overwrite):
        check_not_a_run(folder, config)
    return run(config, folder, progress, resume)


def check_not_a_run(folder: Path, config: RunConfig) -> None:
    """Refuse to train anew over a finished run, or over a run of another config."""
    if (folder / "summary.json").exists():
        raise UsageError(
            f"{folder} holds a finished run; --resume returns it, --overwrite trains it again"
        )
    if stored_config_matches(folder, config) is False:
        raise UsageError(
            f"{folder} holds a run of another config; use another --out, or --overwrite"
        )


def time_training(
    config: RunConfig, steps: int = 5, warmup: int = 1, budget_seconds: float = 10.0
) -> dict[str, float]:
    """What a run would cost on this machine, measured without training it.

    Seconds to build the run's data, per training step (the mean over up to ``steps`` steps
    after ``warmup`` untimed ones, fewer once ``budget_seconds`` have passed, at least one) and
    per evaluation, and the estimate for the whole run from them.
    """
    config = from_dict(config.to_dict(), get_task(config.task_name).config_cls)
    started = time.perf_counter()
    data = get_task(config.task_name).make_data(config.task, config.seed)
    data_seconds = time.perf_counter() - started
    training = setup(config, data)
    for _ in range(warmup):
        training.step()
    started, timed = time.perf_counter(), 0
    while timed < steps and (timed == 0 or time.perf_counter() - started < budget_seconds):
        training.step()
        timed += 1
    step_seconds = (time.perf_counter() - started) / timed
    started = time.perf_counter()
    with mixed_precision(training.device, config):
        evaluate_run(training.model, data, config)
    eval_seconds = time.perf_counter() - started
    evaluations = math.ceil(config.train.steps / config.train.eval_every)
    return {
        "data_seconds": data_seconds,
        "step_seconds": step_seconds,
        "eval_seconds": eval_seconds,
        "run_seconds": data_seconds
        + config.train.steps * step_seconds
        + evaluations * eval_seconds,
    }
