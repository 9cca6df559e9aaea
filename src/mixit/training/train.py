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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from mixit.common.errors import TrainingDiverged
from mixit.common.progress import Progress, progress_bar, progress_mode
from mixit.config.overrides import Settings
from mixit.config.schema import RunConfig
from mixit.data.vocabulary import save_vocabulary
from mixit.tasks.base import TaskSpec
from mixit.tasks.splits import MIN_HELD_ROWS
from mixit.training.checkpoint import RunProgress, load_checkpoint
from mixit.training.devices import present_device
from mixit.training.distributed import ALONE, Ranks
from mixit.training.resolve import (
    check_runnable_here,
    resolve_config,
)
from mixit.training.rundir import PhaseSeconds, RunDir, RunSummary, halted_summary, resumed
from mixit.training.setup import Training, setup
from mixit.training.step import (
    lr_factor,
)
from mixit.training.stopping import STOP_METRIC, StopRule
from mixit.training.threads import ThreadShare
from mixit.training.writer import RunWriter


def run(
    config: RunConfig,
    out: Path | None = None,
    progress: bool | Progress | None = None,
    resume: bool = False,
) -> RunSummary:
    """Train a resolved config, write the run directory ``out`` if given, return the summary.

    With ``resume``, continue from the last checkpoint in ``out`` (a finished run is returned
    as it is); the result is the same as that of an uninterrupted run. ``config`` is left as
    it is (it names the run directory): ``setup`` trains the copy ``fit_model_to_data`` fills.
    """
    if resume:
        finished = resumed(out, config)
        if finished is not None:
            return finished
    ranks = Ranks.from_environment(present_device(config.train.device))
    loop, steps = open_run(config, out, resume, ranks)
    bar = progress_bar(
        steps,
        mode=progress_mode(progress) if ranks.is_main else "off",
        initial=steps.start,
        total=config.train.steps,
        desc=f"{config.task_name}/{config.variant} seed {config.seed}",
        unit="step",
    )
    with ThreadShare.on(loop.training.device) as share:
        for step in bar:
            if loop.after_step(step, *loop.training.step(), bar):
                break
            share.tick()
    bar.close()
    summary = close_run(loop)
    ranks.close()
    return summary


def open_run(
    config: RunConfig, out: Path | None, resume: bool, ranks: Ranks = ALONE
) -> tuple[RunLoop, range]:
    """Everything a run trains with, from its last checkpoint in ``out`` with ``resume``: its
    loop and the steps left to train (to the budget, or to ``train.halt_at``)."""
    began = time.perf_counter()
    spec = config.task_spec
    training = setup(config, spec.make_data(config.task, config.seed), ranks)
    config, data = training.config, training.data  # sizes filled in from the data, splits held out
    schedule, progress = _restore(training, out if resume else None)
    first_step = progress["step"]
    # A checkpoint written at an early stop, before the summary, resumes to that stop.
    last_step = first_step if progress.get("stopped") else config.train.steps
    if config.train.halt_at:
        last_step = min(last_step, max(first_step, config.train.halt_at))
    writer = RunWriter(out if ranks.is_main else None, config, resume_step=first_step)
    if training.stop_rule_off and ranks.is_main:
        print(
            f"mixit: {len(data.train)} training rows hold fewer than {MIN_HELD_ROWS} out for the "
            f"stop rule ({config.train.stop_split_fraction():.0%}); it is off, and the run "
            "trains its whole budget",
            file=sys.stderr,
        )
    keep_vocabulary(spec, config, writer.out)
    loop = RunLoop.begin(training, schedule, progress, writer)
    loop.phases["setup"] += time.perf_counter() - began
    return loop, range(first_step, last_step)


def close_run(loop: RunLoop) -> RunSummary:
    """The run's summary, written last to its directory; a run halted at ``train.halt_at``
    is left to be resumed from its checkpoint, without one."""
    config, state = loop.training.config, loop.progress
    if state["step"] < config.train.steps and not state["stopped"]:
        loop.writer.halt()
        return halted_summary(config, state)
    summary = run_summary(
        loop.training,
        state["step"],
        state["stopped"] or "budget",
        state["train_seconds"],
        state["metrics"],
    )
    summary["evaluated_on"] = "validation" if loop.training.on_validation else "test"
    summary["phase_seconds"] = {**loop.phases}
    loop.writer.finish(loop.training.model, summary)
    return summary


