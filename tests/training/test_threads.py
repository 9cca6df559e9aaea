"""A CPU run's threads follow its cores: one while other processes keep them busy, all it was
given once they are its own again, and the count moves no number."""

import itertools
import os
import sys
import time

import pytest
import torch

from mixit import train
from mixit.common.cores import BusyWatch
from mixit.training import threads
from mixit.training.members import train_group
from mixit.training.resolve import resolve_config
from mixit.training.threads import ThreadShare

# Tiny retrieval's own shapes (n=64, batch 128), whose matmuls and reductions run on several
# threads, cut to a few steps.
SHORT = {"train.steps": 12, "train.eval_every": 6, "train.eval_examples": 256}


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("model", ["standard", "mixit"])
def test_a_run_whose_threads_change_as_it_trains_gives_the_same_numbers(
    model, two_threads, monkeypatch
):
    steady = train("retrieval", model, "tiny", 0, None, SHORT, progress=False)
    # Cores busy at every other look, and a look after every step: 2, 1, 2, 1, ... threads.
    busy = itertools.cycle([2.0, 0.0])
    monkeypatch.setattr(threads, "LOOK_EVERY", 0.0)
    monkeypatch.setattr(BusyWatch, "look", lambda self: next(busy))
    seen = []
    tick = ThreadShare.tick

    def counted(self):
        tick(self)
        seen.append(torch.get_num_threads())

    monkeypatch.setattr(ThreadShare, "tick", counted)
    switching = train("retrieval", model, "tiny", 0, None, SHORT, progress=False)
    assert set(seen) == {1, 2}
    assert switching["metrics"] == steady["metrics"]
    assert torch.get_num_threads() == 2  # the threads given, for whatever trains next


def test_threads_drop_to_one_while_the_cores_are_shared_and_come_back(two_threads):
    looks = iter([0.1, 1.2, 0.9, 0.0])  # quiet, another training, still there, gone
    share = ThreadShare(given=2, watch=BusyWatch(), next_look=0.0)
    share.watch.look = lambda: next(looks)
    counts = []
    for _ in range(4):
        share.next_look = 0.0
        share.tick()
        counts.append(torch.get_num_threads())
    assert counts == [2, 1, 1, 2] and share.changes == 2


def test_a_run_on_one_thread_never_looks(monkeypatch):
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert ThreadShare.on(torch.device("cpu")).watch is None
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    assert ThreadShare.on(torch.device("cpu")).watch is not None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_the_watch_reads_other_processes_busy_cores_without_waiting():
    watch = BusyWatch()
    time.sleep(0.05)
    busy = watch.look()
    assert busy is not None and 0.0 <= busy <= len(os.sched_getaffinity(0)) + 0.5


def test_members_trained_together_follow_the_cores_to_the_same_numbers(
    two_threads, monkeypatch, tmp_path
):
    configs = [resolve_config("retrieval", "mixit", "tiny", seed, SHORT) for seed in (0, 1)]
    steady = train_group(configs, [tmp_path / "steady" / str(i) for i in range(2)])
    busy = itertools.cycle([2.0, 0.0])
    monkeypatch.setattr(threads, "LOOK_EVERY", 0.0)
    monkeypatch.setattr(BusyWatch, "look", lambda self: next(busy))
    set_to, set_threads = [], torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (set_to.append(n), set_threads(n)))
    switching = train_group(configs, [tmp_path / "switching" / str(i) for i in range(2)])
    assert 1 in set_to and 2 in set_to
    assert [s["metrics"] for s in switching] == [s["metrics"] for s in steady]
    assert torch.get_num_threads() == 2
