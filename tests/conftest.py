import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest
import torch

from mixit.config.schema import ModelConfig
from mixit.training import devices
from mixit.training.train import RunLoop

# Under pytest-xdist (`make test` runs two workers) each worker trains on one thread, and the
# processes the tests start wait passively: two processes' OpenMP threads spinning on two
# cores slow each other several times over, not two.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1 if WORKERS > 1 else 2)


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Tokenizers and token caches of the tests go to a temporary folder, not ~/.cache: one
    this session's xdist workers share (both caches write under a per-process name, then
    rename), so a BPE that several tests need trains once, not once per worker."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "mixit-cache"
        shared.mkdir(exist_ok=True)
        os.environ["MIXIT_CACHE"] = str(shared)
    else:
        os.environ["MIXIT_CACHE"] = str(tmp_path_factory.mktemp("mixit-cache"))


@pytest.fixture
def cpu_only(monkeypatch):
    """For a test whose meaning is the CPU's (gloo process groups, bytes written on a CPU,
    tolerances below TF32's): no GPU, for this process (where mixit asks) and the processes it
    starts, also on a machine that has one."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(devices, "gpu_count", lambda: 0)


class Steps:
    """Watches every run's training steps in this process: with ``stop`` set, training stops
    (KeyboardInterrupt, as a kill would) on reaching that step index, before its update is
    counted; ``trained`` lists the step indices trained."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stop: int | None = None
        self.trained: list[int] = []
        after_step = RunLoop.after_step

        def watched(loop: RunLoop, step: int, *args: object) -> bool:
            if step == self.stop:
                raise KeyboardInterrupt
            self.trained.append(step)
            return after_step(loop, step, *args)

        monkeypatch.setattr(RunLoop, "after_step", watched)


@pytest.fixture
def steps(monkeypatch) -> Steps:
    return Steps(monkeypatch)


@pytest.fixture
def small_config() -> ModelConfig:
    return ModelConfig(vocab_size=20, block_size=16, n_embd=32, n_head=4, n_layer=2)


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name, or None for no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


@pytest.fixture
def alive():
    """``alive(pid)``: whether a process exists and is not a zombie (Linux /proc)."""

    def is_alive(pid: int) -> bool:
        fields = _stat_fields(pid)
        return fields is not None and fields[0] != "Z"

    return is_alive


@pytest.fixture
def children():
    """``children(pid)``: the pids of a process's living children (Linux /proc)."""

    def of(parent: int) -> list[int]:
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
        stats = {pid: _stat_fields(pid) for pid in pids}
        return [pid for pid, f in stats.items() if f and f[0] != "Z" and int(f[1]) == parent]

    return of


@pytest.fixture
def session():
    """``session(command, **popen)``: start a command in a new session (its own process group)
    and kill that group when the test ends, so a test that fails while it trains leaves no
    workers behind to slow the tests after it."""
    started = []

    def start(command: list[str], **popen) -> subprocess.Popen:
        # SIGINT at its default: a suite started in the background (`cmd &` in a script)
        # inherits it ignored, and the Ctrl-C tests would then wait for nothing.
        default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
        process = subprocess.Popen(
            command, start_new_session=True, preexec_fn=default_sigint, **popen
        )
        started.append(process)
        return process

    yield start
    for process in started:
        with contextlib.suppress(ProcessLookupError):  # the group has already ended
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