@dataclass
class RunLoop:
    """A run between its optimiser steps: its progress (``step``, ``running_loss``,
    ``metrics``, ``train_seconds``, ``stopped``) and what follows each step: the running loss,
    evaluating, logging and checkpointing as the config says, and the stop rule. A run
    trained alone and a member of a batched group (``training.members``) go through this
    same code."""

    training: Training
    schedule: Any
    writer: RunWriter
    progress: RunProgress
    rule: StopRule
    start: float = 0.0  # when the current stretch of training began (perf_counter)
    phases: PhaseSeconds = field(default_factory=lambda: PhaseSeconds(setup=0.0, evaluation=0.0))

    @classmethod
    def begin(
        cls, training: Training, schedule: Any, progress: RunProgress, writer: RunWriter
    ) -> RunLoop:
        spec = training.spec
        kept = ("step", "running_loss", "metrics", "train_seconds")
        state = {key: progress[key] for key in kept} | {"stopped": progress.get("stopped")}
        if "first_loss" in progress:
            state["first_loss"] = progress["first_loss"]
        rule = StopRule.of(training.config, spec, progress, not training.stop_rule_off)
        phases = PhaseSeconds(setup=0.0, evaluation=0.0)
        phases.update(progress.get("phase_seconds", {}))  # a resumed run's stretches so far
        return cls(training, schedule, writer, state, rule, time.perf_counter(), phases)

    def after_step(
        self, step: int, loss_value: float, grad_norm: float | torch.Tensor, bar: tqdm
    ) -> bool:
        """Step ``step`` done with this loss and gradient norm (read only when logged); True
        when the stop rule ends the run here."""
        config, out, state = self.training.config, self.writer.out, self.progress
        if not math.isfinite(loss_value):
            raise TrainingDiverged(
                f"training diverged: loss is {loss_value} at step {step} "
                f"({config.variant} on {config.task_name}, seed {config.seed}, run {out})"
            )
        self.schedule.step()
        running = state["running_loss"]
        state["running_loss"] = loss_value if running is None else smoothed(running, loss_value)
        first = state.setdefault("first_loss", state["running_loss"])
        if state["running_loss"] > BLOWN_UP * max(first, 1.0):
            raise TrainingDiverged(
                f"training diverged: the running loss is {state['running_loss']:,.4g} at step "
                f"{step}, over {BLOWN_UP:g} times its first {first:.4g} ({config.variant} on "
                f"{config.task_name}, seed {config.seed}, run {out})"
            )
        state["step"] = reached = step + 1
        last, halting = reached == config.train.steps, reached == config.train.halt_at
        if reached % config.train.eval_every == 0 or last:
            self._evaluate(grad_norm, bar, last)
        every = config.train.checkpoint_every
        saving = last or state["stopped"] or halting or (every and reached % every == 0)
        if out is not None and saving:
            seconds = state["train_seconds"] + time.perf_counter() - self.start
            kept = {key: state[key] for key in ("step", "running_loss", "metrics", "stopped")}
            kept["first_loss"] = state["first_loss"]
            kept |= self.rule.state() | {"train_seconds": seconds}
            kept["phase_seconds"] = {**self.phases}
            self.training.save(out, self.schedule, kept)
        return bool(state["stopped"])

    def _evaluate(self, grad_norm: float | torch.Tensor, bar: tqdm, last: bool) -> None:
        """Evaluate, read the stop rule and log the record; the clock stops meanwhile. The
        train accuracy, which no rule reads, is scored at the run's last evaluation only: at
        its budget's end, or where its stop rule ends it."""
        state, metric = self.progress, self.training.spec.metric
        state["train_seconds"] += time.perf_counter() - self.start
        evaluating = time.perf_counter()
        state["metrics"] = metrics = self.training.evaluate(training_rows=last)
        state["stopped"] = self.rule.update(
            state["step"], metrics.get(STOP_METRIC, metrics[metric])
        )
        if state["stopped"] and not last:
            metrics |= self.training.train_accuracy()
        self.phases["evaluation"] += time.perf_counter() - evaluating
        record = {"step": state["step"], "lr": self.schedule.get_last_lr()[0]}
        record |= {"train_loss": state["running_loss"]} | metrics
        record |= {"train_seconds": state["train_seconds"], "grad_norm": float(grad_norm)}
        seconds = max(state["train_seconds"], 1e-9)
        record["tokens_per_second"] = self.training.tokens(state["step"]) / seconds
        self.writer.log(record)
        split = "val" if self.training.on_validation else "test"
        bar.set_postfix({"loss": f"{state['running_loss']:.3f}", split: f"{metrics[metric]:.3f}"})
        self.start = time.perf_counter()


