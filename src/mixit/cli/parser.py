"""The parser every mixit command and script reads its arguments with: bad input is one line
and exit status 2, an option is never abbreviated, and a mistyped one gets its closest
spelling."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Sequence
from typing import Any

from mixit.common.errors import UsageError

LACKING_VALUE = re.compile(r"argument (--[\w-]+)(?:/[\w-]+)*: expected one argument")


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input as one line and exit status 2 (no usage dump), and
    never takes an abbreviation for an option: ``--npr 2`` would pass for ``--nproc 2`` yet
    stay in the arguments ``train`` hands each torchrun worker, which would start torchrun
    again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def error(self, message: str) -> None:  # type: ignore[override]
        # "mixit: error:" comes once, from main; a command's own parser names the command.
        where = self.prog.removeprefix("mixit").strip()
        # argparse reads a value that starts with '-' (and is no plain number) as an option.
        lacking = LACKING_VALUE.fullmatch(message)
        if lacking:
            message += f" (a value that starts with '-' is written {lacking[1]}=VALUE)"
        raise UsageError(f"{where + ': ' if where else ''}{message} (see --help)")

    def unknown(self, extra: Sequence[str], command: str | None) -> None:
        """Refuse ``extra``, the arguments no option of ``command`` took, with the option each
        one most likely meant (difflib), where one is close."""
        chosen = self._subparsers._group_actions[0].choices.get(command) if command else None
        options = [s for action in (chosen or self)._actions for s in action.option_strings]
        guesses = []
        for argument in extra:
            close = difflib.get_close_matches(argument.split("=", 1)[0], options, n=1)
            guesses.append(f"{argument} (did you mean {close[0]}?)" if close else argument)
        (chosen or self).error(f"unrecognized arguments: {' '.join(guesses)}")
