"""A run directory read back: what it holds of one config (``RunDir``: finished, halted at a
rung, resumable, its checkpoint and its evaluations), and a finished run's model
(``load_run``). Every command asks a run directory these questions here; it is written by
``mixit.training.writer.RunWriter``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from mixit.common.errors import UsageError
from mixit.config.identity import without_execution_settings
from mixit.config.schema import RunConfig
from mixit.cost.memory import check_loads
from mixit.models.build import RunModel, build_model
from mixit.models.decoder import Decoder
from mixit.models.readout import AnswerReadout
from mixit.training.checkpoint import CHECKPOINT, PREVIOUS, latest_checkpoint, load_weights
from mixit.training.resolve import stored_config, validate

# One evaluation as ``metrics.jsonl`` logs it: its step and progress (``LOGGED_PROGRESS``)
# and the task's metrics, every value a number.
Evaluation = dict[str, float]


class PhaseSeconds(TypedDict):
    """A run's seconds outside ``train_seconds`` (its steps, and the checkpoints written
    between them), summed over its stretches of training: building its data, model and
    optimiser (``setup``, again at each resume), and evaluating."""

    setup: float
    evaluation: float


class RunSummary(TypedDict, total=False):
    """``summary.json``, as ``mixit.train`` returns it (docs: the public contract): what ran,
    how far and why it stopped (``halted``: at ``train.halt_at``, no file written), its size,
    time and speed, its evaluation (``metrics``: test_loss and the task's own) beside the
    task's ``chance``, and the split it was scored on; ``run_dir`` where a plan trained it."""

    task: str
    model: str
    seed: int
    preset: str
    steps: int
    steps_run: int
    stopped: str
    lr: float
    params_total: int
    params_trainable: int
    train_seconds: float
    device: str
    tokens_per_second: float
    metrics: dict[str, float]
    chance: float | None
    evaluated_on: str
    run_dir: str
    # The step a reading read its metrics at, where not the last (tuning.rules.summary_at_best).
    read_at: int
    # Where the rest of its time went (runs trained alone since 2026-12-07; issue #102).
    phase_seconds: PhaseSeconds


# The files a run writes, none of which may be a link to another run's.
RUN_FILES = ("config.json", "summary.json", "model.safetensors", "metrics.jsonl", CHECKPOINT)
RUN_FILES += (PREVIOUS,)


@dataclass(frozen=True)
class RunDir:
    """The run directory ``path`` read as a run of ``config``: whether it is that run at all
    (``matches``), finished (``finished``), halted at its ``train.halt_at`` rung (``halted``),
    cut off mid-way (``cut_off``), to be resumed (``resumable``), and its last checkpoint and
    evaluations. A file that is a link to another run's is refused (``UsageError``)."""

    path: Path
    config: RunConfig

    def check_own_files(self) -> None:
        """Refuse to read a run directory whose files are symbolic links: a summary or
        checkpoint linked in from another run would make this run report or resume that one's
        results. (A run trained anew replaces such a link, never follows it.)"""
        for name in RUN_FILES:
            if (self.path / name).is_symlink():
                raise UsageError(
                    f"{self.path / name} is a symbolic link; a run's files must be its own "
                    "(copy the run, or train it again in another folder)"
                )

    def matches(self) -> bool | None:
        """Whether its ``config.json`` is a run of ``config`` (None: no readable config)."""
        try:
            loaded = json.loads((self.path / "config.json").read_text())
        except (OSError, ValueError):  # missing, unreadable, or not UTF-8 JSON
            return None
        sections = ("model", "task", "train")
        if not isinstance(loaded, dict) or not all(
            isinstance(loaded.get(s), dict) for s in sections
        ):
            return None  # not a config mixit wrote
        stored = without_execution_settings(loaded)
        requested = self.config.result_dict()
        for key in ("vocab_size", "block_size"):  # filled in from the data when left at 0
            if requested["model"][key] == 0:
                requested["model"][key] = stored.get("model", {}).get(key, 0)
        return stored == requested

    def finished(self) -> RunSummary | None:
        """The summary of a finished run of exactly ``config``, else None."""
        self.check_own_files()
        summary = self.path / "summary.json"
        if summary.is_file() and self.matches():
            try:
                stored = json.loads(summary.read_text())
            except ValueError:  # damaged (it is written last, by a rename): train it again
                return None
            if isinstance(stored, dict) and isinstance(stored.get("metrics"), dict):
                return stored
        return None

    def halted(self) -> RunSummary | None:
        """What the run returned when it halted at its ``train.halt_at``, read back from its
        evaluation at that step in ``metrics.jsonl`` (a submitted job returns nothing here),
        else None. The evaluation alone suffices: a run kept without its checkpoint
        (``mixit records``) that must go on past the step trains again from step 0, which
        gives the same run."""
        halt_at = self.config.train.halt_at
        if not halt_at or not self.path.is_dir():
            return None
        self.check_own_files()
        if not self.matches() or not (self.path / "metrics.jsonl").is_file():
            return None
        at_halt = [r for r in self.records() if r["step"] == halt_at]
        if not at_halt:
            return None
        record = at_halt[-1]
        progress = {"step": halt_at, "train_seconds": record.get("train_seconds", 0.0)}
        return halted_summary(self.config, progress | {"metrics": evaluation_in(record)})

    def ended(self) -> RunSummary | None:
        """What a plan reuses instead of training the run again: its summary when finished,
        what it returned when halted at its rung; None when it is still to train."""
        return self.finished() or self.halted()

    def cut_off(self) -> bool:
        """Whether it stopped before its end with nothing to show for it: no summary, and not
        halted at its rung (where its evaluation stands for it)."""
        return not (self.path / "summary.json").is_file() and self.halted() is None

    def resumable(self) -> RunSummary | None:
        """The summary if it already finished ``config``, None if it can be resumed (or
        started); a one-line error if it holds a run of another config."""
        self.check_own_files()
        if self.matches() is False:
            raise UsageError(
                f"{self.path} holds a run of another config; use another --out to start anew"
            )
        return self.finished()

    def refuse_overwrite(self) -> None:
        """Refuse to train anew over a finished run, or over a run of another config."""
        if (self.path / "summary.json").exists():
            raise UsageError(
                f"{self.path} holds a finished run; --resume returns it, --overwrite trains "
                "it again"
            )
        if self.matches() is False:
            raise UsageError(
                f"{self.path} holds a run of another config; use another --out, or --overwrite"
            )

    def checkpoint(self) -> Path | None:
        """Its last complete checkpoint folder, if any."""
        return latest_checkpoint(self.path)

    def records(self) -> list[Evaluation]:
        """Its evaluations, as ``read_records`` reads ``metrics.jsonl``."""
        return read_records(self.path / "metrics.jsonl")


def halted_summary(config: RunConfig, progress: Mapping[str, Any]) -> RunSummary:
    """What a run halted at ``train.halt_at`` returns (no summary.json is written): how far
    it trained and its last evaluation."""
    return {
        "task": config.task_name,
        "model": config.variant,
        "seed": config.seed,
        "steps": config.train.steps,
        "steps_run": progress["step"],
        "stopped": "halted",
        "train_seconds": progress["train_seconds"],
        "metrics": dict(progress["metrics"]),
    }


def resumed(out: Path | None, config: RunConfig) -> RunSummary | None:
    """The summary if ``out`` already finished ``config``, None if it can be resumed (or
    started); a one-line error without a folder, or for a folder of another config."""
    if out is None:
        raise UsageError("resuming needs a run directory (--out)")
    return RunDir(out, config).resumable()


def new_model(config: RunConfig) -> RunModel:
    """The run's model from its seed, with the readout of the task its config names."""
    return build_model(config)


def read_records(path: Path) -> list[Evaluation]:
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


def evaluation_in(record: Evaluation) -> dict[str, float]:
    """The evaluation a metrics.jsonl ``record`` logged, without the progress beside it."""
    return {key: value for key, value in record.items() if key not in LOGGED_PROGRESS}


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
        check_loads(config)
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