def keep_vocabulary(spec: TaskSpec, config: RunConfig, out: Path | None) -> None:
    """Save how the task's text maps to ids into the run directory, for a task that reads text
    (``mixit generate --prompt TEXT``)."""
    vocabulary = spec.vocabulary(config.task) if spec.vocabulary and out is not None else None
    if vocabulary is not None:
        save_vocabulary(out, vocabulary)


# A run whose running training loss (``smoothed``, about 20 steps) passes this many times its
# first one (at least 1 nat) has blown up, finite or not: it stops as a diverged run (exit 1),
# never read as a model that falls short. Training drives a loss down; a hundredfold rise over
# 20 steps is no schedule's warm-up (train.lr=100 on tiny retrieval: about 4 -> 71,196 by
# step 10).
BLOWN_UP = 100.0


def smoothed(running: float, value: float) -> float:
    """The running training loss: an exponential moving average over about 20 steps."""
    return 0.95 * running + 0.05 * value


def _restore(training: Training, out: Path | None) -> tuple[Any, RunProgress]:
    """The learning-rate schedule and the progress so far: from the last checkpoint in ``out``
    where there is one, from step 0 otherwise."""
    optimizer, config = training.optimizer, training.config
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, config))
    progress = {"step": 0, "running_loss": None, "train_seconds": 0.0, "metrics": {}}
    if out is not None and RunDir(out, config).checkpoint() is not None:
        restored = (training.model, optimizer, schedule, training.batches)
        progress = load_checkpoint(out, *restored, steps=config.train.steps)
    return schedule, progress


def run_summary(
    training: Training,
    steps_run: int,
    stopped: str,
    train_seconds: float,
    metrics: Mapping[str, float],
) -> RunSummary:
    """``summary.json``: the contract's keys, how far the run trained and why it stopped, and
    the task's chance level beside its metrics."""
    config, model, data = training.config, training.model, training.data
    return {
        "task": config.task_name,
        "model": config.variant,
        "seed": config.seed,
        "preset": config.preset,
        "steps": config.train.steps,
        "steps_run": steps_run,
        "stopped": stopped,
        "lr": config.train.lr,
        "params_total": sum(p.numel() for p in model.parameters()),
        "params_trainable": sum(p.numel() for p in model.trainable_parameters()),
        "train_seconds": train_seconds,
        "device": str(training.device),
        "tokens_per_second": training.tokens(steps_run) / train_seconds,
        "metrics": dict(metrics),
        "chance": training.spec.chance(data, config.task),
    }


def train(
    task: str,
    model: str,
    preset: str = "tiny",
    seed: int = 0,
    out: str | Path | None = None,
    overrides: Settings | None = None,
    *,
    progress: bool | None = None,
    resume: bool = False,
    overwrite: bool = False,
) -> RunSummary:
    """Train one model on one task; returns the summary (also written to ``out/summary.json``).

    ``resume=True`` continues ``out`` from its last checkpoint (``train.checkpoint_every``) and
    returns a finished run as it is. Without it, a folder holding a finished run, or a run of
    another config, is refused unless ``overwrite=True``.
    """
    config = resolve_config(task, model, preset, seed, overrides)
    check_runnable_here(config)
    folder = Path(out) if out is not None else None
    if folder is not None and not (resume or overwrite):
        RunDir(folder, config).refuse_overwrite()
    return run(config, folder, progress, resume)
