"""``OUT/claims.json`` and ``claims.md``: this reproduction's verdicts merged with those an
earlier call wrote under the same setting, and each claim's verdicts by seed range."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import JSONObject, write_json, write_text
from mixit.paper.claims import CLAIMS
from mixit.study.claim import (
    INCONCLUSIVE,
    NO_REFERENCE,
    NOT_REPRODUCED,
    NOT_RUN,
    OVERRIDES,
    SEEDS,
    TUNED_ON_SEEDS,
    Claim,
    read_claims,
)
from mixit.study.measures import seeds_label, seeds_text
from mixit.study.setting import Setting
from mixit.study.words import Verdict
from mixit.tasks.base import PLATEAU, PLATEAU_KEY


def record_claims(
    out: Path,
    judged: list[Claim],
    setting: Setting,
    seeds: range,
    ablation_notes: Mapping[str, str],
) -> list[Claim]:
    """Merge this call's verdicts into OUT/claims.json (and .md), each claim carrying its
    verdict on every seed range judged so far and its ``ablation_notes`` entry."""
    claims = merge_claims(out, judged, setting)
    history = verdicts_by_seeds(out, setting)
    for merged_claim in claims:
        merged_claim.by_seeds = history.get(merged_claim.id, {})
        if merged_claim.verdict != NOT_RUN:
            merged_claim.by_seeds[seeds_label(seeds)] = merged_claim.verdict
    write_claims(out, claims, setting, ablation_notes)
    return claims


def earlier_claims(out: Path, setting: Setting) -> dict[str, JSONObject]:
    """The claims an earlier ``reproduce`` under the same ``setting`` wrote to
    ``OUT/claims.json``, by id. Verdicts judged at another scale, with other seeds, other
    overrides or learning rates chosen otherwise are not carried over (claims.md names one
    setting); an unreadable file counts as no claims."""
    stored = _stored_claims(out)
    return {c["id"]: c for c in stored["claims"]} if setting.same_as(stored) else {}


def verdicts_by_seeds(out: Path, setting: Setting) -> dict[str, dict[str, str]]:
    """``{claim id: {seeds label: verdict}}`` from ``OUT/claims.json`` when it was judged under
    ``setting`` up to the seeds; {} otherwise."""
    stored = _stored_claims(out)
    if not setting.same_as(stored, but_seeds=True):
        return {}
    return {c["id"]: dict(c.get("by_seeds", {})) for c in stored["claims"]}


def _stored_claims(out: Path) -> JSONObject:
    """OUT/claims.json, or a record no setting matches when it is missing or unreadable."""
    path = out / "claims.json"
    try:
        return read_claims(path, "") if path.is_file() else {"claims": []}
    except UsageError:
        return {"claims": []}


def merge_claims(out: Path, judged: Sequence[Claim], setting: Setting) -> list[Claim]:
    """The claims of this reproduction, with verdicts from earlier ones under the same
    setting kept for the others."""
    earlier = earlier_claims(out, setting)
    new = {claim.id: claim for claim in judged}
    merged = []
    for claim in CLAIMS:
        if claim.id in new:
            kept = earlier.get(claim.id, {})
            if kept.get("runs") == new[claim.id].runs:  # still the runs another output read
                new[claim.id].same_runs_as = kept.get("same_runs_as", "")
            merged.append(new[claim.id])
        elif claim.id in earlier:
            merged.append(Claim.from_json(earlier[claim.id]))
        else:
            merged.append(Claim(claim.id, claim.statement, claim.rule, {}, NOT_RUN))
    return merged


def preset_plateau(key: str, value: object) -> bool:
    """Whether an override is the plateau rule every preset has (no change of the user's)."""
    return key == PLATEAU_KEY and str(value) == str(PLATEAU)


def changed_settings_note(setting: Setting) -> str:
    """Sentences naming the user's overrides and tuned hyperparameters, and how the learning
    rates were chosen when not at the task presets; '' for none of these."""
    changed = [f"`{k}={v}`" for k, v in setting.overrides.items() if not preset_plateau(k, v)]
    if setting.tuned:
        changed.append(f"the tuned hyperparameters of `{setting.tuned}`")
    sentences = [f"Every run trained with {', '.join(changed)}, not the scale's settings."]
    if setting.presets:  # the settings the experiments print are the task presets' own
        sentences.append(
            f"Learning rates and budgets: the scale's presets, {setting.presets}, as "
            "docs/tuning.md describes; settings a report lists are the task presets' own, and "
            "results.csv gives each run's rate and steps."
        )
    if setting.tune:
        sentences.append(
            "Each group of runs was tuned first (docs/tuning.md); OUT/tuning.json records "
            "the choices."
        )
    return " ".join(sentences[0 if changed else 1 :])


def tuning_caption(setting: Setting, covered: bool = True) -> str:
    """How the runs' learning rates were chosen, for a figure's title; ``covered``: whether the
    scale's tuned presets cover the experiment's runs (``Experiment.tuned_presets``)."""
    if setting.tune:
        return "tuned here"
    if setting.tuned:
        return f"rates of {Path(setting.tuned).name}"
    return "tuned presets" if setting.presets and covered else "untuned"


def _not_counted(claims: Sequence[Claim]) -> str:
    """Sentences naming the claims judged but not counted: no reference, inconclusive (cut off
    while rising, or undecided by the seeds), or counted in another committed output."""
    refused = [claim.id for claim in claims if claim.verdict == NO_REFERENCE]
    without = (
        f" No verdict for {', '.join(refused)}: a reference MixiT is read against did not "
        "learn its task on every seed, so the comparison means nothing."
        if refused
        else ""
    )
    cut_off = [c.id for c in claims if c.verdict == INCONCLUSIVE and c.unfinished]
    undecided = [c.id for c in claims if c.verdict == INCONCLUSIVE and not c.unfinished]
    if cut_off:
        without += (
            f" Inconclusive: {', '.join(cut_off)}, whose rules failed or were undecided on runs "
            "cut off while still rising; a claim fails only on runs trained to the end."
        )
    shared = [f"{c.id} ({c.same_runs_as})" for c in claims if c.same_runs_as]
    if shared:
        without += (
            f" Judged on the same runs as another committed output, so counted there, not "
            f"here: {', '.join(shared)}."
        )
    if undecided:
        without += (
            f" Inconclusive: {', '.join(undecided)}, whose seeds leave a comparison of the rule "
            "undecided (seeds on both sides of its margin, or an interval across it)."
        )
    return without


def _left_aside(claims: Sequence[Claim]) -> str:
    """What of the paper's claims the headline's count leaves out, and why, or nothing."""
    not_run = sum(claim.verdict == NOT_RUN for claim in claims)
    shared = sum(bool(claim.same_runs_as) for claim in claims)
    parts = [f"{not_run} not run"] * bool(not_run) + [f"{shared} counted elsewhere"] * bool(shared)
    return f" (of the {len(claims)}: {', '.join(parts)})" if parts else ""


def claims_markdown(claims: Sequence[Claim], setting: Setting) -> str:
    ran = [claim for claim in claims if claim.verdict != NOT_RUN and not claim.same_runs_as]
    counted = sum(claim.verdict == Verdict.REPRODUCED for claim in ran)
    confirmed = sum(claim.confirmed() is True and not claim.same_runs_as for claim in claims)
    changed = changed_settings_note(setting)
    fresh = setting.record()["confirmed_on_seeds"]
    seen = [claim.id for claim in claims if set(fresh) & set(claim.seen_seeds)]
    confirmation = (
        f"a confirmation on seeds {format_measured(fresh)}, which nothing was tuned on"
        + (f", except for {', '.join(seen)}, whose rules came after these seeds" if seen else "")
        if fresh
        else "on the seeds the settings were chosen on, so they confirm nothing"
    )
    without = _not_counted(claims)
    lines = [
        f"# Claims of the paper, checked at `{setting.scale}` scale",
        "",
        f"{counted} of {len(ran)} claims run reproduced{_left_aside(claims)}, each comparison "
        f"read seed by seed and on its 95 % interval, over "
        f"{seeds_text(setting.seed_range)}.{without} "
        "Settings and rules were "
        f"chosen on seeds {format_measured(list(TUNED_ON_SEEDS))}; these "
        f"verdicts are {confirmation} (docs/reproduce.md says which rules came after results). "
        f"Over every set of seeds this output was reproduced on, {confirmed} claim(s) are "
        "confirmed: reproduced on seeds nothing was tuned on.",
        "",
    ]
    if changed:
        lines += [changed, ""]
    for claim in claims:
        measured = format_measurements(claim.measured) or "-"
        lines += [
            f"## {claim.id}: {claim.verdict}",
            "",
            f"- **Claim:** {claim.statement}",
            f"- **Rule:** {claim.rule}",
            f"- **Measured:** {measured}",
            *_reference_lines(claim),
            *_construction_line(claim),
            *([f"- **Ablation:** {claim.ablation}"] if claim.ablation else []),
            *([f"- **By seeds:** {_by_seeds(claim)}"] if claim.by_seeds else []),
            "",
        ]
    return "\n".join(lines)


def _reference_lines(claim: Claim) -> list[str]:
    lines = []
    if claim.no_reference:
        lines.append(f"- **No reference:** {'; '.join(claim.no_reference)}")
        if claim.verdict != NO_REFERENCE:
            lines.append(f"- **Failed on tasks with a reference:** {', '.join(claim.failing)}")
    elif claim.failing and claim.verdict == NOT_REPRODUCED:
        lines.append(f"- **Failed on:** {', '.join(claim.failing)} (every task must hold)")
    if claim.unfinished:
        lines.append(f"- **Cut off while still rising:** {'; '.join(claim.unfinished)}")
    if claim.undecided:
        lines.append(f"- **Undecided by the seeds:** {'; '.join(claim.undecided)}")
    if claim.same_runs_as:
        lines.append(f"- **The same runs as {claim.same_runs_as}**, which counts this claim")
    if lines and claim.rule_verdict:
        lines.append(f"- **The rule alone:** {claim.rule_verdict}")
    return lines


def _construction_line(claim: Claim) -> list[str]:
    if OVERRIDES in claim.independent_of:
        return ["- **Construction:** independent of the construction and the overrides"]
    return [f"- **Construction:** `{claim.construction}`"] if claim.construction else []


def _by_seeds(claim: Claim) -> str:
    """``0-2 reproduced; 100-102 not reproduced; not confirmed``."""
    verdicts = "; ".join(f"{label} {verdict}" for label, verdict in claim.by_seeds.items())
    if SEEDS in claim.independent_of:
        return (
            f"{verdicts}; independent of the seeds (the same computation on any seeds), so "
            "never confirmed on fresh seeds"
        )
    if claim.seen_seeds:
        seen = ", ".join(seeds_label(r) for r in _ranges(claim.seen_seeds))
        verdicts += f"; its rule was written after seeds {seen} were seen, so they confirm nothing"
    confirmed = claim.confirmed()
    state = {None: "not judged on fresh seeds yet", True: "confirmed", False: "not confirmed"}
    if confirmed is None and NO_REFERENCE in claim.fresh_verdicts():
        return f"{verdicts}; no reference on the fresh seeds, so not confirmed"
    if confirmed is None and INCONCLUSIVE in claim.fresh_verdicts():
        return f"{verdicts}; inconclusive on the fresh seeds, so not confirmed"
    return f"{verdicts}; {state[confirmed]}"


def _ranges(seeds: Sequence[int]) -> list[range]:
    """Runs of consecutive seeds: [0, 1, 2, 100, 101] -> [range(0, 3), range(100, 102)]."""
    runs: list[range] = []
    for seed in sorted(seeds):
        if runs and runs[-1].stop == seed:
            runs[-1] = range(runs[-1].start, seed + 1)
        else:
            runs.append(range(seed, seed + 1))
    return runs


def format_measurements(measured: Mapping[str, Any]) -> str:
    """``standard = 0.9972, mixit = 0.2807``: a claim's measured numbers as claims.md gives
    them."""
    return ", ".join(f"{k} = {format_measured(v)}" for k, v in measured.items())


def format_measured(value: Any) -> str:
    """A measured value as claims.md writes it: floats to 4 significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_measured(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(format_measured(v) for v in value) + "]"
    return str(value)


def write_claims(
    out: Path,
    claims: Sequence[Claim],
    setting: Setting,
    ablation_notes: Mapping[str, str],
) -> None:
    """``OUT/claims.json`` and ``claims.md``, each claim with what an ablation at the same
    scale and seeds says its verdict turns on (``ablation_notes`` by claim id, from
    ``ablation_report.dependence``)."""
    for claim in claims:
        claim.ablation = ablation_notes.get(claim.id, "")
    write_json(out / "claims.json", {**setting.record(), "claims": [c.to_json() for c in claims]})
    write_text(out / "claims.md", claims_markdown(claims, setting))
