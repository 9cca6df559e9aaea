"""What an earlier ``compare`` into the same folder holds: its models, when it compared under
the same setting. A second ``compare`` with other models then keeps them (their finished runs
are read back, not retrained) instead of replacing ``compare.json`` with its own rows."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.models.variants import VARIANTS


def with_earlier_models(
    out: Path, setting: Mapping[str, Any], models: Sequence[str]
) -> tuple[str, ...]:
    """``models`` and those of ``out/compare.json`` when it was written under ``setting``
    (its task, preset, seeds and overrides), the spectrum's models in its order first; where
    it holds another setting, ``models`` alone, and one line saying it is replaced."""
    try:
        earlier = json.loads((out / "compare.json").read_text())
        same = all(earlier.get(key) == value for key, value in setting.items())
        held = [row["model"] for row in earlier["rows"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return tuple(models)  # none, or not one this code can read: written anew
    if not same:
        print(
            f"mixit: {out / 'compare.json'} holds a comparison under another setting; "
            "it is replaced (its runs stay)",
            file=sys.stderr,
        )
        return tuple(models)
    added = [m for m in held if m not in models]
    if added:
        print(f"mixit: keeping {', '.join(added)} from the earlier compare.json", file=sys.stderr)
    every = [*models, *added]
    order = list(VARIANTS)
    return tuple(sorted(every, key=lambda m: (order.index(m) if m in order else len(order), m)))
