"""One GPU per worker: tested on CPU by faking the GPU count where mixit reads it."""

import json
import multiprocessing
import os

import pytest

from mixit.common.errors import UsageError
from mixit.running import runs, workers
from mixit.training import devices
from mixit.training.resolve import resolve_config


def pinned_device_together(barrier):
    """This worker's process and device, once the other worker has one of these calls too: two
    calls at a barrier of two run on two workers, however slowly the workers start."""
    barrier.wait(timeout=60)
    return os.getpid(), workers.pinned_device()


@pytest.mark.parametrize(
    "gpus, jobs, expected",
    [
        (0, 2, [None, None]),
        (1, 1, ["cuda:0"]),
        (2, 2, ["cuda:0", "cuda:1"]),
        (2, 3, ["cuda:0", "cuda:1", "cuda:0"]),
        (8, 4, ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]),
    ],
)
def test_worker_i_trains_on_gpu_i_mod_g(gpus, jobs, expected, monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: gpus)
    assert workers.worker_devices(jobs) == expected
    shared = workers.sharing_note(jobs)
    assert bool(shared) == (gpus > 0 and jobs > gpus)


def test_sharing_a_gpu_is_said(monkeypatch, capsys):
    monkeypatch.setattr(devices, "gpu_count", lambda: 2)
    pool = workers.worker_pool(3)
    pool.shutdown()
    assert (
        "--jobs 3 x 1 GPU(s) per run on 2 visible GPUs: up to 2 runs share"
        in capsys.readouterr().err
    )


@pytest.mark.processes
def test_each_pool_worker_keeps_its_own_gpu(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 2)
    pool = workers.worker_pool(2)
    with multiprocessing.get_context("spawn").Manager() as manager:
        barrier = manager.Barrier(2)
        try:
            seen = {}
            for _ in range(2):  # two rounds: each worker keeps the GPU it was given
                pair = [pool.submit(pinned_device_together, barrier) for _ in range(2)]
                for pid, device in (future.result() for future in pair):
                    assert seen.setdefault(pid, device) == device
            assert sorted(seen.values()) == ["cuda:0", "cuda:1"]
        finally:
            pool.shutdown()


def test_a_pinned_worker_trains_auto_runs_on_its_gpu_and_leaves_others(monkeypatch):
    trained = []
    monkeypatch.setattr(workers, "run", lambda c, *a, **k: trained.append(c))
    monkeypatch.setattr(workers, "_PINNED", (1,))
    auto = resolve_config("addition", "standard")
    chosen = resolve_config("addition", "standard", overrides={"train.device": "cpu"})
    for config in (auto, chosen):
        workers.train_in_worker(config.to_dict(), "unused", 1)
    assert [c.train.device for c in trained] == ["cuda:1", "cpu"]
    assert runs.run_dir_name(trained[0]) == runs.run_dir_name(auto)  # same run, same folder


def test_auto_is_the_cpu_without_gpus(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 0)
    assert devices.auto_device().type == "cpu"
    monkeypatch.setattr(devices, "gpu_count", lambda: 1)
    assert devices.auto_device().type == "cuda"


@pytest.mark.parametrize(
    "gpus, jobs, per_run, expected",
    [
        (0, 2, 2, [(), ()]),
        (4, 2, 2, [(0, 1), (2, 3)]),
        (8, 3, 2, [(0, 1), (2, 3), (4, 5)]),
        (2, 2, 2, [(0, 1), (0, 1)]),
    ],
)
def test_a_run_of_k_gpus_takes_its_workers_k_gpus(gpus, jobs, per_run, expected, monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: gpus)
    assert workers.worker_gpus(jobs, per_run) == expected
    assert bool(workers.sharing_note(jobs, per_run)) == (gpus > 0 and jobs * per_run > gpus)


@pytest.mark.processes
def test_two_processes_per_run_train_what_one_does(tmp_path, cpu_only):
    """``--gpus-per-run 2`` on a machine without GPUs: a torchrun group of two CPU processes
    per run, which trains the single process's run (mixit.training.distributed)."""
    from mixit.cli import main

    quick = ["train.steps=6", "train.eval_every=6", "task.n_train=512", "task.n_test=64"]
    argv = ["compare", "--task", "addition", "--models", "standard", *quick, "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "one")]) == 0
    assert main([*argv, "--out", str(tmp_path / "two"), "--gpus-per-run", "2"]) == 0
    one, two = (
        json.loads((tmp_path / name / "compare.json").read_text())["rows"][0]["values"]
        for name in ("one", "two")
    )
    assert two == pytest.approx(one, abs=1e-5)
    (log,) = (tmp_path / "two" / "runs").glob("*/torchrun.log")
    assert log.is_file()


@pytest.mark.parametrize(
    "gpus, ranks, device, fits",
    [
        (0, 4, "auto", True),  # CPU processes share the cores
        (1, 1, "auto", True),
        (1, 2, "auto", False),  # NCCL refuses two ranks on one GPU
        (1, 2, "cpu", True),
        (2, 2, "auto", True),
        (2, 2, "cuda", True),
        (0, 2, "cuda", False),
    ],
)
def test_a_run_on_gpus_has_one_gpu_per_process(gpus, ranks, device, fits, monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: gpus)
    if fits:
        devices.check_ranks_fit(ranks, device)
    else:
        with pytest.raises(UsageError, match=f"--nproc {ranks} trains one process per GPU"):
            devices.check_ranks_fit(ranks, device)


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--task", "addition", "--model", "standard", "--nproc", "2"],
        ["compare", "--task", "addition", "--models", "standard", "--gpus-per-run", "2"],
    ],
)
def test_more_processes_than_gpus_is_one_line_before_anything_starts(
    argv, monkeypatch, tmp_path, capsys
):
    from mixit.cli import main
    from mixit.cost import memory

    monkeypatch.setattr(devices, "gpu_count", lambda: 1)
    monkeypatch.setattr(memory, "available_bytes", lambda device: 2**40)  # the faked GPU's
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "2 trains one process per GPU, and 1 GPU is visible: use at most 1" in line
    assert not (tmp_path / "out").exists()
