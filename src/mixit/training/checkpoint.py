"""Checkpoints that resume exactly, and loading that refuses anything it cannot trust.

A checkpoint is the folder ``RUN_DIR/checkpoint/``: ``model.safetensors`` (weights and fixed
buffers) and ``state.pt`` (optimizer, schedule, the batch sampler's RNG state, the step, the
running loss, the metrics so far), loaded with ``torch.load(weights_only=True)`` so a pickle
cannot run code. A new checkpoint is written to a temporary folder and swapped in by renames;
the previous one stays as ``checkpoint.old`` until the swap is done, so a kill at any moment
leaves one complete checkpoint.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, TypedDict

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from mixit.common.errors import UsageError
from mixit.common.io import follow_umask, write_atomic
from mixit.models.build import RunModel

CHECKPOINT, PREVIOUS = "checkpoint", "checkpoint.old"


class RunProgress(TypedDict, total=False):
    """How far a run is, as its checkpoint keeps it: the steps done, the running training
    loss, the training seconds so far, its last evaluation, why it stopped (None: it goes on)
    and its stop rule's state (``best`` score, evaluations since it improved: ``stale``, and
    the (step, value) pairs a plateau is read over: ``history``)."""

    step: int
    running_loss: float | None
    train_seconds: float
    metrics: dict[str, float]
    stopped: str | None
    best: float | None
    stale: int
    history: list[tuple[int, float]]
    # The running loss after the first step, which ``BLOWN_UP`` times over stops the run.
    first_loss: float
    # The seconds outside its steps so far (rundir.PhaseSeconds; absent before 2026-12-07).
    phase_seconds: dict[str, float]


def weights_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor of the state dict under its own name, on the CPU. safetensors refuses two
    names on one storage, so a tied tensor (GPT-2's output head is its token embedding) is
    stored twice."""
    state, stored = {}, set()
    for name, tensor in model.state_dict().items():
        tensor = tensor.detach().contiguous().cpu()
        if tensor.untyped_storage().data_ptr() in stored:
            tensor = tensor.clone()
        stored.add(tensor.untyped_storage().data_ptr())
        state[name] = tensor
    return state


def save_weights(model: torch.nn.Module, path: Path) -> None:
    write_atomic(path, lambda tmp: _save_tensors(weights_state(model), tmp))


def _save_tensors(state: dict[str, torch.Tensor], path: Path) -> None:
    """safetensors' ``save_file``, its I/O failures (a full disk, a file-size limit) raised as
    the OSError they are rather than its own error type."""
    try:
        save_file(state, str(path))
    except SafetensorError as error:
        raise OSError(str(error).splitlines()[0]) from None


def load_weights(model: RunModel, path: Path) -> None:
    """Load a safetensors file into ``model``; refuse (one line, exit 2) a damaged file or one
    whose tensors are not exactly the model's (another variant, another shape)."""
    try:
        path.open("rb").close()  # safetensors calls a file it may not read "No such file"
    except OSError as error:
        raise UsageError(f"cannot read weights {path}: {error.strerror}") from None
    try:
        state = load_file(str(path))
    except Exception as error:  # safetensors raises several types for a bad file
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(f"cannot read weights {path}: {first}") from None
    expected = model.state_dict()
    missing, unexpected = expected.keys() - state.keys(), state.keys() - expected.keys()
    if missing or unexpected:
        name = sorted(missing or unexpected)[0]
        what = "lacks" if missing else "has an unexpected"
        raise UsageError(f"weights {path} {what} tensor '{name}': not a run of this model")
    for name, tensor in state.items():
        if tensor.shape != expected[name].shape:
            raise UsageError(
                f"weights {path}: tensor '{name}' has shape {tuple(tensor.shape)}, "
                f"the model expects {tuple(expected[name].shape)}"
            )
    model.load_state_dict(state)


def latest_checkpoint(out: Path) -> Path | None:
    """The complete checkpoint folder of a run directory, if any."""
    for name in (CHECKPOINT, PREVIOUS):
        folder = out / name
        if (folder / "state.pt").is_file() and (folder / "model.safetensors").is_file():
            return folder
    return None


def save_checkpoint(
    out: Path,
    model: RunModel,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    batches: torch.Generator,
    progress: RunProgress,
) -> None:
    """Write a complete checkpoint beside the current one, then swap it in; a write that fails
    (a full disk) removes its partial copy, keeps the last complete one and is one line."""
    tmp = out / f".{CHECKPOINT}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    state = {
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "batches": batches.get_state(),
        "torch_rng": torch.get_rng_state(),
        "progress": json.dumps(progress),  # plain numbers and dicts
    }
    try:
        tmp.mkdir(parents=True)
        _save_tensors(weights_state(model), tmp / "model.safetensors")
        follow_umask(tmp / "model.safetensors")
        torch.save(state, tmp / "state.pt")
    except (OSError, RuntimeError) as error:  # torch.save reports a full disk as RuntimeError
        shutil.rmtree(tmp, ignore_errors=True)
        reason = getattr(error, "strerror", None) or str(error).splitlines()[0][:120]
        kept = (
            "the last complete one is kept (--resume continues from it)"
            if (out / CHECKPOINT).is_dir()
            else "no earlier one was written, so the run starts again from step 0"
        )
        raise UsageError(f"cannot write a checkpoint in {out}: {reason}; {kept}") from None
    current, previous = out / CHECKPOINT, out / PREVIOUS
    if current.exists():
        shutil.rmtree(previous, ignore_errors=True)
        current.rename(previous)
    tmp.rename(current)
    shutil.rmtree(previous, ignore_errors=True)


def load_checkpoint(
    out: Path,
    model: RunModel,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    batches: torch.Generator,
    steps: int | None = None,
) -> RunProgress:
    """Restore everything ``save_checkpoint`` saved; returns the run's progress. A checkpoint
    past ``steps`` (the run's ``train.steps``) is not one of this run's."""
    folder = latest_checkpoint(out)
    if folder is None:
        raise UsageError(f"{out} has no checkpoint to resume from")
    load_weights(model, folder / "model.safetensors")
    try:
        state = torch.load(folder / "state.pt", weights_only=True)
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        batches.set_state(state["batches"])
        torch.set_rng_state(state["torch_rng"])
        progress = json.loads(state["progress"])
        _check_progress(progress, steps)
        return progress
    except Exception as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(f"cannot resume from {folder / 'state.pt'}: {first[:200]}") from None


def _check_progress(progress: Any, steps: int | None) -> None:
    """A checkpoint's progress holds a step count (at most ``steps``), seconds and metrics of
    the right types."""
    if not isinstance(progress, dict):
        raise ValueError("its progress record is damaged")
    numbers = (progress.get("running_loss", 0.0), progress.get("train_seconds"))
    if not (
        isinstance(progress.get("step"), int)
        and progress["step"] >= 0
        and all(v is None or isinstance(v, int | float) for v in numbers)
        and isinstance(progress.get("metrics"), dict)
    ):
        raise ValueError("its progress record is damaged")
    if steps is not None and progress["step"] > steps:
        raise ValueError(f"its step {progress['step']} is past train.steps={steps}")


# The files and folders a run directory holds for itself: none may lead out of it.
