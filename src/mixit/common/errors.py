"""Errors the command line turns into one clear line and an exit status."""

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str], prefix: str = "") -> str:
    """`` (did you mean PREFIXX?)`` for the choice X closest to a mistyped ``name`` (difflib),
    "" where none is close: what an unknown name's one-line error adds."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {prefix}{close[0]}?)" if close else ""


class UsageError(Exception):
    """Bad input from the user (unknown name, bad value, missing file): exit status 2."""


class TrainingDiverged(Exception):
    """The loss became NaN or infinite: the run stops and names the step (exit status 1)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's kill, ``kill PID``): handled as Ctrl-C is, exit status 143."""


class RunsFailed(Exception):
    """Submitted runs whose jobs ended without a summary: one line per run with its log
    (exit status 1)."""


class RunsPending(Exception):
    """Submitted runs still in flight for a command that needs them all (``--no-wait``):
    the same command collects them later (exit status 0)."""
