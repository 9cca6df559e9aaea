"""What every figure module reads: the committed outputs under results/ and their claims."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mixit.paper.claims import CLAIMS
from mixit.running.archive import ARCHIVE, unpack
from mixit.study.claim import (
    INCONCLUSIVE,
    NO_REFERENCE,
    NOT_RUN,
)
from mixit.study.results import read_results_csv

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "results"
# Where a reproduction keeps its earlier verdicts, beside the claims.json that
# `reproduce --no-train` wrote under the current rules: one claims.json each, by the rule
# change that judged the output again.
EARLIER = "claims-earlier.json"
# Under the rules the output was first judged by.
OLD_RULES = "old-rules"
# Before the rule that a claim whose reference did not learn gets no verdict.
BEFORE_NO_REFERENCE = "before-no-reference"
# Before the reading rules of 2026-12-01.
BEFORE_READING_RULES = "before-reading-rules"
# Before the ceiling reached the budget cap (2026-12-07, docs/reproduce.md).
BEFORE_CEILING_AT_CAP = "before-ceiling-at-cap"
CLAIM_IDS = [f"C{i}" for i in range(1, 13)]


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


# The pass that judged every committed output again under the reading rules of 2026-12-06
# keeps each reproduction's claims.json as it was before it.
PASSED = RESULTS / "judged-again-2026-12-06.json"


def before_the_pass(output: Path) -> dict[str, Any]:
    """``output``'s claims.json as it was before the pass of 2026-12-06 (``PASSED``): what the
    earlier rule changes' tables read as "now"; its claims.json where the pass moved nothing."""
    kept = _json(PASSED)["claims"].get(output.name) if PASSED.is_file() else None
    return kept or _json(output / "claims.json")


def earlier(output: Path, rules: str) -> dict[str, Any] | None:
    """``output``'s claims.json as it was before ``rules`` (a key of ``EARLIER``); None where
    it was never judged again under them."""
    path = output / EARLIER
    return _json(path).get(rules) if path.is_file() else None


@functools.cache
def unpacked(output: Path) -> Path:
    """A copy of ``output`` with its runs/ folders unpacked from its archive
    (``mixit records``), in a temporary folder removed at exit; ``output`` itself where
    it keeps no archive."""
    if not (output / ARCHIVE).is_file():
        return output
    into = Path(tempfile.mkdtemp(prefix=f"{output.name}-records-")) / output.name
    atexit.register(shutil.rmtree, into.parent, True)
    shutil.copytree(output, into)
    unpack(output, into)
    return into


def _outputs() -> list[Path]:
    """Every committed output that judged claims, in name order. An output whose claims are
    all "not run" judged none (``reproduce width`` writes such a file) and is left out, or it
    would pose as a reproduction of its scale and seeds."""
    return sorted(
        path.parent
        for path in RESULTS.glob("*/claims.json")
        if any(claim["verdict"] != NOT_RUN for claim in _json(path)["claims"])
    )


def _whole_reproductions() -> list[Path]:
    """The outputs of ``reproduce all`` (at least half the claims judged): the ones that stand
    for their scale and seeds beside each other. One experiment's output (``reproduce table7``)
    is not."""
    return [
        out
        for out in _outputs()
        if 2 * sum(c["verdict"] == NOT_RUN for c in _json(out / "claims.json")["claims"])
        <= len(_json(out / "claims.json")["claims"])
    ]


def _construction(claims: dict[str, Any]) -> str:
    """The constructions the judged claims' models were built with (a claim independent of
    the construction left out); older files without them fall back to the overrides."""
    built = {
        part.strip()
        for c in claims["claims"]
        if c["verdict"] != NOT_RUN and "overrides" not in c.get("independent_of", [])
        for part in c.get("construction", "").split(",")
        if part.strip()
    }
    return ", ".join(sorted(built)) or claims["overrides"].get("model.construction", "equations")


def _seeds(claims: dict[str, Any]) -> str:
    first = claims.get("first_seed", 0)
    return f"{first}-{first + claims['seeds'] - 1}"


