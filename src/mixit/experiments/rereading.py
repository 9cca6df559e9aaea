"""What ``reproduce --no-train`` may rewrite: never less than it found.

``--no-train`` reads an output: it reports the experiments whose runs are all finished and
judges again, from its ``results.json``, an experiment whose runs are gone. An experiment that
is neither, whose folder holds a ``results.json`` written under another setting (tuned presets
now, the task presets then) or a damaged one, would have its report replaced by a note of
missing runs and its verdicts by "not run". That stops the command before it writes anything,
naming the file and what differs, and the flag that matches where one does (``--no-tune``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.errors import UsageError
from mixit.experiments.base import Experiment, Reproduction, Run
from mixit.experiments.setting import Setting

# What each setting field is called on the command line, to name a mismatch.
FLAGS = {
    "scale": "--scale",
    "seeds": "--seeds",
    "first_seed": "--seed",
    "overrides": "the overrides",
    "tuned": "--tuned",
    "tune": "--tune",
    "presets": "the tuned presets (--no-tune trains without them)",
}


def setting_differences(setting: Setting, stored: Mapping[str, Any]) -> list[str]:
    """Each field of ``setting`` that ``stored`` (a results.json's record) differs in, as
    ``presets: stored None, now tuned (tiny.json)``."""
    other = Setting.from_record(stored)
    named = []
    for name, flag in FLAGS.items():
        now, then = getattr(setting, name), getattr(other, name)
        if name == "overrides":
            now, then = ({k: str(v) for k, v in d.items()} for d in (now, then))
        if now != then:
            named.append(f"{flag}: stored {then!r}, now {now!r}")
    return named


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in a stored result (a damaged file's kind)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def stored_problem(experiment: Experiment, folder: Path, setting: Setting) -> str:
    """Why ``folder``'s results.json cannot be judged again under ``setting``; "" when it can
    or there is none."""
    path = folder / "results.json"
    if not path.is_file():
        return ""
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return f"{path} is damaged ({error})"
    if not isinstance(stored, dict) or not _finite(stored):
        return f"{path} is damaged (not a record of finite numbers)"
    try:
        differences = setting_differences(setting, stored)
    except (KeyError, TypeError, AttributeError, ValueError):
        return f"{path} is damaged (its setting cannot be read)"
    if differences:
        return f"{path} was written under another setting: {'; '.join(differences)}"
    try:
        experiment.judge(stored)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError, ZeroDivisionError):
        return f"{path} is damaged (it lacks what the claims' rules read)"
    return ""


def check_rereadable(
    experiments: Sequence[Experiment],
    how: Reproduction,
    finished: Collection[Run],
    setting: Setting,
) -> None:
    """Before ``--no-train`` writes anything: refuse (UsageError, one line) when an
    experiment whose runs are not all ``finished`` has a results.json it cannot judge again
    (``stored_problem``), which the call would replace by less."""
    for experiment in experiments:
        planned = experiment.plan(how.scale, how.seed_range)
        if all(run in finished for run in planned):
            continue
        problem = stored_problem(experiment, Path(how.out) / experiment.name, setting)
        if problem:
            raise UsageError(f"--no-train would replace {experiment.name}'s report: {problem}")
