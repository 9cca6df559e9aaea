"""What a run trains with, built in one order for a run and for its timing: its data (a
tuning trial's validation rows and the stop rule's rows held out), the model fitted to the data
on its device, the optimiser, the module that runs the forward pass and the batch generator."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from mixit.config.schema import RunConfig
from mixit.models.build import RunModel, build_model
from mixit.models.heads import tracked_scores
from mixit.models.readout import BottleneckReadout
from mixit.tasks import TaskData
from mixit.tasks.base import TaskSpec, next_token_targets
from mixit.tasks.splits import held_out_splits
from mixit.training.checkpoint import RunProgress, save_checkpoint
from mixit.training.devices import present_device
from mixit.training.distributed import ALONE, Ranks
from mixit.training.resolve import fit_model_to_data
from mixit.training.scoring import evaluate_run, train_accuracy
from mixit.training.step import (
    compiled,
    make_optimizer,
    mixed_precision,
    sample_batch,
    train_step,
    use_tensor_cores,
)
from mixit.training.stopping import STOP_METRIC


@dataclass
class Training:
    """What a run trains with, built by ``setup`` in one order for a run and for its timing:
    the data, the model on its device, the optimizer, the module that runs the forward pass
    (the model, or its DDP or compiled wrapper) and the batch generator."""

    config: RunConfig
    spec: TaskSpec
    data: TaskData
    model: RunModel
    trained: torch.nn.Module
    optimizer: torch.optim.AdamW
    batches: torch.Generator
    device: torch.device
    ranks: Ranks
    inputs: torch.Tensor  # (N, T) the training split, on the device
    targets: torch.Tensor  # (N, T)
    # The training rows held out for the stop rule (train.stop_validation_fraction); None:
    # the rule, if any, reads the run's own evaluation (a validation run's).
    stop_split: TaskData | None = None

    @property
    def stop_rule_off(self) -> bool:
        """Whether the run has a stop rule with nothing to read: too few training rows to hold
        a stop split out (``hold_out_stop_split``), no validation run, no training-set score."""
        fraction = self.config.train.stop_split_fraction()
        return bool(fraction) and self.stop_split is None and not self.data.test_is_train

    @property
    def on_validation(self) -> bool:
        """Whether the run is evaluated on held-out training rows (``train.validation_fraction``,
        a tuning trial) rather than the test split."""
        return bool(self.config.train.validation_fraction) and not self.data.test_is_train

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The next sampled training batch, this rank's slice of it: (B / world, T) each."""
        return sample_batch(self.inputs, self.targets, self.batches, self.config, self.ranks)

    def step(self) -> tuple[float, float]:
        """One optimiser step on a sampled batch: ``(global mean loss, gradient norm)``."""
        config, ranks = self.config, self.ranks
        inputs, targets = self.batch()
        return train_step(self.trained, self.model, self.optimizer, inputs, targets, config, ranks)

    def evaluate(self, training_rows: bool = True) -> dict[str, float]:
        """The run's metrics and, with a stop split, the headline metric there
        (``STOP_METRIC``), which the stop rule reads instead of the test split's;
        ``training_rows``: the train accuracy too (``evaluate_run``)."""
        with mixed_precision(self.device, self.config):
            metrics = evaluate_run(self.model, self.data, self.config, training_rows)
            if self.stop_split is not None:
                headline = self.spec.metric
                stop = evaluate_run(self.model, self.stop_split, self.config)
                metrics[STOP_METRIC] = stop[headline]
            if self.config.train.track_heads:
                metrics |= tracked_scores(self.model, self.data.test.inputs)
        return metrics

    def train_accuracy(self) -> dict[str, float]:
        """The train accuracy that an evaluation without ``training_rows`` left out."""
        with mixed_precision(self.device, self.config):
            return train_accuracy(self.model, self.data, self.config)

    def save(self, out: Path, schedule: Any, progress: RunProgress) -> None:
        save_checkpoint(out, self.model, self.optimizer, schedule, self.batches, progress)

    def tokens(self, steps: int) -> int:
        """Training tokens seen in ``steps`` steps (padding included)."""
        return steps * self.config.train.batch_size * self.data.train.inputs.shape[1]


def data_parallel(model: RunModel) -> DistributedDataParallel:
    """``model`` under DDP. A bottleneck readout reads its body's features, never the body's
    output head, whose parameters then get no gradient: DDP must be told to expect that."""
    return DistributedDataParallel(
        model, find_unused_parameters=isinstance(model, BottleneckReadout)
    )


def setup(config: RunConfig, data: TaskData, ranks: Ranks = ALONE) -> Training:
    """Hold out the run's splits from the task's ``data``, fit the config to them and build
    everything a training step needs, on this rank's device."""
    ranks.check_batch(config.train.batch_size)
    device = ranks.device(present_device(config.train.device))
    use_tensor_cores(device)
    data, stop_split = held_out_splits(data, config.train)
    trained_on = next_token_targets(data.train) if data.train_on_every_token else data.train.targets
    inputs, targets = data.train.inputs.to(device), trained_on.to(device)
    config = fit_model_to_data(config, data)
    spec = config.task_spec
    model = build_model(config).to(device)
    ranks.check_identical(dict(model.named_buffers()))
    optimizer = make_optimizer(model, config)
    trained = compiled(model if ranks.world == 1 else data_parallel(model), config)
    batches = torch.Generator().manual_seed(config.seed)  # on the CPU: same batches anywhere
    return Training(
        config,
        spec,
        data,
        model,
        trained,
        optimizer,
        batches,
        device,
        ranks,
        inputs,
        targets,
        stop_split,
    )
