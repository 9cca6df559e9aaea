"""Figures of docs/tuning.md: the tuning's cost, the tuned presets and the verdicts under them."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

from figures import common
from figures.common import (
    ROOT,
    _confirmed,
    _construction,
    _json,
    _presets_label,
    _rates,
    _seeds,
    _tuning_cost,
    _verdicts,
    _wall,
    _whole_reproductions,
)
from mixit.paper.verdicts import format_measurements
from mixit.study.claim import (
    INCONCLUSIVE,
    NO_REFERENCE,
    NOT_RUN,
)
from mixit.study.litmus import VERDICTS
from mixit.study.table import raised_budget


def tuning_cost() -> str:
    """docs/tuning.md: what the protocol cost on each task measured by studies/tuning_cost.py,
    and what its halving changed in the choice."""
    lines = []
    for path in sorted((common.RESULTS / "tuning-cost").glob("*.json")):
        r = _json(path)
        lines += [
            f"**{path.stem}** ({r['preset']}, {r['seeds']} seeds, one run after another on the "
            f"development machine, from empty outputs, `{path.relative_to(ROOT)}`): untuned "
            f"{_wall(r['untuned_seconds'])}, tuned {_wall(r['tuned_seconds'])}: "
            f"**{r['ratio']:.2f}x**. Training every rate the halving tried to the whole budget "
            f"would have added {_wall(r['full_grid_extra_seconds'])}.",
            "",
            "| model | rates tried | halving's rate | edge | steps | full grid's rate | untuned |"
            " tuned |",
            "|---|---:|---:|---|---:|---:|---|---|",
        ]
        for model, lr in r["halving"].items():
            t = r["tuning"][model]
            untuned = " / ".join(f"{v:.3f}" for v in r["untuned"][model])
            tuned = " / ".join(f"{v:.3f}" for v in r["tuned"][model])
            lines.append(
                f"| {model} | {len(t['validation'])} | {lr:.3g} | {t['edge']} | {t['steps']} | "
                f"{r['full_grid'][model]['train.lr']:.3g} | {untuned} | {tuned} |"
            )
        halving, grid = r["halving"], r["full_grid"]
        differ = [m for m, lr in halving.items() if not math.isclose(lr, grid[m]["train.lr"])]
        same = len(halving) - len(differ)
        lines += [
            "",
            f"The halving chose the full grid's rate for {same} of {len(halving)} models.",
        ]
        for model in differ:
            scores = sorted((lr, score) for lr, score, *_ in grid[model]["scores"])
            shown = ", ".join(f"{lr:.3g}: {score:.3f}" for lr, score in scores)
            lines.append(f"{model}'s validation scores at the whole budget: {shown}.")
        before, after = _readings(r["litmus_untuned"]), _readings(r["litmus_tuned"])
        changes = ", ".join(f"{m} {before.get(m, 'no verdict')} -> {v}" for m, v in after.items())
        lines += [f"Litmus readings, untuned -> tuned: {changes}.", ""]
    return "\n".join(lines).strip() or "(not measured yet)"


def _readings(litmus: dict[str, Any]) -> dict[str, str]:
    return {row["model"]: VERDICTS[row["matches"]] for row in litmus["rows"]}


def init_finding() -> str:
    """docs/tuning.md: the pre-registered initialisation finding, and its repeat after the
    embeddings joined the small-output scheme, as studies/init_finding.py reports them."""
    spec = importlib.util.spec_from_file_location(
        "init_finding", ROOT / "studies" / "init_finding.py"
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    parts = []
    for path in sorted(common.RESULTS.glob("init-finding*/results.json")):
        r = _json(path)
        seeds = f"Seeds {r['seeds'][0]}-{r['seeds'][-1]}, `{path.relative_to(ROOT)}`:"
        parts += [seeds, "", tool.findings(r), ""]
    return "\n".join(parts).strip() or "(not measured yet)"


def _added(groups: list[dict]) -> str:
    """Which groups `mixit presets tune --missing-only` added after the file's own tuning."""
    added = [g for g in groups if "added" in g]
    if not added:
        return ""
    commits = sorted({g["added"]["tuned_at_commit"] for g in added})
    names = ", ".join(f"{g['task']} {g['model']}" for g in added)
    return (
        f", {len(added)} of them added since by `mixit presets tune --missing-only` at commit "
        f"{', '.join(commits)} under the same rules ({names})"
    )


