"""The figures that README.md and docs/ quote from the committed reproductions in results/.

Each figure sits in a block between ``<!-- figures:NAME -->`` and ``<!-- /figures:NAME -->``,
and its text is what ``BLOCKS[NAME]`` makes from the result files. Running this file rewrites
every block; ``--check`` rewrites nothing and exits 1 naming each block whose text differs
from its files (``tests/test_doc_figures.py`` runs it in CI). A figure typed by hand inside a
block therefore fails the suite until it agrees with the file it names.

    python tools/doc_figures.py           # regenerate the blocks
    python tools/doc_figures.py --check   # what CI runs
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import math
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mixit import litmus, suite
from mixit.cli import run_tool
from mixit.cli.options import OneLineParser
from mixit.compare import format_table, judged_again, raised_budget
from mixit.experiments.base import INCONCLUSIVE, NO_REFERENCE, NOT_RUN, mean_std
from mixit.experiments.claims import CLAIMS
from mixit.experiments.verdicts import format_measurements
from mixit.experiments.width import INIT_STD
from mixit.experiments.width_reading import reading
from mixit.litmus import VERDICTS
from mixit.results import read_results_csv
from mixit.tasks import TASKS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
# Where a reproduction's verdicts under the rules it was first judged by are kept, beside the
# claims.json that `reproduce --no-train` wrote under the current rules.
OLD_RULES = "claims-old-rules.json"
# The verdicts before the rule that a claim whose reference did not learn gets none.
BEFORE_NO_REFERENCE = "claims-before-no-reference.json"
# Where an output judged again under the reading rules of #69 keeps its verdicts before them.
BEFORE_READING_RULES = "claims-before-reading-rules.json"
CLAIM_IDS = [f"C{i}" for i in range(1, 13)]


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _outputs() -> list[Path]:
    """Every committed output that judged claims, in name order. An output whose claims are
    all "not run" judged none (``reproduce width`` writes such a file) and is left out, or it
    would pose as a reproduction of its scale and seeds."""
    return sorted(
        path.parent
        for path in RESULTS.glob("*/claims.json")
        if any(claim["verdict"] != NOT_RUN for claim in _json(path)["claims"])
    )


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


def reproductions() -> str:
    """docs/reproducing.md: every committed reproduction, what it ran and what it found."""
    rows = [
        "| output | scale | construction | seeds | rates | runs trained | training wall time "
        "| rules | reproduced | confirmed on fresh seeds |",
        "|---|---|---|---|---|---:|---|---|---|---|",
    ]
    for out in _outputs():
        claims = _json(out / "claims.json")
        runs, wall = _training(out)
        rows.append(
            f"| `results/{out.name}` | {claims['scale']} | {_construction(claims)} "
            f"| {_seeds(claims)} | {_rates(claims)}{_old_rules(claims)} | {runs} | {wall} "
            f"| {_rules(claims)} "
            f"| {_reproduced(claims)} "
            f"| {_confirmed(claims)} |"
        )
    return "\n".join(rows)


# The README's claim table: the outputs judged on seeds nothing was tuned on, under the
# current rules, one per scale and way of choosing rates.
CONFIRMING = ("tiny-seed100", "tiny-tuned-seed200", "small-seed100", "small-tuned-seed200")


def claim_verdicts() -> str:
    """README: each claim of the paper and its verdict in the outputs on fresh seeds; a
    verdict counted in another output (the same runs) is marked, not repeated."""
    outputs = [RESULTS / name for name in CONFIRMING]
    stored = [_json(out / "claims.json") for out in outputs]
    heads = [f"{c['scale']}, {_rates(c)}{_old_rules(c)}, seeds {_seeds(c)}" for c in stored]
    rows = ["| claim | " + " | ".join(heads) + " |", "|---|" + "---|" * len(outputs)]
    claims = [{c["id"]: c for c in judged["claims"]} for judged in stored]
    for claim_id in CLAIM_IDS:
        topic = claims[0][claim_id]["statement"].split(":")[0].split(" (")[0]
        cells = []
        for judged in claims:
            claim = judged[claim_id]
            shared = claim.get("same_runs_as", "")
            cells.append(claim["verdict"] + (f" (= `{Path(shared).name}`)" if shared else ""))
        rows.append(f"| {claim_id} {topic} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def rejudged() -> str:
    """docs/reproduce.md: each output's verdicts under the rules it was first judged by and
    under the current ones, for the claims either judged."""
    rows = ["| output | " + " | ".join(CLAIM_IDS) + " |", "|---|" + "---|" * len(CLAIM_IDS)]
    short = {"reproduced": "yes", "not reproduced": "no", NO_REFERENCE: "no ref", NOT_RUN: ""}
    short[INCONCLUSIVE] = "inconcl."
    for out in _outputs():
        if not (out / OLD_RULES).is_file():
            continue
        old, new = _verdicts(_json(out / OLD_RULES)), _verdicts(_json(out / "claims.json"))
        cells = []
        for claim in CLAIM_IDS:
            before, after = short[old.get(claim, NOT_RUN)], short[new.get(claim, NOT_RUN)]
            cells.append(after if before == after else f"**{before or '-'} → {after or '-'}**")
        rows.append(f"| `{out.name}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def rejudged_changes() -> str:
    """docs/reproduce.md: each verdict the current rules or labels changed, with what it
    measured before and now."""
    lines = []
    for out in _outputs():
        if not (out / OLD_RULES).is_file():
            continue
        old = {c["id"]: c for c in _json(out / OLD_RULES)["claims"]}
        for claim in _json(out / "claims.json")["claims"]:
            before = old.get(claim["id"], {"verdict": NOT_RUN, "measured": {}})
            if before["verdict"] == claim["verdict"]:
                continue
            measured = format_measurements(claim["measured"])
            was = ""
            if before["measured"] != claim["measured"]:
                was = "; before: " + format_measurements(before["measured"])
            lines.append(
                f"- `{out.name}` {claim['id']}: {before['verdict']} → {claim['verdict']}; "
                f"{measured}{was}"
            )
    return "\n".join(lines) or "(none)"


def no_reference_changes() -> str:
    """docs/reproduce.md: each verdict the no-reference rule took away, in the outputs judged
    again under it (their verdicts before it kept in ``BEFORE_NO_REFERENCE``), with why."""
    rows = ["| output | claim | before | now | why |", "|---|---|---|---|---|"]
    for out in _outputs():
        if not (out / BEFORE_NO_REFERENCE).is_file():
            continue
        before = _verdicts(_json(out / BEFORE_NO_REFERENCE))
        # The judgement under the no-reference rule: claims.json, unless a later rule judged
        # the output again (its verdicts before that kept in BEFORE_READING_RULES).
        later = out / BEFORE_READING_RULES
        for claim in _json(later if later.is_file() else out / "claims.json")["claims"]:
            if before.get(claim["id"], NOT_RUN) == claim["verdict"]:
                continue
            why = "; ".join(claim.get("no_reference", [])) or "-"
            rows.append(
                f"| `{out.name}` | {claim['id']} | {before.get(claim['id'], NOT_RUN)} | "
                f"{claim['verdict']} | {why} |"
            )
    checked = sum((out / BEFORE_NO_REFERENCE).is_file() for out in _outputs())
    changed = len(rows) - 2
    return "\n".join(rows) + f"\n\n{checked} outputs judged again, {changed} verdicts changed."


def reading_rules_changes() -> str:
    """docs/reproduce.md: each verdict the reading rules of #69 changed, in the outputs judged
    again under them (their verdicts before kept in ``BEFORE_READING_RULES``), with why."""
    rows = ["| output | claim | before | now | why |", "|---|---|---|---|---|"]
    judged = [out for out in _outputs() if (out / BEFORE_READING_RULES).is_file()]
    for out in judged:
        before = _verdicts(_json(out / BEFORE_READING_RULES))
        claims = _json(out / "claims.json")
        for claim in claims["claims"]:
            if before.get(claim["id"], NOT_RUN) == claim["verdict"]:
                continue
            why = [*claim.get("unfinished", []), *claim.get("no_reference", [])]
            why += [f"undecided by the seeds: {u}" for u in claim.get("undecided", [])]
            if claim.get("failing") and claim["verdict"] != NO_REFERENCE:
                why.append(f"fails on tasks with a reference: {', '.join(claim['failing'])}")
            rows.append(
                f"| `{out.name}` | {claim['id']} | {before.get(claim['id'], NOT_RUN)} | "
                f"{claim['verdict']} | {'; '.join(why) or '-'} |"
            )
    labels = [f"`{out.name}` ({_presets_label(out)})" for out in judged]
    return (
        "\n".join(rows)
        + f"\n\n{len(judged)} outputs judged again ({', '.join(labels) or 'none'}), "
        f"{len(rows) - 2} verdicts changed."
    )


def _old_rules(claims: dict[str, Any]) -> str:
    """`` (tuned under the old rules)`` for presets tuned before the rules of 2026-12-01,
    which the presets name from then on (``tuned_presets.presets_label``)."""
    presets = claims.get("presets") or ""
    return " (tuned under the old rules)" if presets and "rules of" not in presets else ""


def _presets_label(out: Path) -> str:
    """Which presets an output's verdict runs trained under, for a table of outputs."""
    presets = _json(out / "claims.json").get("presets") or ""
    if not presets:
        return "task presets"
    return "tuned presets" if "rules of" in presets else "presets tuned under the old rules"


