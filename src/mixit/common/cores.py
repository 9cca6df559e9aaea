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
    stat, cores = Path("/proc/stat"), os.sched_getaffinity(0)  # the usable cores' numbers
    if not stat.is_file():
        return None

    def busy() -> float:
        ticks = 0
        for line in stat.read_text().splitlines():
            name, *fields = line.split()
            if name[3:].isdigit() and name.startswith("cpu") and int(name[3:]) in cores:
                values = [int(v) for v in fields[:8]]  # user .. steal
                ticks += sum(values) - values[3] - values[4]  # less idle and iowait
        return ticks / os.sysconf("SC_CLK_TCK") - time.process_time()

    before = busy()
    time.sleep(interval)
    return max(0.0, (busy() - before) / interval)


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
