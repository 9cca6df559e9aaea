"""Local worker processes (``reproduce --jobs``, ``sweep --workers``) that end with the
process that started them, so a killed or interrupted command leaves nothing training."""

from __future__ import annotations

import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal a process gets when its parent dies


def start_worker(parent_pid: int) -> None:
    """Call first thing in a worker: it ends with its parent (``exit_with_parent``) and
    ignores Ctrl-C, which reaches the whole process group; the parent alone decides what an
    interrupt stops."""
    exit_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # tqdm would otherwise make a named multiprocessing semaphore for its bars (a worker shows
    # none), which a worker ended by its parent leaves behind and Python then warns about.
    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


def exit_with_parent(parent_pid: int) -> None:
    """Call first thing in a worker. On Linux the kernel signals the worker when its parent
    dies (``prctl(PR_SET_PDEATHSIG)``); a parent that died before this call is caught by the
    pid check."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:
        os._exit(1)