def tuned_presets() -> str:
    """docs/tuning.md: the tuned presets `reproduce` trains under, per scale, with the
    validation evidence mixit presets tune recorded."""
    from mixit.tuning.presets import TUNED

    parts = []
    for path in sorted(TUNED.glob("*.json")):
        r = _json(path)
        groups = r["groups"]
        ratios = [g["train.lr"] / g["preset"]["train.lr"] for g in groups]
        longer = [g for g in groups if g["steps"] > g["preset"]["train.steps"]]
        unlearned = [f"{g['task']} {g['model']}" for g in groups if not g["learned"]]
        at_edge = [g for g in groups if g["edge"] in ("edge", "bound")]
        raised = [
            f"{g['task']} {g['model']} ({', '.join(g['experiments'])}: "
            f"{g.get('raised_from', g['budgets'][-1]['steps']):,} raised to {g['steps']:,})"
            for g in groups
            if raised_budget(g)
        ]
        parts += [
            f"**{r['scale']}** (`{path.relative_to(ROOT)}`, tuned at commit "
            f"{r['tuned_at_commit']} {_tuning_cost(r)}, tuning seed {groups[0]['seed']}): "
            f"{len(groups)} groups{_added(groups)}. The chosen rate "
            f"is above the preset's for {sum(x > 1.001 for x in ratios)}, the preset's for "
            f"{sum(abs(x - 1) <= 0.001 for x in ratios)} and below it for "
            f"{sum(x < 0.999 for x in ratios)}; {len(at_edge)} stopped at a grid edge or its "
            f"bound; {len(longer)} train longer than the preset (the budget rule). Did not "
            f"learn at any rate of the grid: {', '.join(unlearned) or 'none'}. Raised to the "
            f"standard model's budget for the same task and setting (rule 5's floor): "
            f"{', '.join(raised) or 'none'}.",
            "",
            "| experiments | task | model | setting | preset lr | chosen lr | steps | init | "
            "edge | validation at the last rung (lr: score) |",
            "|---|---|---|---|---:|---:|---:|---|---|---|",
        ]
        order = sorted(groups, key=lambda g: (g["experiments"], g["task"], g["model"]))
        for g in order:
            setting = ", ".join(f"{k}={v}" for k, v in g["run_overrides"].items()) or "-"
            last = g["rungs"][-1]["scores"]
            scores = ", ".join(f"{lr:.3g}: {score:.3f}" for lr, score in sorted(last))
            steps = f"{g['steps']:,}" + _steps_mark(g)
            parts.append(
                f"| {', '.join(g['experiments'])} | {g['task']} | {g['model']} | {setting} | "
                f"{g['preset']['train.lr']:.3g} | {g['train.lr']:.3g} | {steps} | "
                f"{g['init'] or '-'} | {g['edge']} | {scores} |"
            )
        parts += [
            "",
            "\\* the budget rule doubled the preset's steps; † rule 5 raised them to the "
            "standard model's.",
            "",
        ]
    return "\n".join(parts).strip() or "(no scale tuned yet)"


def _steps_mark(group: dict[str, Any]) -> str:
    """How a tuned-presets group's budget came to differ from its preset's: doubled by the
    budget rule (*) or raised to the standard model's by rule 5 (†)."""
    if raised_budget(group):
        return "†"
    return "" if group["steps"] == group["preset"]["train.steps"] else "*"


def _beside(
    out: Path,
    claims: dict[str, Any],
    other: Path,
    reference: dict[str, Any],
    labels: tuple[str, str],
) -> list[str]:
    """A claim-by-claim table of two reproductions, ``reference`` (column ``labels[0]``)
    first and ``claims`` (``labels[1]``) second, a changed verdict in bold."""
    before = {c["id"]: c for c in reference["claims"]}
    first, second = labels
    lines = [
        f"`results/{out.name}` ({_rates(claims)}, seeds {_seeds(claims)}) beside "
        f"`results/{other.name}` ({_rates(reference)}, seeds {_seeds(reference)}), "
        f"{claims['scale']}:",
        "",
        f"| claim | {first} | {second} | measured, {first} | measured, {second} |",
        "|---|---|---|---|---|",
    ]
    for claim in claims["claims"]:
        was = before.get(claim["id"], {"verdict": NOT_RUN, "measured": {}})
        moved = "**" if was["verdict"] != claim["verdict"] else ""
        lines.append(
            f"| {claim['id']} | {was['verdict']} | {moved}{claim['verdict']}{moved} | "
            f"{format_measurements(was['measured'])} | "
            f"{format_measurements(claim['measured'])} |"
        )
    return [*lines, ""]


