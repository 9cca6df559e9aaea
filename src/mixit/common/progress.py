"""How long work shows its progress: tqdm bars on a terminal, and where stderr is a file or a
pipe (a log, CI, ``make demo 2>demo.log``), one whole line at most every ``LINE_SECONDS``.

A command's ``--progress`` / ``--no-progress`` asks for bars / nothing; without either it is
``progress_mode(None)``: bars on a terminal, lines elsewhere. Work shorter than
``LINE_SECONDS`` prints no line at all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TextIO

from tqdm.auto import tqdm
from tqdm.std import tqdm as plain_tqdm

Progress = Literal["bars", "lines", "off"]

# A log shows that work goes on at least this often (while its steps are shorter than this).
LINE_SECONDS = 30.0

_LINE = "mixit: {desc} {n_fmt}/{total_fmt} {unit}s, {elapsed} elapsed, ~{remaining} left{postfix}"
# A ``WorkBar``'s line and bar: its count is in its description, its total is predicted seconds.
_WORK_LINE = "mixit: {desc}, {elapsed} elapsed, ~{remaining} left{postfix}"
_WORK_BAR = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]"


def progress_mode(asked: bool | Progress | None, stream: TextIO | None = None) -> Progress:
    """``asked`` (``--progress``: True, ``--no-progress``: False, neither: None; or a mode a
    parent process chose) as a mode, reading whether ``stream`` (stderr) is a terminal when
    nothing was asked."""
    if isinstance(asked, str):
        return asked
    if asked is not None:
        return "bars" if asked else "off"
    stream = sys.stderr if stream is None else stream
    return "bars" if stream.isatty() else "lines"


class LogLines(plain_tqdm):
    """A tqdm that writes whole lines, at most one every ``LINE_SECONDS`` and none before
    (tqdm's ``mininterval`` and ``delay``), instead of redrawing one line with carriage
    returns: what a log file can show."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs |= {"mininterval": LINE_SECONDS, "delay": LINE_SECONDS, "miniters": 1}
        kwargs |= {"bar_format": kwargs.get("bar_format") or _LINE, "leave": False}
        super().__init__(*args, **kwargs)

    def set_postfix(self, ordered_dict: Any = None, refresh: bool = True, **kwargs: Any) -> None:
        """The postfix shows in the next line, not in a line of its own."""
        super().set_postfix(ordered_dict, refresh=False, **kwargs)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        if msg == "":  # tqdm clearing its bar at close: a log keeps its lines
            return False
        self.fp.write((self.__str__() if msg is None else msg) + "\n")
        self.fp.flush()
        return True


def progress_bar(iterable: Iterable[Any] | None = None, *, mode: Progress, **kwargs: Any) -> tqdm:
    """A tqdm over ``iterable`` (or updated by hand) that shows as ``mode`` says."""
    if mode == "lines":
        return LogLines(iterable, file=sys.stderr, **kwargs)
    return tqdm(iterable, disable=mode == "off", **kwargs)


class WorkBar:
    """Progress over units of unequal cost (runs of different budgets and sizes): it advances
    by each unit's predicted ``costs`` (``--estimate``'s cost model), so its time left is the
    time so far scaled by the predicted cost still to do over the cost done, and it counts the
    units in its description (``training runs 3/22 runs``)."""

    def __init__(self, costs: Mapping[str, float], *, mode: Progress, desc: str, unit: str):
        self.costs, self.desc, self.unit, self.done = dict(costs), desc, unit, 0
        layout = _WORK_LINE if mode == "lines" else _WORK_BAR
        total = sum(self.costs.values())
        self.bar = progress_bar(total=total, mode=mode, desc=self._count(), bar_format=layout)

    def _count(self) -> str:
        return f"{self.desc} {self.done}/{len(self.costs)} {self.unit}s"

    def finished(self, name: str) -> None:
        """Unit ``name`` is done."""
        self.done += 1
        self.bar.set_description_str(self._count(), refresh=False)
        self.bar.update(self.costs[name])

    def close(self) -> None:
        self.bar.close()