def c11_measured() -> str:
    """docs/reproduce.md: C11's measured gains in every output that judged it."""
    rows = [
        "| output | device | construction | MixiT gain | Frozen-QK gain | verdict |",
        "|---|---|---|---:|---:|---|",
    ]
    for out in _outputs():
        claims = _json(out / "claims.json")
        c11 = next(c for c in claims["claims"] if c["id"] == "C11")
        if c11["verdict"] == NOT_RUN:
            continue
        results = out / "throughput" / "results.json"
        device = _json(results)["shape"]["device"] if results.is_file() else "cpu"
        gain = c11["measured"]["gain"]
        built = c11.get("construction") or _construction(claims)
        rows.append(
            f"| `{out.name}` | {device} | {built} | {gain['mixit']:+.1%} "
            f"| {gain['frozen-qk']:+.1%} | {c11['verdict']} |"
        )
    return "\n".join(rows)


def bench() -> str:
    """docs/speed.md: `mixit bench` on the development CPU, one table row per variant and
    shape, from the JSON files in docs/bench/."""
    rows = [
        "| shape | model | tokens/s | MFU | speed-up | FLOP ratio | compiled speed-up |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for bench_run in _benches():
        measured = bench_run["rows"]
        by = {(r["impl"], r["variant"]): r for r in measured}
        base = by["mixit", "standard"]
        shape = (
            f"n={base['n_embd']} L={base['n_layer']} H={base['n_head']} T={base['seq_len']} "
            f"B={base['batch']}"
        )
        for impl, variant, name in _BENCH_ROWS:
            if (impl, variant) not in by:
                continue
            row = by[impl, variant]
            compiled = by.get(("mixit+compile", variant)) if impl == "mixit" else None
            rows.append(
                f"| {shape} | {name} | {row['tokens_per_s']:,.0f} | {row['mfu']:.1%} "
                f"| {row['tokens_per_s'] / base['tokens_per_s']:.2f}x "
                f"| {base['flops_per_token'] / row['flops_per_token']:.2f}x | "
                + (f"{compiled['tokens_per_s'] / base['tokens_per_s']:.2f}x |" if compiled else "|")
            )
            shape = ""
    return "\n".join(rows)


def decode() -> str:
    """docs/speed.md: cached decoding and data generation, from the bench file that measured
    them."""
    measured = next(bench for bench in _benches() if "decode" in bench)
    base = measured["rows"][0]
    rows = [
        f"| model (n={base['n_embd']}, batch {base['batch']}) | decode tokens/s "
        "| cache bytes per token per sequence |",
        "|---|---:|---:|",
    ]
    rows += [
        f"| {r['variant']} | {r['decode_tokens_per_s']:,.0f} | {r['cache_bytes_per_token']:,} |"
        for r in measured["decode"]
    ]
    data = measured["data_seconds_per_100k"]
    rows += [
        "",
        "| task | ms to generate 100k examples |",
        "|---|---:|",
        *(f"| {task} | {1000 * seconds:.0f} |" for task, seconds in data.items()),
    ]
    return "\n".join(rows)


_BENCH_ROWS = (
    ("mixit", "standard", "standard"),
    ("mixit", "frozen-qk", "frozen-qk"),
    ("mixit", "frozen-mlp", "frozen-mlp"),
    ("mixit", "mixit", "mixit"),
    ("hf", "standard", "HF Llama"),
)


def tuning_cost() -> str:
    """docs/tuning.md: what the protocol cost on each task measured by tools/tuning_cost.py,
    and what its halving changed in the choice."""
    lines = []
    for path in sorted((RESULTS / "tuning-cost").glob("*.json")):
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
    embeddings joined the small-output scheme, as tools/init_finding.py reports them."""
    spec = importlib.util.spec_from_file_location(
        "init_finding", ROOT / "tools" / "init_finding.py"
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    parts = []
    for path in sorted(RESULTS.glob("init-finding*/results.json")):
        r = _json(path)
        seeds = f"Seeds {r['seeds'][0]}-{r['seeds'][-1]}, `{path.relative_to(ROOT)}`:"
        parts += [seeds, "", tool.findings(r), ""]
    return "\n".join(parts).strip() or "(not measured yet)"


def tuned_presets() -> str:
    """docs/tuning.md: the tuned presets `reproduce` trains under, per scale, with the
    validation evidence tools/tune_presets.py recorded."""
    from mixit.experiments.tuned_presets import TUNED

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
            f"{len(groups)} groups. The chosen rate "
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
    outputs = {out: _json(out / "claims.json") for out in _outputs()}
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
    outputs = {out: _json(out / "claims.json") for out in _outputs()}
    lines = []
    for out, fresh in outputs.items():
        if _rates(fresh) == "task presets" or not fresh.get("confirmed_on_seeds"):
            continue
        seen = [
            other
            for other, claims in outputs.items()
            if not claims.get("confirmed_on_seeds")
            and (claims["scale"], _rates(claims), _construction(claims))
            == (fresh["scale"], _rates(fresh), _construction(fresh))
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
    inconclusive verdict (the reading rules of #69) judged nothing, as no reference did."""
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
    outputs = {out: _json(out / "claims.json") for out in _outputs()}
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


def _frozen_attention_line(results: dict[str, Any]) -> str:
    """The authors' Frozen-QK at initialisation per width: its logit spread against n sigma^2
    and its uniformity, then and after training (the arithmetic of docs/width.md)."""
    at_init = results["frozen_attention_at_init"]["authors"]
    trained = results["frozen_attention_trained"]["authors"]
    cells = []
    for w, seeds, after in zip(results["widths"], at_init, trained, strict=True):
        spread = [s["logit_spread"] for s in seeds]
        predicted = w * INIT_STD**2
        cells.append(
            f"n = {w}: spread {mean_std(spread)} (n sigma^2 {predicted:.3f}, ratio "
            f"{statistics.mean(spread) / predicted:.2f}), uniformity "
            f"{mean_std([s['uniformity'] for s in seeds])} "
            f"({mean_std([s['uniformity'] for s in after])} trained)"
        )
    return "Frozen-QK (authors) at initialisation: " + "; ".join(cells) + "."


def width_reading() -> str:
    """docs/constructions.md: per claim, whether its verdict moves with width, from each
    committed width output (``reproduce width`` or ``width-depth``; the reading rule of
    docs/width.md), with the authors' frozen attention where the output asked retrieval."""
    parts = []
    for path in sorted(RESULTS.glob("*/width*/results.json")):
        results = _json(path)
        widths = ", ".join(str(w) for w in results["widths"])
        first, last = results["first_seed"], results["first_seed"] + results["seeds"] - 1
        seeds = f"seed {first}" if first == last else f"seeds {first}-{last}"
        tuned = _json(path.parent.parent / "claims.json").get("tune")
        how = "tuned by the protocol" if tuned else "untuned: one rate per series"
        parts += [
            f"`results/{path.parent.parent.name}` (`{path.parent.name}`, widths {widths}, "
            f"{seeds}, {how}):",
            "",
            reading(results),
            "",
        ]
        if "frozen_attention_at_init" in results:
            parts += [_frozen_attention_line(results), ""]
    return "\n".join(parts).strip() or "(no width output committed yet)"


def _verdict_accuracies(output: Path) -> dict[tuple[str, int], list[float]]:
    """(model, width) -> the test accuracies of the verdict runs whose records ``output/runs``
    keeps (``tools/run_records.py``), in seed order; tuning-seed runs are validation scores
    and are left out."""
    found: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for summary_path in sorted(output.glob("runs/*/summary.json")):
        summary = _json(summary_path)
        if summary.get("evaluated_on") != "test":
            continue
        width = _json(summary_path.parent / "config.json")["model"]["n_embd"]
        key = (summary["model"], width)
        found.setdefault(key, []).append((summary["seed"], summary["metrics"]["test_accuracy"]))
    return {key: [value for _, value in sorted(pairs)] for key, pairs in found.items()}


def width_tuning() -> str:
    """docs/width.md: each committed tuning of a width experiment (``tuning.json`` beside a
    ``width*`` report, or kept alone where the pass did not finish): per series and width, the
    protocol's choice, the validation score it rests on, and the verdict runs kept."""
    lines = []
    for path in sorted(RESULTS.glob("*/tuning.json")):
        records = _json(path)  # reproduce's: a list of groups; compare's: a dict by model
        groups = [
            g
            for g in (records if isinstance(records, list) else [])
            if any(e.startswith("width") for e in g["experiments"])
        ]
        if not groups:
            continue
        verdicts = _verdict_accuracies(path.parent)
        lines += [
            f"`results/{path.parent.name}`:",
            "",
            "| width | model | chosen lr | init | edge | steps | validation at the budget "
            "| verdict test accuracy (kept runs, by seed) |",
            "|---:|---|---:|---|---|---:|---:|---|",
        ]
        for group in sorted(groups, key=lambda g: (g["run_overrides"]["model.n_embd"], g["model"])):
            width = group["run_overrides"]["model.n_embd"]
            kept = verdicts.get((group["model"], width), [])
            lines.append(
                f"| {width} | {group['model']} | {group['train.lr']:.3g} | {group['init']} "
                f"| {group['edge']} | {group['steps']:,} | {group['budgets'][-1]['score']:.3f} "
                f"| {' / '.join(f'{v:.3f}' for v in kept) or '-'} |"
            )
        lines.append("")
    return "\n".join(lines).strip() or "(no tuned width output committed yet)"


def width_timing() -> str:
    """docs/width.md: the cost of each committed width output, from the calls its
    ``timing.json`` recorded (a call cut off before its end records nothing) and the runs' own
    training seconds in ``results.csv`` (each output's README says where it ran)."""
    lines = [
        "| output | verdict runs | their training seconds, summed | recorded calls: jobs, "
        "wall time, runs trained |",
        "|---|---:|---:|---|",
    ]
    for path in sorted(RESULTS.glob("*/width*/results.json")):
        output = path.parent.parent
        runs = {
            row["run_dir"]: float(row["train_seconds"])
            for row in read_results_csv(output / "results.csv")
        }
        calls = "; ".join(
            f"{call['jobs']} jobs, {call['train_wall_seconds']:,.0f} s, {call['runs_trained']} runs"
            for call in _json(output / "timing.json")["calls"]
        )
        lines.append(
            f"| `results/{output.name}` | {len(runs)} | {sum(runs.values()):,.0f} s | {calls} |"
        )
    return "\n".join(lines)


def _benches() -> list[dict[str, Any]]:
    """The bench runs in docs/bench/, narrowest model first."""
    runs = [_json(path) for path in (ROOT / "docs" / "bench").glob("*.json")]
    return sorted(runs, key=lambda run: run["rows"][0]["n_embd"])


def source_sizes() -> str:
    """docs/architecture.md: how many modules src/mixit has, those over 300 lines, and its
    longest functions (tests/test_structure.py holds them to 400 and 60)."""
    source = ROOT / "src" / "mixit"
    modules = sorted(source.rglob("*.py"))
    lengths = {path: len(path.read_text().splitlines()) for path in modules}
    functions = []
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                functions.append((size, f"{path.relative_to(source)}:{node.name}"))
    longest = ", ".join(f"`{name}` ({size})" for size, name in sorted(functions)[::-1][:3])
    lines = [
        f"{len(modules)} modules, {sum(lengths.values()):,} lines in all. Longest functions: "
        f"{longest}. Modules over 300 lines:",
        "",
        "| module | lines |",
        "|---|---:|",
    ]
    for path, size in sorted(lengths.items(), key=lambda item: -item[1]):
        if size > 300:
            lines.append(f"| `{path.relative_to(source)}` | {size} |")
    return "\n".join(lines)


# The suites that measured MAD's and Zoology's tasks as their peers define them (#39), and the
# earlier versions of the same tasks they supersede, all at tiny on seeds 0-2.
PEER_SUITE = ROOT / "docs" / "suite" / "peer-tiny.csv"
SUPERSEDED_SUITES = (
    ROOT / "docs" / "suite" / "recall-copying-tiny.csv",
    ROOT / "docs" / "suite" / "fuzzy-compression-tiny.csv",
)
PEER_MODELS = ("standard", "frozen-qk", "mixit")


def _suite_results(paths: tuple[Path, ...]) -> dict[str, dict[str, Any]]:
    """``{task: result}`` from suite results.csv files, each in the shape the litmus reads."""
    rows = [row for path in paths if path.is_file() for row in read_results_csv(path)]
    results: dict[str, dict[str, Any]] = {}
    for task in dict.fromkeys(row["task"] for row in rows):
        mine = sorted((r for r in rows if r["task"] == task), key=lambda r: int(r["seed"]))
        models = {}
        for model in dict.fromkeys(r["model"] for r in mine):
            values = [float(r["value"]) for r in mine if r["model"] == model]
            peer = [
                float(r["peer_value"]) for r in mine if r["model"] == model and r.get("peer_value")
            ]
            models[model] = {
                "model": model,
                "values": values,
                "mean": statistics.fmean(values),
                "peer": peer,
            }
        results[task] = {
            "rows": list(models.values()),
            "higher_is_better": TASKS[task].higher_is_better,
            "chance": statistics.fmean(float(r["chance"]) for r in mine),
            "seeds": sorted({int(r["seed"]) for r in mine}),
            "metric": mine[0]["metric"],
        }
    return results


def _litmus_text(result: dict[str, Any]) -> str:
    tolerance = litmus.DEFAULT_TOLERANCE.get(result["metric"], 0.02)
    judged = litmus.reading(result, tolerance, steps=0)
    if judged.get("no_reference"):
        return "no verdict: " + "; ".join(judged["no_reference"])
    verdicts = {True: "**matches**", False: "**falls short**", None: "**inconclusive**"}
    return ", ".join(
        f"{row['model']} {verdicts[row['matches']]} ({row['difference']:+.3f})"
        for row in judged["rows"]
    )


def peer_tasks() -> str:
    """docs/presets.md: the peer-faithful tasks on 3 seeds beside the versions they supersede,
    each read by the litmus rules as they are now."""
    new, old = _suite_results((PEER_SUITE,)), _suite_results(SUPERSEDED_SUITES)
    if not new:
        return "(not measured yet)"
    lines = [
        "| task (metric) | " + " | ".join(PEER_MODELS) + " | chance | MAD's class-averaged "
        "accuracy | reading | superseded version's reading |",
        "|---|" + "---|" * len(PEER_MODELS) + "---:|---|---|---|",
    ]
    for task, result in new.items():
        models = {row["model"]: row for row in result["rows"]}
        cells = [" ".join(f"{v:.3f}" for v in models[m]["values"]) for m in PEER_MODELS]
        peer = " / ".join(
            f"{statistics.fmean(models[m]['peer']):.3f}" for m in PEER_MODELS if models[m]["peer"]
        )
        before = _litmus_text(old[task]) if task in old else "-"
        lines.append(
            f"| {task} ({result['metric']}) | " + " | ".join(cells) + f" | {result['chance']:.3f} "
            f"| {peer or '-'} | {_litmus_text(result)} | {before} |"
        )
    return "\n".join(lines)


SUITE_VARIANTS = ("frozen-qk", "frozen-mlp", "mixit", "random")
TUNED_SUITES = {
    "suite-llama-tuned": RESULTS / "suite-llama-tuned",
    "suite-gpt2-tuned": RESULTS / "suite-gpt2-tuned",
}
# The same suites by the --arch they ran.
TUNED_ARCH_SUITES = {
    "hf:llama": TUNED_SUITES["suite-llama-tuned"],
    "hf:gpt2": TUNED_SUITES["suite-gpt2-tuned"],
}


def _litmus_cells(compare: dict) -> list[str]:
    """One cell per suite variant: its verdict and mean difference, or, where the standard
    model is no reference, the measured cause in the first cell and the rest left empty."""
    judged = compare["litmus"]
    if judged.get("no_reference"):
        cause = "no reference: " + "; ".join(judged["no_reference"])
        return [cause] + [""] * (len(SUITE_VARIANTS) - 1)
    rows = {row["model"]: row for row in judged["rows"]}
    return [
        f"{VERDICTS[rows[m]['matches']]} ({rows[m]['difference']:+.3f})" for m in SUITE_VARIANTS
    ]


def _tuned_suite(folder: Path) -> str:
    """A tuned suite's litmus verdicts per task, from its committed compare.json files: each
    variant's verdict and mean difference, or the measured cause where the standard model is
    no reference."""
    lines = [
        "| task | initialisation | " + " | ".join(SUITE_VARIANTS) + " |",
        "|---|---|" + "---|" * len(SUITE_VARIANTS),
    ]
    tasks = sorted(folder.glob("*/compare.json"))
    compares = [_json(path) for path in tasks]
    for compare in compares:
        init = compare["tuned"]["standard"]["init"]
        lines.append(f"| {compare['task']} | {init} | " + " | ".join(_litmus_cells(compare)) + " |")
    references = sum(not compare["litmus"].get("no_reference") for compare in compares)
    costs = [suite.logged_cost(path.parent / "runs") for path in tasks]
    devices = sorted(set().union(*(cost["devices"] for cost in costs)))
    lines += [
        "",
        f"The standard model is a reference on {references} of {len(tasks)} tasks. Training "
        f"seconds logged, tuning trials included: {sum(c['train_seconds'] for c in costs):,.0f} "
        f"over {sum(c['runs'] for c in costs)} runs ({', '.join(devices)}).",
    ]
    return "\n".join(lines)


# Modular addition in each tuned --arch suite at the preset's 1 layer and at the 2 layers the
# issue names, measured apart (docs/tuning.md, "Pre-registered: modular addition at 2 layers").
MODADD_DEPTH = {
    arch: (folder, RESULTS / f"{folder.name}-modadd-2layer")
    for arch, folder in TUNED_ARCH_SUITES.items()
}


def _cell(row: dict[str, Any] | None) -> str:
    return "-" if row is None else f"{VERDICTS[row['matches']]} ({row['difference']:+.3f})"


def suites_rejudged() -> str:
    """docs/reproduce.md: every committed tuned suite's verdicts, as judged when it ran and
    under the reading rules of #69 (``compare.judged_again``: nothing retrained), with why
    each changed verdict moved."""
    lines = [
        "| suite | task | " + " | ".join(SUITE_VARIANTS) + " |",
        "|---|---|" + "---|" * len(SUITE_VARIANTS),
    ]
    reasons, changed, total = [], 0, 0
    for name, folder in TUNED_SUITES.items():
        for path in sorted(folder.glob("*/compare.json")):
            before = _json(path)
            after = judged_again(before, path.parent)
            cells = []
            old = {row["model"]: row for row in before["litmus"].get("rows", [])}
            new = {row["model"]: row for row in after["litmus"].get("rows", [])}
            for model in SUITE_VARIANTS:
                was = _cell(old.get(model)) if old else "no reference"
                now = _cell(new.get(model)) if new else "no reference"
                total += 1
                if was == now:
                    cells.append(now)
                    continue
                changed += 1
                cells.append(f"{was} → **{now}**")
                why = (new.get(model) or {}).get("why")
                if why:
                    reasons.append(f"{name} {before['task']} {model}: {why}")
            if not old and new:
                refused = "; ".join(before["litmus"]["no_reference"])
                reasons.append(
                    f"{name} {before['task']}: a reference now (was refused: {refused}); the "
                    "reference's own spread refuses nothing under the paired reading"
                )
            if "does_not_discriminate" in after["litmus"]:
                reasons.append(f"{name} {before['task']}: does not discriminate")
            lines.append(f"| {name} | {before['task']} | " + " | ".join(cells) + " |")
    lines += ["", f"{changed} of {total} readings changed."]
    if reasons:
        lines += [
            "",
            "Why, where the new reading is inconclusive or the task does not discriminate:",
        ]
        lines += [f"- {reason}" for reason in reasons]
    return "\n".join(lines)


def retrieval_init_tuned() -> str:
    """docs/tuning.md: the standard model's tuning trials on retrieval in each tuned --arch
    suite, per initialisation and rate (the validation score at the last rung the trial
    reached), beside the reference's score on the verdict seeds: what the initialisation
    finding's fixed-rate runs could not show."""
    lines = [
        "| architecture | initialisation | validation per rate (lr: score, step) | chosen | "
        "verdict seeds |",
        "|---|---|---|---|---|",
    ]
    for arch, folder in TUNED_ARCH_SUITES.items():
        compare = _json(folder / "retrieval" / "compare.json")
        tuned = compare["tuned"]["standard"]
        standard = next(row for row in compare["rows"] if row["model"] == "standard")
        for init in ("own", "small-output"):
            trials = sorted(
                (lr, score, step) for lr, i, score, step in tuned["validation"] if i == init
            )
            cells = ", ".join(f"{lr:.2g}: {score:.3f} ({step:,})" for lr, score, step in trials)
            chosen = init == tuned["init"]
            verdict = f"{standard['mean']:.3f} ± {standard['std']:.3f}" if chosen else "-"
            lr = f"{tuned['train.lr']:.2g}" if chosen else "-"
            lines.append(f"| {arch} | {init} | {cells} | {lr} | {verdict} |")
    return "\n".join(lines)


def modadd_depth() -> str:
    """Modular addition's tuned verdicts per architecture and depth: the standard model's
    score over its seeds, its chosen initialisation and rate, and each variant's verdict; the
    depth is read from the runs' own config.json."""
    lines = [
        "| architecture | layers | initialisation | standard (rate) | "
        + " | ".join(SUITE_VARIANTS)
        + " |",
        "|---|---:|---|---|" + "---|" * len(SUITE_VARIANTS),
    ]
    for arch, folders in MODADD_DEPTH.items():
        for folder in folders:
            task = folder / "modular-addition"
            compare = _json(task / "compare.json")
            layers = _json(next((task / "runs").glob("*/config.json")))["model"]["n_layer"]
            tuned = compare["tuned"]["standard"]
            standard = next(row for row in compare["rows"] if row["model"] == "standard")
            score = f"{standard['mean']:.3f} ± {standard['std']:.3f} ({tuned['train.lr']:.2g})"
            lines.append(
                f"| {arch} | {layers} | {tuned['init']} | {score} | "
                + " | ".join(_litmus_cells(compare))
                + " |"
            )
    return "\n".join(lines)


# Pre-registered in docs/tuning.md: k-hop at `small` retrained at the preset's rate for the
# tuned budget, beside the verdict runs at their tuned rates on the same seeds.
C2_BUDGET, C2_TUNED, C2_BAR = RESULTS / "c2-budget-small", RESULTS / "small-tuned-seed200", 0.90


def c2_budget() -> str:
    """docs/tuning.md: per model, k-hop test accuracy seed by seed at its tuned rate and at
    the preset's, the paired difference, and the reading the rule written before the runs
    gives."""
    if not (C2_BUDGET / "compare.json").is_file():
        return "(not run yet)"
    compare = _json(C2_BUDGET / "compare.json")
    rate = float(compare["overrides"]["train.lr"])
    tuned = {
        (row["model"], int(row["seed"])): row
        for row in read_results_csv(C2_TUNED / "results.csv")
        if row["task"] == "khop"
    }
    lines = [
        f"| model | tuned rate | at the tuned rate | at {rate:g} | tuned − {rate:g}, paired | "
        "reading |",
        "|---|---:|---|---|---|---|",
    ]
    for row in compare["rows"]:
        seeds, at_preset = compare["seeds"], row["values"]
        at_tuned = [float(tuned[(row["model"], seed)]["value"]) for seed in seeds]
        gaps = [t - p for t, p in zip(at_tuned, at_preset, strict=True)]
        spread = statistics.stdev(gaps) if len(gaps) > 1 else 0.0
        carried = statistics.mean(at_preset) >= C2_BAR
        reading = (
            f"the budget alone carries it over {C2_BAR:.2f}"
            if carried
            else "the tuned rate was needed as well"
        )
        if abs(statistics.mean(gaps)) <= spread:
            reading += "; no difference between the rates"
        cells = [", ".join(f"{v:.3f}" for v in values) for values in (at_tuned, at_preset)]
        lines.append(
            f"| {row['model']} | {float(tuned[(row['model'], seeds[0])]['lr']):.2g} | "
            f"{cells[0]} (mean {statistics.mean(at_tuned):.3f}) | "
            f"{cells[1]} (mean {statistics.mean(at_preset):.3f}) | "
            f"{statistics.mean(gaps):+.3f} ± {spread:.3f} | {reading} |"
        )
    return "\n".join(lines) + f"\n\nSeeds {', '.join(map(str, compare['seeds']))}."


def transcript(folder: str) -> str:
    """README: what ``mixit compare`` printed for a committed comparison, as its table is
    printed from ``compare.json`` (``compare.format_table``), as an indented code block."""
    result = _json(RESULTS / folder / "compare.json")
    lines = [f"    {line}".rstrip() for line in format_table(result).splitlines()]
    return "\n" + "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[], str]] = {
    "demo": functools.partial(transcript, "demo-retrieval"),
    "custom-example": functools.partial(transcript, "custom-reverse"),
    "reproductions": reproductions,
    "claim-verdicts": claim_verdicts,
    "rejudged": rejudged,
    "rejudged-changes": rejudged_changes,
    "c11-measured": c11_measured,
    "c2-budget": c2_budget,
    "no-reference": no_reference_changes,
    "reading-rules": reading_rules_changes,
    "bench": bench,
    "decode": decode,
    "tuning-cost": tuning_cost,
    "init-finding": init_finding,
    "tuned-presets": tuned_presets,
    "tuned-against-untuned": tuned_against_untuned,
    "fresh-seeds": fresh_seeds,
    "small-tuned": tuned_beside_untuned_seeds,
    "width-reading": width_reading,
    "width-tuning": width_tuning,
    "width-timing": width_timing,
    "source-sizes": source_sizes,
    "peer-tasks": peer_tasks,
    "modadd-depth": modadd_depth,
    "retrieval-init-tuned": retrieval_init_tuned,
    "suites-rejudged": suites_rejudged,
    **{name: functools.partial(_tuned_suite, folder) for name, folder in TUNED_SUITES.items()},
}
DOCUMENTS = (
    ROOT / "README.md",
    ROOT / "docs" / "reproducing.md",
    ROOT / "docs" / "speed.md",
    ROOT / "docs" / "suites.md",
    ROOT / "docs" / "your-task.md",
    ROOT / "docs" / "reproduce.md",
    ROOT / "docs" / "tuning.md",
    ROOT / "docs" / "architecture.md",
    ROOT / "docs" / "presets.md",
    ROOT / "docs" / "constructions.md",
    ROOT / "docs" / "width.md",
)
BLOCK = re.compile(r"(<!-- figures:([a-z0-9-]+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.DOTALL)


def render(text: str) -> str:
    """``text`` with every block's body made anew from the result files."""

    def body(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in BLOCKS:
            raise KeyError(f"unknown figures block '{name}'; known: {', '.join(BLOCKS)}")
        return f"{match.group(1)}{BLOCKS[name]()}\n{match.group(4)}"

    return BLOCK.sub(body, text)


# Blocks counted from the source tree rather than read from results/: regenerated with the
# others, but not held to the tree in CI, where every edit of src/ would stale them (the rules
# they describe are held by tests/test_structure.py).
SNAPSHOTS = ("source-sizes",)


def stale(documents: tuple[Path, ...] | None = None) -> list[str]:
    """``FILE: block NAME`` for each block whose text differs from what its files give, in
    ``documents`` (default: ``DOCUMENTS``), snapshots of the source tree aside."""
    found = []
    for document in documents or DOCUMENTS:
        text = document.read_text()
        fresh = {m.group(2): m.group(3) for m in BLOCK.finditer(render(text))}
        for match in BLOCK.finditer(text):
            if match.group(2) not in SNAPSHOTS and match.group(3) != fresh[match.group(2)]:
                found.append(f"{document}: block {match.group(2)}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="doc_figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for line in found:
            print(f"stale figures: {line} (run python tools/doc_figures.py)", file=sys.stderr)
        return 1 if found else 0
    for document in DOCUMENTS:
        document.write_text(render(document.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("doc_figures", main))
