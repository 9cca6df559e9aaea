"""Writing a run directory as training goes: config, metrics, TensorBoard, W&B, summary.

``metrics.jsonl`` holds one JSON object per evaluation; the same numbers go to TensorBoard
event files in ``RUN_DIR/tensorboard`` (when the ``tensorboard`` package is installed and
``train.tensorboard`` is true) and to Weights & Biases when ``train.wandb=PROJECT``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import DirLock, append_line, write_json, write_text
from mixit.config.schema import RunConfig
from mixit.cost.memory import check_loads
from mixit.models.build import RunModel, build_model
from mixit.models.decoder import Decoder
from mixit.models.readout import AnswerReadout
from mixit.tasks import get_task
from mixit.training.checkpoint import load_weights, save_weights
from mixit.training.resolve import mixer_of, stored_config, validate

_told_no_tensorboard = False


def new_model(config: RunConfig) -> RunModel:
    """The run's model from its seed, with the readout of the task its config names."""
    return build_model(config, get_task(config.task_name))


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


def read_records(path: Path) -> list[dict[str, Any]]:
    """The evaluations in ``metrics.jsonl``, skipping a line a crash or a full disk left torn
    (it is appended line by line) and any line that is not an object with a step."""
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("step"), int):
            records.append(record)
    return records


# What each metrics.jsonl record holds beside the evaluation (``Training.evaluate``), as
# ``train._train`` logs it.
LOGGED_PROGRESS = ("step", "lr", "train_loss", "train_seconds", "grad_norm", "tokens_per_second")


def evaluation_in(record: Mapping[str, Any]) -> dict[str, Any]:
    """The evaluation a metrics.jsonl ``record`` logged, without the progress beside it."""
    return {key: value for key, value in record.items() if key not in LOGGED_PROGRESS}


class RunWriter:
    """Writes a run directory as training goes; with ``out=None`` it writes nothing.

    ``resume_step`` > 0 keeps the metrics logged up to that step (those after it are written
    again by the resumed run); 0 starts the directory afresh.
    """

    def __init__(self, out: Path | None, config: RunConfig, resume_step: int = 0) -> None:
        self.out, self.tensorboard, self.wandb, self.lock = out, None, None, None
        if out is None:
            return
        self.lock = DirLock(out)
        (out / "summary.json").unlink(missing_ok=True)
        write_json(out / "config.json", config.to_dict())
        metrics = out / "metrics.jsonl"
        kept = []
        if resume_step and metrics.is_file() and not metrics.is_symlink():
            kept = [json.dumps(r) for r in read_records(metrics) if r["step"] <= resume_step]
        write_text(metrics, "".join(line + "\n" for line in kept))
        if config.train.tensorboard:
            self.tensorboard = _tensorboard(out / "tensorboard", resume_step)
        if config.train.wandb:
            self.wandb = _wandb(config.train.wandb, config, out)

    def log(self, record: dict[str, Any]) -> None:
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

    def finish(self, model: RunModel, summary: dict[str, Any]) -> None:
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


def load_run(run_dir: str | Path) -> tuple[Decoder, RunConfig]:
    """Rebuild a finished run directory's model: ``(model in eval mode, config)``."""
    run_dir = Path(run_dir)
    config_path, weights_path = run_dir / "config.json", run_dir / "model.safetensors"
    for path in (config_path, weights_path):
        if not path.is_file():
            raise UsageError(f"{path} does not exist; is {run_dir} a finished run directory?")
    try:
        config = stored_config(json.loads(config_path.read_text()))
    except OSError as error:
        raise UsageError(f"cannot read {config_path}: {error.strerror}") from None
    except (ValueError, UsageError) as error:  # not JSON, or not a run's config
        raise UsageError(f"{config_path} is not a run config that mixit wrote ({error})") from None
    try:
        validate(config)
        if min(config.model.vocab_size, config.model.block_size) < 1:
            raise UsageError("model.vocab_size and model.block_size must be >= 1")
        check_loads(config, mixer_of(config))
    except UsageError as error:
        raise UsageError(f"{config_path}: {error}") from None
    model = new_model(config)
    # A classifier's head is the decoder's own rows: its weights load through the readout.
    decoder = model.body if isinstance(model, AnswerReadout) else model
    if not isinstance(decoder, Decoder):  # generate, export and the analyses read mixit's taps
        raise UsageError(
            f"{run_dir} is not a run of mixit's own decoder with next-token outputs "
            f"(model.arch={config.model.arch}, task {config.task_name}); it cannot be loaded here"
        )
    load_weights(model, weights_path)
    return decoder.eval(), config