def _wall(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def _tuning_cost(record: dict[str, Any]) -> str:
    """A tuned presets file's cost: its call's wall time, and for a tuning that may have
    taken several calls (whose wall times before the last are lost), its trials' summed
    training seconds."""
    wall = _wall(record["tuning_wall_seconds"])
    if "trials_train_seconds" not in record:
        return f"in {wall} with {record['jobs']} job(s)"
    return (
        f"with {record['jobs']} job(s), its trials training "
        f"{_wall(record['trials_train_seconds'])} summed over runs (the last call {wall})"
    )


def _verdicts(claims: dict[str, Any]) -> dict[str, str]:
    return {claim["id"]: claim["verdict"] for claim in claims["claims"]}


def _reproduced(claims: dict[str, Any]) -> str:
    """``7 of 11 (C1, ...); no reference: C5; inconclusive: C6``: a claim without a reference,
    an inconclusive one and one judged on the same runs as another committed output (counted
    there) are not counted here."""
    verdicts = _verdicts(claims)
    shared = {c["id"]: c["same_runs_as"] for c in claims["claims"] if c.get("same_runs_as")}
    unjudged = (NOT_RUN, NO_REFERENCE, INCONCLUSIVE)
    judged = [c for c in CLAIM_IDS if verdicts.get(c, NOT_RUN) not in unjudged and c not in shared]
    held = [c for c in judged if verdicts[c] == "reproduced"]
    named = [
        (label, [c for c in CLAIM_IDS if verdicts.get(c) == verdict and c not in shared])
        for label, verdict in (("no reference", NO_REFERENCE), ("inconclusive", INCONCLUSIVE))
    ]
    named += [(f"the same runs as `{o}`", [c for c in shared if shared[c] == o]) for o in
              sorted(set(shared.values()))]  # fmt: skip
    return (
        f"{len(held)} of {len(judged)}"
        + (f" ({', '.join(held)})" if held else "")
        + "".join(f"; {label}: {', '.join(ids)}" for label, ids in named if ids)
    )


def _confirmed(claims: dict[str, Any]) -> str:
    """The claims reproduced on seeds nothing was tuned on, those independent of the seeds or
    whose rule was written after these seeds were seen left out; '-' for an output on the
    tuning seeds."""
    fresh = set(claims.get("confirmed_on_seeds", []))
    if not fresh:
        return "-"
    held = [
        c["id"]
        for c in claims["claims"]
        if c["verdict"] == "reproduced"
        and "seeds" not in c.get("independent_of", [])
        and not fresh & set(c.get("seen_seeds", []))
        and not c.get("same_runs_as")
    ]
    return ", ".join(held) or "none"


def _rules(claims: dict[str, Any]) -> str:
    """'current', or the judged claims whose rule text differs from the current rule's."""
    current = {claim.id: claim.rule for claim in CLAIMS}
    older = [
        c["id"]
        for c in claims["claims"]
        if c["verdict"] != NOT_RUN and c["rule"] != current.get(c["id"])
    ]
    return f"older for {', '.join(older)}" if older else "current"


def _training(out: Path) -> tuple[str, str]:
    """The runs and wall time of each call that trained some of an output's runs and recorded
    its time (a later call may train a few again, or judge again and train nothing). When
    those calls trained fewer runs than the output holds, the others were trained by calls
    interrupted before they recorded their time, and the cell says so."""
    timing = _json(out / "timing.json") if (out / "timing.json").is_file() else {}
    calls = [call for call in timing.get("calls", []) if call.get("runs_trained", 0) > 0]
    if not calls:
        return "-", "-"
    runs = " + ".join(f"{call['runs_trained']:,}" for call in calls)
    wall = " + ".join(
        f"{_wall(call['train_wall_seconds'])} ({call['train_wall_seconds']:,.0f} s), "
        f"`--jobs {call.get('jobs', 1)}`"
        for call in calls
    )
    total = _run_count(out)
    if total > sum(call["runs_trained"] for call in calls):  # the rest were cut off untimed
        runs, wall = f"{runs} of {total:,}", f"{wall}, for those {runs} only"
    return runs, wall


def _run_count(out: Path) -> int:
    """The runs an output's results.csv holds, one row each (0 without the file)."""
    path = out / "results.csv"
    return len(read_results_csv(path)) if path.is_file() else 0


def _rates(claims: dict[str, Any]) -> str:
    """How an output's runs chose their learning rates (docs/tuning.md)."""
    if claims.get("presets"):
        return "tuned presets"
    return "tuned in the output" if claims.get("tune") else "task presets"


def _old_rules(claims: dict[str, Any]) -> str:
    """`` (tuned under the old rules)`` for presets tuned before the rules of 2026-12-01,
    which the presets name from then on (``mixit.tuning.presets.presets_label``)."""
    presets = claims.get("presets") or ""
    return " (tuned under the old rules)" if presets and "rules of" not in presets else ""


def _presets_label(out: Path) -> str:
    """Which presets an output's verdict runs trained under, for a table of outputs."""
    presets = _json(out / "claims.json").get("presets") or ""
    if not presets:
        return "task presets"
    return "tuned presets" if "rules of" in presets else "presets tuned under the old rules"
