"""Where the runs of a plan train: in local worker processes (``local``, ``mixit.running.runs``), or
as one submitit job array, on SLURM (``slurm``) or as processes of this machine that outlive the
command (``submitit-local``, which runs the whole cluster path without a cluster).

A submitted run writes its run directory under ``OUT/runs`` like a local one, so the runs a
job array finishes are read back by the next call as any finished run is. ``OUT/slurm/jobs.json``
names the job of every submitted run: a later call waits for those still in flight instead of
submitting them again, and reports those whose job ended without a summary, with their logs.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import JSONObject, make_dir, write_json
from mixit.training.devices import check_ranks_fit, gpu_count

LAUNCHERS = ("local", "slurm", "submitit-local")
SUBMITIT_CLUSTER = {"slurm": "slurm", "submitit-local": "local"}
# A job's time limit unless --slurm-option timeout_min=... says otherwise: a day, as sweep's.
TIMEOUT_MINUTES = 24 * 60
JOBS_FILE = "jobs.json"
POLL_SECONDS = 5.0


@dataclass(frozen=True)
class Launch:
    """How a command trains its missing runs: ``launcher`` (one of ``LAUNCHERS``; ``local``
    uses a pool of ``jobs`` worker processes, ``--jobs``), whether it waits for submitted runs,
    and submitit's parameters for the job array (``--slurm-option``), and how many processes
    (one GPU each where there are GPUs) train each run locally through torchrun
    (``--gpus-per-run``)."""

    launcher: str = "local"
    wait: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)
    gpus_per_run: int = 1
    jobs: int = 1
    # Runs that share a variant and every shape train as members of one batched model
    # (``mixit.training.members``), locally; --members auto turns this on on CUDA.
    members: bool = False

    def __post_init__(self) -> None:
        for name in ("jobs", "gpus_per_run"):  # the API's callers too, not only the CLI's
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise UsageError(
                    f"Launch({name}={getattr(self, name)!r}): must be a whole number >= 1"
                )

    @property
    def submits(self) -> bool:
        return self.launcher != "local"


# Train here, one run at a time: what a command does without launch options.
LOCAL = Launch()


def check_launcher(name: str) -> None:
    """Fail in one line, before anything is written, on an unknown launcher or a missing
    submitit."""
    if name not in LAUNCHERS:
        raise UsageError(f"--launcher '{name}' is not one of: {', '.join(LAUNCHERS)}")
    if name != "local":
        try:
            import submitit  # noqa: F401
        except ImportError:
            raise UsageError(
                f"--launcher {name} needs submitit: pip install 'mixit[cluster]'"
            ) from None
    if name == "slurm" and shutil.which("srun") is None:
        raise UsageError(
            "--launcher slurm submits through Slurm, and this machine has no srun on its PATH; "
            "run it on the cluster's login node, or use --launcher local or submitit-local"
        )


def checked_launch(
    launcher: str,
    *,
    wait: bool = True,
    slurm_options: Sequence[str] = (),
    gpus_per_run: int = 1,
    jobs: int = 1,
    members: str = "auto",
) -> Launch:
    """The ``Launch`` that the launch options ask for, checked before anything is planned or
    written: the launcher and its submitit parameters (``--slurm-option KEY=VALUE``), torchrun
    groups only locally and only as many GPUs as are here, and ``members`` (``--members``
    on / off / auto: on where CUDA is) only where members can train, locally with one device a
    group."""
    if launcher == "local" and (not wait or slurm_options):
        raise UsageError("--no-wait and --slurm-option need --launcher slurm or submitit-local")
    if gpus_per_run > 1 and launcher != "local":
        raise UsageError(
            "--gpus-per-run > 1 trains with local torchrun groups; on SLURM give each job its "
            "GPUs with --slurm-option gpus_per_node=K and train one run per job"
        )
    options = parse_options(slurm_options)
    check_launcher(launcher)
    local = launcher == "local" and gpus_per_run == 1
    if members == "on" and not local:
        raise UsageError(
            "--members on trains locally with one device per group: "
            "use --launcher local and --gpus-per-run 1, or --members off"
        )
    if launcher == "local":
        check_ranks_fit(gpus_per_run, option="--gpus-per-run")
    batched = local and (members == "on" or (members == "auto" and gpu_count() > 0))
    return Launch(launcher, wait, options, gpus_per_run, jobs, batched)


def parse_options(items: Sequence[str]) -> dict[str, Any]:
    """``["slurm_partition=gpu", "gpus_per_node=1"]`` -> submitit's parameters (numbers as
    numbers)."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--slurm-option '{item}' is not KEY=VALUE (submitit's parameters, e.g. "
                "slurm_partition=gpu, gpus_per_node=1, timeout_min=600)"
            )
        options[key.strip()] = _number_or_text(text.strip())
    return options


