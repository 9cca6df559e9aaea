"""Numbers and tables as the reports print them: a duration in the unit that reads best, a
markdown table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table of ``header`` and ``rows``, each cell as ``str`` gives it."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def duration(seconds: float) -> str:
    """``42 s``, ``3.5 min`` or ``33.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:,.1f} h"
