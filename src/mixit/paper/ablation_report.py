"""Reading the ablation: each difference's verdicts, the shift of the claims' MixiT numbers
against the equations' construction, the report's table, and what each verdict of a
reproduction turns on (written beside it in claims.md)."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mixit.common.io import make_dir
from mixit.paper.claims import experiment_of
from mixit.paper.differences import DIFFERENCES, EQUATIONS, WHOLE
from mixit.paper.registry import EXPERIMENTS
from mixit.paper.verdicts import write_claims
from mixit.study.claim import (
    REPRODUCED,
    Claim,
    read_claims,
)
from mixit.study.experiment import (
    Reproduction,
    Run,
)
from mixit.study.measures import seeds_text
from mixit.study.references import per_seed, unlearned_reference
from mixit.study.setting import Setting
from mixit.study.text import markdown_table
from mixit.study.words import Verdict


def _shift(base: dict[int, float], flipped: dict[int, float]) -> str:
    paired = [flipped[s] - base[s] for s in sorted(base) if s in flipped]
    if not paired:
        return "-"
    spread = statistics.stdev(paired) if len(paired) > 1 else 0.0
    return f"{statistics.fmean(paired):+.3f} ± {spread:.3f}"


@dataclass
class Judged:
    """Per difference and claim: the verdict (``verdicts``), the shift of each of the claim's
    MixiT headlines against the equations' runs (``shifts``), and why its reference runs did
    not learn their task (``unlearned``: [] when they did)."""

    verdicts: dict[str, dict[str, Claim]]
    shifts: dict[str, dict[str, dict[str, str]]]
    unlearned: dict[str, dict[str, list[str]]]

    def results(self, claims: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
        """results.json's per-difference, per-claim verdict, measured numbers, shift, and the
        reference runs that did not learn (``no_reference``: then the verdict means
        nothing)."""
        return {
            d: {
                c: {
                    "verdict": self.verdicts[d][c].verdict,
                    "measured": self.verdicts[d][c].measured,
                }
                | {"shift": self.shifts[d][c], "no_reference": self.unlearned[d][c]}
                for c in claims
            }
            for d in self.verdicts
        }


def judge(
    differences: Sequence[str],
    claims: Sequence[str],
    names: Sequence[str],
    how: Reproduction,
    summaries: Mapping[tuple[str, Run], Mapping[str, Any]],
    folder: Path,
) -> Judged:
    """Each difference's verdict on each claim (its experiments' reports, plots under
    ``folder``), the shift of the claim's MixiT numbers from the equations' runs, and whether
    its standard runs learned the tasks they are the reference on."""
    scale, seeds = how.scale, how.seed_range
    heads = {c: EXPERIMENTS[experiment_of(c)].headlines(scale, seeds)[c] for c in claims}
    base = {run: s for (d, run), s in summaries.items() if d == EQUATIONS}
    judged = Judged({}, {}, {})
    for difference in differences:
        mine = {run: s for (d, run), s in summaries.items() if d == difference}
        plots = make_dir(folder / re.sub(r"[^a-z0-9]+", "-", difference.lower()).strip("-"))
        reports = [
            EXPERIMENTS[name].report(scale, seeds, mine, plots, how.overrides) for name in names
        ]
        claimed = [c for report in reports for c in report.claims]
        judged.verdicts[difference] = {c.id: c for c in claimed if c.id in claims}
        judged.shifts[difference] = {
            c: {
                h.label: _shift(per_seed(base, h.runs, h.metric), per_seed(mine, h.runs, h.metric))
                for h in heads[c]
            }
            for c in claims
        }
        judged.unlearned[difference] = {
            c: [u for h in heads[c] if (u := unlearned_reference(mine, h))] for c in claims
        }
    return judged


def dependence(out: Path, setting: Setting) -> dict[str, str]:
    """Per claim id, what ``OUT/ablation/results.json`` says its verdict turns on: the
    differences that flip it against the equations' construction, or that none does. A
    difference under which the claim's reference did not learn its task flips nothing: it is
    named apart. Nothing when there is no ablation at this ``setting``'s scale, seeds and
    overrides."""
    try:
        results = json.loads((out / "ablation" / "results.json").read_text())
        if not setting.same_as(results, but_rates=True):
            return {}
        differences = results["differences"]
        base = differences[EQUATIONS]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    where = f"(`{results['scale']}`, {results['seeds']} seeds, ablation/report.md)"
    notes = {}
    for claim, judged in base.items():
        if judged.get("no_reference"):
            notes[claim] = f"no reference under the equations' construction {where}"
            continue
        unread = [d for d, v in differences.items() if v[claim].get("no_reference")]
        others = {
            d: v[claim]["verdict"]
            for d, v in differences.items()
            if d != EQUATIONS and d not in unread
        }
        flipped = [f"`{d}` ({v})" for d, v in others.items() if v != judged["verdict"]]
        if flipped:
            note = f"flipped by {', '.join(flipped)}"
        else:
            note = f"as under each of {', '.join(f'`{d}`' for d in others) or 'no difference'}"
        if unread:
            note += "; no reference under " + ", ".join(f"`{d}`" for d in unread)
        notes[claim] = f"{judged['verdict']} under the equations' construction, {note} {where}"
    return notes


def annotate_claims(out: Path) -> None:
    """Rewrite ``OUT/claims.json`` and ``claims.md``, if a reproduction wrote them, with what
    the ablation now says each verdict turns on."""
    path = out / "claims.json"
    if not path.is_file():
        return
    stored = read_claims(path, "reproduce without --no-train writes it again")
    claims = [Claim.from_json(claim) for claim in stored["claims"]]
    setting = Setting.from_record(stored)
    write_claims(out, claims, setting, dependence(out, setting))


def ablation_markdown(
    judged: Judged, claims: Sequence[str], how: Reproduction, cost: Mapping[str, Any]
) -> str:
    base = judged.verdicts[EQUATIONS]

    def cell(difference: str, claim_id: str) -> str:
        verdict = judged.verdicts[difference][claim_id].verdict
        if judged.unlearned[difference][claim_id]:
            mark = Verdict.NO_REFERENCE
        else:
            mark = "yes" if verdict == REPRODUCED else "no"
            if difference != EQUATIONS and verdict != base[claim_id].verdict:
                mark += " (flips)"
        moved = "; ".join(f"{k} {v}" for k, v in judged.shifts[difference][claim_id].items())
        return f"{mark}: {moved}" if difference != EQUATIONS else mark

    rows = [[d, *(cell(d, c) for c in claims)] for d in judged.verdicts]
    unlearned = [
        f"- `{d}`, {c}: {'; '.join(why)}"
        for d, by_claim in judged.unlearned.items()
        for c, why in by_claim.items()
        if why
    ]
    return "\n\n".join(
        [
            "# Ablation: which detail of the authors' code decides which claim",
            f"Scale `{how.scale}`, {seeds_text(how.seed_range)}. Each row sets one group of "
            "options to the authors' values (docs/constructions.md) for the runs the authors' "
            "construction gives them to, on top of the equations' construction; the last row is "
            "the whole authors' construction. A cell is the claim's verdict (reproduced: yes or "
            "no), whether it flips against the equations' row, and the shift of MixiT's metric: "
            'mean ± standard deviation over seeds of the paired per-seed difference. "No '
            'reference": the standard model, against which the claim reads MixiT, did not learn '
            "the task there (the litmus test's rule: every seed clearly beyond the task's "
            "chance), so that verdict means nothing and flips nothing.",
            markdown_table(["difference", *claims], rows),
            *(["No reference:\n" + "\n".join(unlearned)] if unlearned else []),
            "Differences: "
            + "; ".join(f"`{name}`: {what}" for name, (what, _) in DIFFERENCES.items())
            + f"; `{WHOLE}`: all of them at once (docs/constructions.md). `row-sum-drift` "
            "alone builds the equations' matrices again under the causal mask; it acts only "
            "with non-causal mixing, inside the authors' row.",
            cost_line(cost),
        ]
    )


def cost_line(cost: Mapping[str, Any]) -> str:
    """What the table cost to train, over every call that trained part of it."""
    total = (
        f"The ablation's {cost['runs']} finished runs took {cost['run_seconds'] / 3600:.1f} "
        "hours of training, summed over runs as each was measured when it trained"
    )
    if not cost["runs_trained"]:
        return total + "; this call trained nothing, every run was already in the output folder."
    return (
        f"{total}; this call trained {cost['runs_trained']} of them in "
        f"{cost['train_wall_seconds'] / 60:.1f} minutes of wall time with --jobs {cost['jobs']}."
    )
