"""What ``reproduce --no-train`` may rewrite: never less than it found.

``--no-train`` reads an output: it reports the experiments whose runs are all finished and
judges again, from its ``results.json``, an experiment whose runs are gone. An experiment that
is neither, whose folder holds a ``results.json`` written under another setting (tuned presets
now, the task presets then) or a damaged one, would have its report replaced by a note of
missing runs and its verdicts by "not run". That stops the command before it writes anything,
naming the file and what differs, and the flag that matches where one does (``--no-tune``).
``claims.json`` is held to the same: a call that would drop its verdicts (judged under
another setting, damaged, or of an experiment with neither runs nor results.json) stops too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.paper.claims import experiment_of
from mixit.study.claim import (
    NOT_RUN,
    read_claims,
)
from mixit.study.experiment import (
    Experiment,
    Reproduction,
    Run,
)
from mixit.study.results import KEYS, csv_problem
from mixit.study.setting import Setting
from mixit.tasks.base import PLATEAU_KEY

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
            if name == "overrides" and PLATEAU_KEY in now and PLATEAU_KEY not in then:
                named[-1] += f" ({PLATEAU_KEY}=0 reads an output from before the plateau rule)"
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


def stored_verdicts(out: Path, setting: Setting) -> dict[str, str]:
    """``{claim id: verdict}`` of the claims ``OUT/claims.json`` judged (not "not run"),
    which ``--no-train`` must not drop; UsageError when the file is damaged, or was judged
    under another setting, as merging would then start it anew."""
    path = out / "claims.json"
    if not path.is_file():
        return {}
    stored = read_claims(path, "--no-train would replace it: restore it, or reproduce without")
    judged = {c["id"]: c.get("verdict", NOT_RUN) for c in stored["claims"]}
    judged = {claim: verdict for claim, verdict in judged.items() if verdict != NOT_RUN}
    differences = setting_differences(setting, stored)
    if judged and differences:
        raise UsageError(
            f"--no-train would replace the verdicts of {path}, judged under another setting: "
            + "; ".join(differences)
        )
    return judged


def check_rereadable(
    experiments: Sequence[Experiment],
    how: Reproduction,
    finished: Collection[Run],
    setting: Setting,
) -> None:
    """Before ``--no-train`` writes anything: refuse (UsageError, one line) when an
    experiment whose runs are not all ``finished`` has a results.json it cannot judge again
    (``stored_problem``), or whose claims.json verdicts would become "not run" because
    the experiment has neither (``stored_verdicts``), which the call would replace by less."""
    out = Path(how.out)
    held = [out / e.name / "results.json" for e in experiments]
    if not finished and not (out / "claims.json").is_file() and not any(map(Path.is_file, held)):
        raise UsageError(
            f"--no-train has nothing to read in {out}: no finished run of these experiments, no "
            "claims.json and no results.json; the same command without --no-train trains them"
        )
    judged = stored_verdicts(out, setting)
    problem = csv_problem(out / "results.csv", KEYS)
    if problem:
        raise UsageError(f"--no-train would replace the rows of {problem}")
    for experiment in experiments:
        planned = experiment.plan(how.scale, how.seed_range)
        if planned and all(run in finished for run in planned):
            continue
        folder = Path(how.out) / experiment.name
        problem = stored_problem(experiment, folder, setting)
        if problem:
            raise UsageError(f"--no-train would replace {experiment.name}'s report: {problem}")
        lost = [cid for cid in judged if experiment_of(cid) == experiment.name]
        if lost and not (folder / "results.json").is_file():
            raise UsageError(
                f"--no-train would turn {', '.join(lost)} in {how.out}/claims.json into "
                f"'{NOT_RUN}': {experiment.name} has neither its runs nor {folder}/results.json"
            )


def not_reported(missing: int, planned: int) -> str:
    """The report of an experiment that cannot be judged: ``missing`` of its ``planned``
    runs not finished, or, under ``--no-train``, a measuring experiment with no results.json
    to judge again (``--no-train`` measures nothing)."""
    if missing:
        return f"Not reported yet: {missing} of {planned} runs are not finished.\n"
    return "Not measured yet: `--no-train` measures nothing, and no results.json was stored.\n"
