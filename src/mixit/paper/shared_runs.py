"""Claims judged on the same runs in two committed outputs, counted once (docs/reproduce.md,
"Reading rules").

`small` trains the tiny models, so a run whose resolved config is the same at both scales
lands in the same directory and is trained once (``base.SCALE_PRESET``): a claim all of whose
runs are tiny's repeats tiny's computation at `small`. Each claim records the directories of
the runs it read and the models it measured (``Claim.runs``, named by config hash); among the
committed outputs that judged a claim on the same runs, the first (by scale, then name)
counts it, and each other names that one (``Claim.same_runs_as``) and counts nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from mixit.paper.verdicts import write_claims
from mixit.study.claim import (
    SEEDS,
    Claim,
    read_claims,
)
from mixit.study.experiment import (
    SCALES,
)
from mixit.study.setting import Setting

CLAIMS_FILE = "claims.json"


def _order(output: Path) -> tuple[int, str]:
    scale = json.loads((output / CLAIMS_FILE).read_text())["scale"]
    return (SCALES.index(scale) if scale in SCALES else len(SCALES), output.name)


def first_with_same_runs(output: Path, claim: Claim, outputs: list[Path]) -> str:
    """The output before ``output`` (``_order``) whose claim of the same id read exactly the
    runs ``claim`` read, as ``results/NAME``; "" when none did, the claim read no runs, or it
    does not depend on the seeds (a timing, measured again by every output)."""
    if not claim.runs or SEEDS in claim.independent_of:
        return ""
    for other in sorted(outputs, key=_order):
        if _order(other) >= _order(output):
            break
        stored = json.loads((other / CLAIMS_FILE).read_text())["claims"]
        if any(c["id"] == claim.id and c.get("runs") == claim.runs for c in stored):
            return f"{other.parent.name}/{other.name}"
    return ""


def mark_same_runs(results: Path) -> dict[str, dict[str, str]]:
    """Set ``same_runs_as`` on every claim of every output under ``results`` (a folder of
    committed outputs, each with its claims.json), rewriting claims.json and claims.md where a
    mark changed; returns ``{output name: {claim id: results/NAME}}`` for the marked claims."""
    outputs = sorted(path.parent for path in results.glob(f"*/{CLAIMS_FILE}"))
    marked: dict[str, dict[str, str]] = {}
    for output in outputs:
        stored = read_claims(output / CLAIMS_FILE, "restore it, or leave it out of the folder")
        claims = [Claim.from_json(claim) for claim in stored["claims"]]
        before = [claim.same_runs_as for claim in claims]
        for claim in claims:
            claim.same_runs_as = first_with_same_runs(output, claim, outputs)
        if any(claim.same_runs_as for claim in claims):
            marked[output.name] = {c.id: c.same_runs_as for c in claims if c.same_runs_as}
        if [claim.same_runs_as for claim in claims] != before:
            notes = {claim.id: claim.ablation for claim in claims}
            write_claims(output, claims, Setting.from_record(stored), notes)
    return marked
