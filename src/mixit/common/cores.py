"""The cores this process may use, and whether other processes keep them busy: read before
torch starts its thread pool (this module imports no torch), since OpenMP reads its wait
policy once, when it loads.

Beside another training on the same cores, OpenMP threads that spin at their barriers while a
sibling is descheduled make a step 4x to 29x slower instead of 2x; waiting passively keeps it
near 2x. On a quiet machine spinning is faster (docs/speed.md, "Beside other work"), so the
command line chooses passive waiting only when it finds the cores shared
(``settle_wait_policy``), and never over a policy the user set.
"""

from __future__ import annotations

import os
import time
from collections.abc import MutableMapping
from pathlib import Path

# Other processes' busy cores, on average, from which a machine counts as shared.
SHARED_FROM = 0.25
WAIT_POLICY = "OMP_WAIT_POLICY"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's or ``taskset``'s
    share, not the whole machine's count)."""
    return len(os.sched_getaffinity(0))


def busy_cores_elsewhere(interval: float = 0.5) -> float | None:
    """How many of the cores this process may use (``sched_getaffinity``) other processes kept
    busy over ``interval`` seconds: their busy time in /proc/stat, less this process's own.
    None where there is no /proc/stat (not Linux)."""
    watch = BusyWatch()
    time.sleep(interval)
    return watch.look()


class BusyWatch:
    """Other processes' busy cores (of those this process may use) between one ``look`` and
    the next, from /proc/stat less this process's own CPU time, without waiting: how a
    running training sees its cores become shared, and free again."""

    def __init__(self) -> None:
        self._cores = os.sched_getaffinity(0)  # the usable cores' numbers
        self._last = self._now()

    def _now(self) -> tuple[float, float] | None:
        """(other processes' busy seconds on the usable cores so far, the wall clock)."""
        stat = Path("/proc/stat")
        if not stat.is_file():
            return None
        ticks = 0
        for line in stat.read_text().splitlines():
            name, *fields = line.split()
            if name[3:].isdigit() and name.startswith("cpu") and int(name[3:]) in self._cores:
                values = [int(v) for v in fields[:8]]  # user .. steal
                ticks += sum(values) - values[3] - values[4]  # less idle and iowait
        busy = ticks / os.sysconf("SC_CLK_TCK") - time.process_time()
        return busy, time.perf_counter()

    def look(self) -> float | None:
        """The busy cores elsewhere since the last look (or the start); None where there is
        no /proc/stat (not Linux)."""
        before, self._last = self._last, self._now()
        if before is None or self._last is None or self._last[1] <= before[1]:
            return None
        return max(0.0, (self._last[0] - before[0]) / (self._last[1] - before[1]))


def wait_policy_line(environ: MutableMapping[str, str], busy: float | None) -> str:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` in ``environ`` when other processes keep at least
    ``SHARED_FROM`` of this process's cores busy and the user set no policy, and say so in one
    line; "" (and ``environ`` untouched) otherwise."""
    if WAIT_POLICY in environ or busy is None or busy < SHARED_FROM:
        return ""
    environ[WAIT_POLICY] = "PASSIVE"
    cores = usable_cores()
    return (
        f"mixit: other processes keep about {busy:.1f} of this machine's {cores} cores busy; "
        f"its threads wait passively ({WAIT_POLICY}=PASSIVE; set {WAIT_POLICY} to choose)"
    )


def settle_wait_policy(interval: float = 0.2) -> str:
    """``wait_policy_line`` for this process and the workers it starts, from ``interval``
    seconds of /proc/stat; to be called before torch is imported."""
    if WAIT_POLICY in os.environ or os.environ.get("OMP_NUM_THREADS") == "1":
        return ""  # the user chose, or one thread has no barrier to spin at
    return wait_policy_line(os.environ, busy_cores_elsewhere(interval))
