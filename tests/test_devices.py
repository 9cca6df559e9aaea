"""One GPU per worker: tested on CPU by faking the GPU count where mixit reads it."""

import sys
import time

import pytest

from mixit import devices, runs
from mixit.resolve import resolve_config


def slow_pinned_device():
    time.sleep(0.5)  # keeps its worker busy, so that the other worker takes the next call
    return runs.pinned_device()


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
    assert devices.worker_devices(jobs) == expected
    shared = devices.sharing_note(jobs)
    assert bool(shared) == (gpus > 0 and jobs > gpus)


def test_sharing_a_gpu_is_said(monkeypatch, capsys):
    monkeypatch.setattr(devices, "gpu_count", lambda: 2)
    pool = runs.worker_pool(3)
    pool.shutdown()
    assert "--jobs 3 on 2 visible GPUs: up to 2 runs share" in capsys.readouterr().err


@pytest.mark.processes
def test_each_pool_worker_keeps_its_own_gpu(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 2)
    pool = runs.worker_pool(2)
    try:
        pinned = [pool.submit(slow_pinned_device) for _ in range(4)]
        assert sorted(future.result() for future in pinned) == ["cuda:0"] * 2 + ["cuda:1"] * 2
    finally:
        pool.shutdown()


def test_a_pinned_worker_trains_auto_runs_on_its_gpu_and_leaves_others(monkeypatch):
    trained = []
    monkeypatch.setattr(sys.modules["mixit.train"], "run", lambda c, *a, **k: trained.append(c))
    monkeypatch.setattr(runs, "_PINNED", "cuda:1")
    auto = resolve_config("addition", "standard")
    chosen = resolve_config("addition", "standard", overrides={"train.device": "cpu"})
    for config in (auto, chosen):
        runs._train_in_worker(config.to_dict(), "unused", 1)
    assert [c.train.device for c in trained] == ["cuda:1", "cpu"]
    assert runs.run_dir_name(trained[0]) == runs.run_dir_name(auto)  # same run, same folder


def test_auto_is_the_cpu_without_gpus(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 0)
    assert devices.auto_device().type == "cpu"
    monkeypatch.setattr(devices, "gpu_count", lambda: 1)
    assert devices.auto_device().type == "cuda"
