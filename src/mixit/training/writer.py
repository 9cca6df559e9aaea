"""Writing a run directory as training goes: config, metrics, TensorBoard, W&B, summary.

``metrics.jsonl`` holds one JSON object per evaluation; the same numbers go to TensorBoard
event files in ``RUN_DIR/tensorboard`` (when the ``tensorboard`` package is installed and
``train.tensorboard`` is true) and to Weights & Biases when ``train.wandb=PROJECT``. What a
written directory holds is read back through ``mixit.training.rundir.RunDir``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import DirLock, append_line, write_json, write_text
from mixit.config.schema import RunConfig
from mixit.models.build import RunModel
from mixit.training.checkpoint import save_weights
from mixit.training.rundir import Evaluation, RunSummary, read_records

_told_no_tensorboard = False


def _tensorboard(folder: Path, purge_step: int) -> Any:
    global _told_no_tensorboard
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        if not _told_no_tensorboard:
            print("mixit: no TensorBoard logs: pip install tensorboard", file=sys.stderr)
            _told_no_tensorboard = True
        return None
    # purge_step drops events a resumed run writes again.
    return SummaryWriter(log_dir=str(folder), purge_step=purge_step or None)


def _wandb(project: str, config: RunConfig, out: Path) -> Any:
    try:
        import wandb
    except ImportError:
        raise UsageError(
            f"train.wandb={project} needs the wandb package: pip install wandb"
        ) from None
    name = f"{config.task_name}-{config.variant}-s{config.seed}"
    return wandb.init(project=project, name=name, config=config.to_dict(), dir=str(out))


class RunWriter:
    """Writes a run directory as training goes; with ``out=None`` it writes nothing.

    ``resume_step`` > 0 keeps the metrics logged up to that step (those after it are written
    again by the resumed run); 0 starts the directory afresh.
    """

    def __init__(self, out: Path | None, config: RunConfig, resume_step: int = 0) -> None:
        self.out, self.tensorboard, self.wandb, self.lock = out, None, None, None
        if out is None:
            return
        # Read before the lock is taken: a folder another run holds is refused by the lock
        # before anything is written, whatever was read.
        metrics = out / "metrics.jsonl"
        kept = []
        if resume_step and metrics.is_file() and not metrics.is_symlink():
            kept = [json.dumps(r) for r in read_records(metrics) if r["step"] <= resume_step]
        settings = config.to_dict()
        self.lock = DirLock(out)
        (out / "summary.json").unlink(missing_ok=True)
        write_json(out / "config.json", settings)
        write_text(metrics, "".join(line + "\n" for line in kept))
        if config.train.tensorboard:
            self.tensorboard = _tensorboard(out / "tensorboard", resume_step)
        if config.train.wandb:
            self.wandb = _wandb(config.train.wandb, config, out)

    def log(self, record: Evaluation) -> None:
        if self.out is None:
            return
        append_line(self.out / "metrics.jsonl", json.dumps(record))
        numbers = {k: v for k, v in record.items() if k != "step" and isinstance(v, int | float)}
        if self.tensorboard is not None:
            for key, value in numbers.items():
                self.tensorboard.add_scalar(key, value, record["step"])
            self.tensorboard.flush()
        if self.wandb is not None:
            self.wandb.log(numbers, step=record["step"])

    def halt(self) -> None:
        """Close the loggers and free the directory, leaving the run to be resumed."""
        if self.out is None:
            return
        self._close_loggers()
        self.lock.release()

    def finish(self, model: RunModel, summary: RunSummary) -> None:
        """Weights first, summary last: a summary.json means the run is complete."""
        if self.out is None:
            return
        self._close_loggers()
        save_weights(model, self.out / "model.safetensors")
        write_json(self.out / "summary.json", summary)
        self.lock.release()

    def _close_loggers(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()
        if self.wandb is not None:
            self.wandb.finish()
