"""Which accelerator each training process uses. ``gpu_count`` is the one place that asks
torch how many GPUs are visible, so tests fake a GPU machine by replacing it."""

from __future__ import annotations

import torch


def gpu_count() -> int:
    """GPUs visible to this process (``CUDA_VISIBLE_DEVICES`` applies)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def auto_device() -> torch.device:
    """``device=auto``: the current GPU where there is one, else the CPU."""
    return torch.device("cuda" if gpu_count() else "cpu")


def worker_devices(jobs: int) -> list[str | None]:
    """The device of each of ``jobs`` worker processes: worker i on GPU i mod G when G GPUs
    are visible, so no two workers share a GPU unless ``jobs`` > G; None (each run's own
    ``train.device``) on a machine without GPUs."""
    gpus = gpu_count()
    return [f"cuda:{i % gpus}" if gpus else None for i in range(jobs)]


def sharing_note(jobs: int) -> str:
    """A line for a pool of ``jobs`` workers that must share GPUs; "" when none does."""
    gpus = gpu_count()
    if not gpus or jobs <= gpus:
        return ""
    return (
        f"--jobs {jobs} on {gpus} visible GPU{'s' * (gpus != 1)}: up to {-(-jobs // gpus)} "
        "runs share a GPU's memory and time"
    )
