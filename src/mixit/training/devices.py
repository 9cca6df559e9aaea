"""Which accelerator each training process uses. ``gpu_count`` is the one place that asks
torch how many GPUs are visible, so tests fake a GPU machine by replacing it."""

from __future__ import annotations

import torch

from mixit.common.errors import UsageError


def gpu_count() -> int:
    """GPUs visible to this process (``CUDA_VISIBLE_DEVICES`` applies)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def auto_device() -> torch.device:
    """``device=auto``: the current GPU where there is one, else the CPU."""
    return torch.device("cuda" if gpu_count() else "cpu")


def present_device(name: str) -> torch.device:
    """The device ``train.device`` names, checked against what this machine has: ``auto`` is
    the GPU where there is one; a device that is not here is refused in one line, before any
    model or file is made."""
    if name == "auto":
        return auto_device()
    device = torch.device(name)
    gpus = gpu_count()
    if device.type == "cuda" and (not gpus or (device.index or 0) >= gpus):
        seen = f"{gpus} GPU{'s are' if gpus != 1 else ' is'} visible"
        usable = f"cuda:0 .. cuda:{gpus - 1}, " if gpus else ""
        raise UsageError(
            f"train.device={name} is not on this machine ({seen}); use {usable}cpu or auto"
        )
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise UsageError(f"train.device={name}: this machine has no MPS device; use cpu or auto")
    if device.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"train.device={name} is not supported; use auto, cpu, cuda or cuda:N")
    return device


def check_ranks_fit(ranks: int, device: str = "auto", option: str = "--nproc") -> None:
    """A data-parallel run of ``ranks`` processes on CUDA gives each its own GPU (NCCL refuses
    two ranks on one), so it needs that many visible GPUs. ``device`` is the run's
    ``train.device``: on the CPU (``auto`` on a machine without GPUs) any number of processes
    share the cores."""
    gpus = gpu_count()
    kind = auto_device().type if device == "auto" else torch.device(device).type
    if ranks > 1 and kind == "cuda" and ranks > gpus:
        fewer = f"use at most {gpus}, or " if gpus else "use "
        raise UsageError(
            f"{option} {ranks} trains one process per GPU, and {gpus} GPU"
            f"{'s are' if gpus != 1 else ' is'} visible: {fewer}train.device=cpu for "
            "processes that share the CPU"
        )
