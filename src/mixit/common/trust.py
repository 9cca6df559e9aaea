"""Which user modules mixit may import: code a stored config names runs only when asked.

As Hugging Face's ``trust_remote_code``: a ``module:`` architecture (``model.arch``) or a
custom task's data generator (``task.generator``) is imported only when its module is
trusted. The command line trusts the module its own options name; ``MIXIT_TRUST_MODULES``
(comma-separated) carries that to the processes a reproduction trains in, and lets a user
opt in for a run folder someone shared.

Trust is in a file, not a name: the command line records the file the name resolves to
(``NAME=PATH``), and a name resolving elsewhere later (a file of that name planted in the
folder a command runs from, which ``python -m`` puts first on the import path) is refused.
A name a user trusts bare is refused where a file in the current folder shadows another of
that name further along the import path.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from mixit.common.digest import module_file
from mixit.common.errors import UsageError

TRUST_ENV = "MIXIT_TRUST_MODULES"
# Wall seconds that user code may take to give what a command asked of it (a generator's
# examples): a generator that hangs, or computes on without yielding, is stopped then.
USER_CODE_SECONDS = 300.0


class TooSlow(BaseException):
    """User code ran past ``time_limit``'s seconds. A BaseException, so that the user's own
    ``except Exception`` does not swallow it."""


@contextmanager
def time_limit(seconds: float | None = None) -> Iterator[None]:
    """Raise ``TooSlow`` in the code inside once ``seconds`` (default ``USER_CODE_SECONDS``)
    of wall time have passed. It needs the main thread, where a signal can interrupt Python
    code; elsewhere it sets no limit."""
    seconds = USER_CODE_SECONDS if seconds is None else seconds
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise TooSlow(f"was still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class HardExit(SystemExit):
    """User code called ``os._exit``, which would end the process at once, with no message
    and its status (0: as if the command had succeeded)."""


@contextmanager
def no_hard_exit() -> Iterator[None]:
    """While the code inside runs, ``os._exit`` raises ``HardExit`` instead of ending the
    process, so that the command can say what the user's code did."""
    hard_exit = os._exit

    def refused(status: int) -> None:
        raise HardExit(status)

    os._exit = refused  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = hard_exit


def trust(module_name: str) -> None:
    """Let this process and those it starts import ``module_name``, as the file it resolves
    to now."""
    found = origin(module_name)
    entry = f"{module_name}={found}" if found else module_name
    kept = [e for e in _entries() if e.partition("=")[0] != module_name]
    os.environ[TRUST_ENV] = ",".join([*kept, entry])


def _entries() -> list[str]:
    return [entry for entry in os.environ.get(TRUST_ENV, "").split(",") if entry]


def is_trusted(module_name: str) -> bool:
    """Whether ``module_name`` is trusted as the file it resolves to now (the module doc)."""
    for entry in _entries():
        name, _, path = entry.partition("=")
        if name != module_name:
            continue
        if path:
            return origin(module_name) == path
        return not shadowed(module_name)
    return False


def origin(module_name: str, path: Sequence[str] | None = None) -> str | None:
    """The file ``module_name`` resolves to on ``path`` (default ``sys.path``), resolved,
    found without importing anything (``digest.module_file``); None where there is none."""
    try:
        found = module_file(module_name, path)
    except (ImportError, ValueError):
        return None
    return str(found.resolve()) if found is not None and found.is_file() else None


def shadowed(module_name: str) -> bool:
    """Whether a file in the current folder hides another of the same module name further
    along the import path (what a planted module in a shared folder does)."""
    here = Path.cwd().resolve()
    elsewhere = [p for p in sys.path if Path(p or ".").resolve() != here]
    found, beyond = origin(module_name), origin(module_name, elsewhere)
    return found is not None and beyond is not None and found != beyond


def require_trusted(setting: str, module_name: str, option: str) -> None:
    """A UsageError unless ``module_name`` is trusted (see ``trusted_function``)."""
    if is_trusted(module_name):
        return
    found = origin(module_name)
    named = [e.partition("=")[2] for e in _entries() if e.partition("=")[0] == module_name]
    if named:
        trusted = named[0] or f"the {module_name} this folder does not shadow"
        raise UsageError(
            f"{setting} names module {module_name}, which resolves to {found}, not the file "
            f"trusted ({trusted}): a file of that name in the current folder hides it; run "
            f"from another folder, or trust the file: {TRUST_ENV}={module_name}={found}"
        )
    raise UsageError(
        f"{setting} names code to run (module {module_name}), and mixit imports none that "
        f"it was not asked to: name it with {option}, or set {TRUST_ENV}={module_name} if "
        "you trust it"
    )


def _imported(module_name: str) -> ModuleType:
    """A module by its dotted name, or a file of Python by its path (``examples/x.py``)."""
    if not module_name.endswith(".py"):
        return importlib.import_module(module_name)
    path = Path(module_name)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ImportError(f"no Python file at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trusted_function(setting: str, spec: str, option: str) -> tuple[Callable[..., Any], Any]:
    """``MODULE:NAME`` -> (the function or class NAME defined in MODULE, the module), for a
    trusted MODULE (a dotted module name, or the path of a ``.py`` file); ``setting``
    (``model.arch='...'``) and ``option`` (the command-line option that names it) word the
    one-line UsageErrors."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise UsageError(f"{setting} is not of the form MODULE:NAME (a module you can import)")
    require_trusted(setting, module_name, option)
    try:
        with no_hard_exit():
            module = _imported(module_name)
    except (ImportError, OSError) as error:
        raise UsageError(f"{setting}: cannot import {module_name} ({error})") from None
    except (Exception, SystemExit) as error:  # the user's module raised, or exited, loading
        raise UsageError(f"{setting}: {module_name} failed while loading: {said(error)}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise UsageError(f"{setting}: {module_name} has no function {name}")
    defined_there = inspect.isfunction(function) or inspect.isclass(function)
    if not defined_there or function.__module__ != module.__name__:
        raise UsageError(
            f"{setting}: {name} is not a function or class defined in {module_name} (a "
            "builtin or an import from elsewhere is never called)"
        )
    return function, module


def said(error: BaseException) -> str:
    """What user code raised, in one line: ``ValueError: bad size``, ``SyntaxError: invalid
    syntax (gen.py, line 3)``, or ``it called sys.exit(0)``, which would otherwise end the
    command with that status and nothing done."""
    if isinstance(error, SystemExit):
        called = "os._exit" if isinstance(error, HardExit) else "sys.exit"
        return f"it called {called}({error.code!r}), which mixit does not let end the command"
    where = "" if isinstance(error, SyntaxError) else users_line(error)  # it names its own
    return f"{type(error).__name__}: {error}{where}"


# Where mixit, Python's own library and installed packages live: a frame in none of them is
# the user's code.
_NOT_THE_USERS = tuple({str(Path(__file__).resolve().parents[1]), sys.base_prefix, sys.prefix})


def users_line(error: BaseException) -> str:
    """`` (gen.py, line 3)``: the innermost frame of ``error``'s traceback in the user's own
    code (not mixit's, Python's or an installed package's), "" where there is none."""
    frames = traceback.extract_tb(error.__traceback__)
    own = [f for f in frames if not str(Path(f.filename).resolve()).startswith(_NOT_THE_USERS)]
    return f" ({Path(own[-1].filename).name}, line {own[-1].lineno})" if own else ""