def _number_or_text(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def executor(launcher: str, folder: Path, options: Mapping[str, Any] | None = None) -> Any:
    """A submitit executor writing its logs under ``folder``: a day's time limit unless
    ``options`` (submitit's parameters) say otherwise."""
    import submitit

    check_launcher(launcher)
    chosen = submitit.AutoExecutor(folder=str(folder), cluster=SUBMITIT_CLUSTER[launcher])
    chosen.update_parameters(**{"timeout_min": TIMEOUT_MINUTES, **(options or {})})
    return chosen


def _in_flight(record: Mapping[str, Any], folder: Path) -> bool:
    """Whether a recorded job may still finish its run."""
    if record["launcher"] == "submitit-local":
        return _local_job_alive(record["job_id"], folder)
    import submitit

    state = submitit.SlurmJob(folder=str(folder), job_id=record["job_id"]).state
    return state in ("PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "UNKNOWN")


def _local_job_alive(job_id: str, folder: Path) -> bool:
    """A submitit-local job is its process: alive while that pid runs submitit and has not
    written its result (an ended child of this process lingers as a zombie; a pid may since
    belong to another program)."""
    if (folder / f"{job_id}_0_result.pkl").exists():
        return False
    if not Path("/proc").is_dir():  # no process table to read: whether the pid exists
        try:
            os.kill(int(job_id), 0)
        except (OSError, ValueError):
            return False
        return True
    try:
        status = Path(f"/proc/{job_id}/stat").read_text()
        command = Path(f"/proc/{job_id}/cmdline").read_bytes()
    except OSError:
        return False
    state = status.rsplit(")", 1)[-1].split()[0]  # the field after the command name
    return state not in ("Z", "X") and b"submitit" in command


def _log_paths(record: Mapping[str, Any], folder: Path) -> str:
    import submitit

    job = submitit.SlurmJob(folder=str(folder), job_id=record["job_id"])
    return f"{job.paths.stderr} (and {job.paths.stdout.name})"


class JobArray:
    """The submitted runs of one output folder (``OUT/slurm``) and their jobs."""

    def __init__(self, folder: Path, launcher: str, options: Mapping[str, Any]) -> None:
        self.folder, self.launcher, self.options = folder, launcher, dict(options)
        try:
            self.jobs: dict[str, JSONObject] = json.loads((folder / JOBS_FILE).read_text())
        except (OSError, ValueError):
            self.jobs = {}

    def split(self, names: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
        """The unfinished runs ``names``: in flight (left to their jobs), failed (their job
        ended without a summary) and never submitted."""
        flying, failed, fresh = [], [], []
        for name in names:
            record = self.jobs.get(name)
            if record is None:
                fresh.append(name)
            elif _in_flight(record, self.folder):
                flying.append(name)
            else:
                failed.append(name)
        return flying, failed, fresh

    def failure_lines(self, names: Sequence[str]) -> list[str]:
        return [
            f"run {name} (job {self.jobs[name]['job_id']}) ended without a summary; its log: "
            f"{_log_paths(self.jobs[name], self.folder)}"
            for name in names
        ]

    def submit(
        self, work: Callable[..., Any], arguments: Mapping[str, Sequence[Any]]
    ) -> dict[str, Any]:
        """Submit ``work(*arguments[name])`` for every run name as one job array; returns the
        jobs by name, recorded in ``jobs.json`` before this returns."""
        names = list(arguments)
        if not names:
            return {}
        columns = list(zip(*(arguments[name] for name in names), strict=True))
        jobs = executor(self.launcher, make_dir(self.folder), self.options).map_array(
            work, *columns
        )
        submitted = dict(zip(names, jobs, strict=True))
        for name, job in submitted.items():
            self.jobs[name] = {"job_id": str(job.job_id), "launcher": self.launcher}
        write_json(self.folder / JOBS_FILE, self.jobs)
        return submitted

    def _running(self, name: str, jobs: Mapping[str, Any]) -> bool:
        if name in jobs:
            return not jobs[name].done()
        return _in_flight(self.jobs[name], self.folder)

    def wait(self, names: Sequence[str], jobs: Mapping[str, Any]) -> None:
        """Until no run of ``names`` is in flight: ``jobs`` are those this call submitted,
        the others are followed through their recorded job."""
        pending = list(names)
        while pending:
            pending = [name for name in pending if self._running(name, jobs)]
            if pending:
                time.sleep(POLL_SECONDS)
