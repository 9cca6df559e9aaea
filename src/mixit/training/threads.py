"""A CPU run's threads while it trains: every thread it was given while its cores are its own,
one while other processes keep them busy. OpenMP threads spin at their barriers while a
sibling is descheduled, so two trainings that share cores each slow the other many times over
(16x for two tiny trainings started together, docs/speed.md, "Both processes timed"); a single
thread has no barrier to spin at. The count moves no number: a step gives the same bits on one
thread as on several (tested)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from mixit.common.cores import SHARED_FROM, BusyWatch

# Seconds of wall time between looks at the cores: often enough to follow a training that
# starts or ends beside this one; a look is one read of /proc/stat.
LOOK_EVERY = 2.0


@dataclass
class ThreadShare:
    """The threads of one run on ``given`` threads: ``tick`` after each step looks at the
    cores every ``LOOK_EVERY`` seconds and sets one thread while other processes keep at least
    ``SHARED_FROM`` of a core busy, ``given`` again once they stop; ``changes`` counts the
    switches. A run on a GPU, or on one thread, never looks (``watch`` None)."""

    given: int
    watch: BusyWatch | None
    next_look: float = 0.0
    changes: int = 0

    @classmethod
    def on(cls, device: torch.device) -> ThreadShare:
        given = torch.get_num_threads()
        watch = BusyWatch() if device.type == "cpu" and given > 1 else None
        return cls(given, watch, time.perf_counter() + LOOK_EVERY)

    def tick(self) -> None:
        if self.watch is None or time.perf_counter() < self.next_look:
            return
        self.next_look = time.perf_counter() + LOOK_EVERY
        busy = self.watch.look()
        wanted = 1 if busy is not None and busy >= SHARED_FROM else self.given
        if wanted != torch.get_num_threads():
            torch.set_num_threads(wanted)
            self.changes += 1

    def restore(self) -> None:
        """The threads given, for whatever this process trains next."""
        if self.watch is not None:
            torch.set_num_threads(self.given)

    def __enter__(self) -> ThreadShare:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()