def tuned_against_untuned() -> str:
    """docs/tuning.md: each reproduction under tuned presets beside the untuned one of the
    same scale, seeds and construction, claim by claim."""
    outputs = {out: _json(out / "claims.json") for out in _whole_reproductions()}
    lines = []
    for out, tuned in outputs.items():
        if _rates(tuned) == "task presets":
            continue
        same = [
            other
            for other, claims in outputs.items()
            if _rates(claims) == "task presets"
            and (claims["scale"], _seeds(claims), _construction(claims))
            == (tuned["scale"], _seeds(tuned), _construction(tuned))
            and (other / "timing.json").is_file()
        ]
        if same:
            labels = ("task presets", "tuned")
            lines += _beside(out, tuned, same[-1], outputs[same[-1]], labels)
    return "\n".join(lines).strip() or "(no tuned reproduction committed yet)"


def fresh_seeds() -> str:
    """docs/tuning.md: each reproduction on fresh seeds under tuned presets beside the one on
    the seeds its rules and presets were chosen with (same scale, rates and construction)."""
    outputs = {out: _json(out / "claims.json") for out in _whole_reproductions()}
    lines = []
    for out, fresh in outputs.items():
        if _rates(fresh) == "task presets" or not fresh.get("confirmed_on_seeds"):
            continue
        seen = [
            other
            for other, claims in outputs.items()
            if not claims.get("confirmed_on_seeds")
            and (claims["scale"], _rates(claims), _construction(claims), _presets_label(other))
            == (fresh["scale"], _rates(fresh), _construction(fresh), _presets_label(out))
        ]
        if seen:
            labels = ("seen seeds", "fresh seeds")
            lines += _beside(out, fresh, seen[-1], outputs[seen[-1]], labels)
            lines += [f"Confirmed on the fresh seeds: {_confirmed(fresh)}.", ""]
    return "\n".join(lines).strip() or "(no tuned reproduction on fresh seeds committed yet)"


def _moved_with_tuning(untuned: list[str], tuned: str) -> str:
    """The pre-registered reading of a tuned run on fresh seeds beside untuned runs on other
    seeds (docs/tuning.md, `--scale small`): a verdict moved with the tuning only where every
    untuned seed set that judged the claim agrees and the tuned run differs from them. An
    inconclusive verdict (the reading rules of 2026-12-01) judged nothing, as no reference did."""
    judged = set(untuned) - {NOT_RUN, NO_REFERENCE, INCONCLUSIVE}
    if tuned in (NO_REFERENCE, INCONCLUSIVE):
        return f"{tuned}: no reading"
    if not judged or tuned == NOT_RUN:
        return "-"
    if len(judged) > 1:
        return "the untuned seed sets disagree: no cause"
    return "unchanged" if judged == {tuned} else "moved with the tuning"


def tuned_beside_untuned_seeds(scale: str = "small") -> str:
    """docs/tuning.md: each reproduction of ``scale`` under tuned presets on fresh seeds
    beside the untuned ones of the same scale and construction on other seeds, claim by
    claim, with the pre-registered reading of what moved."""
    outputs = {out: _json(out / "claims.json") for out in _whole_reproductions()}
    lines = []
    for out, tuned in outputs.items():
        fresh = tuned.get("confirmed_on_seeds")
        if tuned["scale"] != scale or _rates(tuned) == "task presets" or not fresh:
            continue
        untuned = [
            other
            for other, claims in outputs.items()
            if _rates(claims) == "task presets"
            and claims["scale"] == scale
            and _construction(claims) == _construction(tuned)
            and _seeds(claims) != _seeds(tuned)
        ]
        if not untuned:
            continue
        columns = [f"untuned, seeds {_seeds(outputs[other])}" for other in untuned]
        columns.append(f"tuned, seeds {_seeds(tuned)}")
        names = ", ".join(f"`results/{other.name}`" for other in untuned)
        lines += [
            f"`results/{out.name}` ({_rates(tuned)}) beside {names} (task presets), {scale}:",
            "",
            f"| claim | {' | '.join(columns)} | reading | measured, tuned |",
            "|---|" + "---|" * (len(columns) + 2),
        ]
        before = [_verdicts(outputs[other]) for other in untuned]
        for claim in tuned["claims"]:
            was = [verdicts.get(claim["id"], NOT_RUN) for verdicts in before]
            reading = _moved_with_tuning(was, claim["verdict"])
            lines.append(
                f"| {claim['id']} | {' | '.join(was)} | {claim['verdict']} | {reading} | "
                f"{format_measurements(claim['measured'])} |"
            )
        lines += ["", f"Confirmed on the fresh seeds: {_confirmed(tuned)}.", ""]
    return "\n".join(lines).strip() or (
        f"(no tuned `{scale}` reproduction on fresh seeds committed yet)"
    )
