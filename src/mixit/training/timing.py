"""What a run would cost on this machine, measured by timing a few of its steps."""

from __future__ import annotations

import math
import time

from mixit.config.schema import RunConfig
from mixit.cost.predict import Timing
from mixit.training.resolve import stored_config
from mixit.training.setup import setup


def time_training(
    config: RunConfig, steps: int = 5, warmup: int = 1, budget_seconds: float = 10.0
) -> Timing:
    """What a run would cost on this machine, measured without training it.

    Seconds to build the run's data, per training step (the mean over up to ``steps`` steps
    after ``warmup`` untimed ones, fewer once ``budget_seconds`` have passed, at least one) and
    per evaluation, and the estimate for the whole run from them.
    """
    config = stored_config(config.to_dict())
    started = time.perf_counter()
    data = config.task_spec.make_data(config.task, config.seed)
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
    training.evaluate(training_rows=False)  # as every evaluation but the last runs
    eval_seconds = time.perf_counter() - started
    started = time.perf_counter()
    training.train_accuracy()  # the last evaluation's pass over the training rows
    last_pass_seconds = time.perf_counter() - started
    evaluations = math.ceil(config.train.steps / config.train.eval_every)
    return {
        "data_seconds": data_seconds,
        "step_seconds": step_seconds,
        "eval_seconds": eval_seconds,
        "last_pass_seconds": last_pass_seconds,
        "run_seconds": data_seconds
        + config.train.steps * step_seconds
        + evaluations * eval_seconds
        + last_pass_seconds,
    }
