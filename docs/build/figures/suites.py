"""Figures of docs/suites.md and docs/presets.md: the suites and the peer tasks."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from figures import common
from figures.common import ROOT, _json
from mixit.study import litmus, suite
from mixit.study.judge import judged_again
from mixit.study.results import read_results_csv
from mixit.tasks import TASKS
from mixit.tuning.rules import validation_points

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
    "suite-llama-tuned": common.RESULTS / "suite-llama-tuned",
    "suite-gpt2-tuned": common.RESULTS / "suite-gpt2-tuned",
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
    return [litmus.verdict_words(rows[m]) for m in SUITE_VARIANTS]


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
    records = common.unpacked(folder)
    costs = [suite.logged_cost(records / path.parent.name / "runs") for path in tasks]
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
    arch: (folder, common.RESULTS / f"{folder.name}-modadd-2layer")
    for arch, folder in TUNED_ARCH_SUITES.items()
}


def _cell(row: dict[str, Any] | None) -> str:
    return "-" if row is None else litmus.verdict_words(row)


# The pass that judged every committed output again under the reading rules of 2026-12-06: the
# suites' readings before it, as recorded and as the rules of 2026-12-01 read them.
PASSED = common.PASSED
RULES_BEFORE = "rules-2026-12-01"


def _passed() -> dict[str, Any]:
    """``{suite: {task: {"recorded": litmus, RULES_BEFORE: litmus}}}`` from ``PASSED``."""
    return _json(PASSED)["suites"] if PASSED.is_file() else {}


def suites_rejudged() -> str:
    """docs/reproduce.md: every committed tuned suite's verdicts, as judged when it ran and
    under the reading rules of 2026-12-01 (``judge.judged_again``: nothing retrained), with why
    each changed verdict moved; a suite judged again since reads both from ``PASSED``."""
    lines = [
        "| suite | task | " + " | ".join(SUITE_VARIANTS) + " |",
        "|---|---|" + "---|" * len(SUITE_VARIANTS),
    ]
    reasons, changed, total = [], 0, 0
    for name, folder in TUNED_SUITES.items():
        for path in sorted(folder.glob("*/compare.json")):
            before = _json(path)
            after = judged_again(before, common.unpacked(folder) / path.parent.name)
            kept = _passed().get(name, {}).get(path.parent.name)
            if kept:  # judged again since: the readings of that pass, as it read them
                before = {**before, "litmus": kept["recorded"]}
                after = {**after, "litmus": kept[RULES_BEFORE]}
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


# The suites trained again under the tuning rules of #69 (one budget per task, each model's own
# initialisation), each beside the suite it replaces (``mixit suite --beside``).
RETRAINED_SUITES = {
    "suite-llama-rules": "suite-llama-tuned",
    "suite-gpt2-rules": "suite-gpt2-tuned",
}


def suites_retrained() -> str:
    """docs/reproduce.md: each retrained suite's verdicts beside the earlier suite's, as that
    suite recorded them and as the reading rules of 2026-12-01 read them (nothing retrained),
    with what moved in each model's tuning (its ``suite.json`` ``beside`` rows)."""
    lines = [
        "| suite (beside) | task | model | recorded then | read again | retrained | moved |",
        "|---|---|---|---|---|---|---|",
    ]
    counted = 0
    for name, earlier in RETRAINED_SUITES.items():
        folder = common.RESULTS / name
        if not (folder / "suite.json").is_file():
            continue
        old = common.RESULTS / earlier
        records = common.unpacked(old)
        beside = _json(folder / "suite.json")["beside"]["rows"]
        again = {
            task: judged_again(_json(old / task / "compare.json"), records / task)["litmus"]
            for task in dict.fromkeys(row["task"] for row in beside)
        }
        for row in beside:
            rows = {r["model"]: r for r in again[row["task"]].get("rows", [])}
            read = "no reference" if not rows else _cell(rows.get(row["model"]))
            lines.append(
                f"| {name} ({earlier}) | {row['task']} | {row['model']} | {row['earlier']} | "
                f"{read} | **{row['now']}** | {row['moved'] or '-'} |"
            )
            counted += 1
    return "\n".join(lines) if counted else "(no suite retrained yet)"


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
                (lr, score, step) for lr, i, score, step in validation_points(tuned) if i == init
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
            runs = common.unpacked(folder) / task.name / "runs"
            layers = _json(next(runs.glob("*/config.json")))["model"]["n_layer"]
            tuned = compare["tuned"]["standard"]
            standard = next(row for row in compare["rows"] if row["model"] == "standard")
            score = f"{standard['mean']:.3f} ± {standard['std']:.3f} ({tuned['train.lr']:.2g})"
            lines.append(
                f"| {arch} | {layers} | {tuned['init']} | {score} | "
                + " | ".join(_litmus_cells(compare))
                + " |"
            )
    return "\n".join(lines)


def rules_moved() -> str:
    """docs/reproduce.md: each suite reading the pass of 2026-12-06 moved (``PASSED``): as
    recorded, as the rules of 2026-12-01 read it, and as the committed compare.json now reads
    it, with the rules that moved it; then the claims whose verdict it moved."""
    lines = [
        "| suite | task | model | recorded | rules of 2026-12-01 | now | moved by |",
        "|---|---|---|---|---|---|---|",
    ]
    moved = {"2026-12-01": 0, "2026-12-06": 0}
    for name, tasks in _passed().items():
        for task, kept in tasks.items():
            now = _json(common.RESULTS / name / task / "compare.json")["litmus"]
            stages = [_cells(kept["recorded"]), _cells(kept[RULES_BEFORE]), _cells(now)]
            for model in dict.fromkeys([*stages[0], *stages[1], *stages[2]]):
                recorded, then, current = (stage.get(model, "no reference") for stage in stages)
                if recorded == then == current:
                    continue
                by = [rule for rule, a, b in (("2026-12-01", recorded, then),
                      ("2026-12-06", then, current)) if a != b]  # fmt: skip
                moved.update({rule: moved[rule] + 1 for rule in by})
                lines.append(
                    f"| {name} | {task} | {model} | {recorded} | {then} | **{current}** | "
                    f"{' and '.join(by)} |"
                )
    claims, capped = [], []
    for output, before in _json(PASSED)["claims"].items() if PASSED.is_file() else []:
        now = _json(common.RESULTS / output / "claims.json")
        then = common.earlier(common.RESULTS / output, common.BEFORE_CEILING_AT_CAP)
        claims += _moved(before, then or now, output)
        capped += _moved(then, now, output) if then else []
    lines += [
        "",
        f"{moved['2026-12-06']} suite readings moved by the rules of 2026-12-06, "
        f"{moved['2026-12-01']} by those of 2026-12-01 (suites recorded before them). "
        f"Claims judged again: {len(_json(PASSED)['claims']) if PASSED.is_file() else 0} "
        f"outputs, {len(claims)} verdicts moved" + (": " + "; ".join(claims) if claims else "."),
        f"Since, by the ceiling at the budget cap (2026-12-07): {len(capped)} "
        f"verdict{'' if len(capped) == 1 else 's'} moved"
        + (": " + "; ".join(capped) if capped else "."),
    ]
    return "\n".join(lines)


def _moved(before: dict[str, Any], after: dict[str, Any], output: str) -> list[str]:
    """``OUTPUT CLAIM: before → after`` for each claim whose verdict moved between the two
    claims.json."""
    verdicts = {c["id"]: c["verdict"] for c in before["claims"]}
    return [
        f"{output} {c['id']}: {verdicts[c['id']]} → {c['verdict']}"
        for c in after["claims"]
        if verdicts[c["id"]] != c["verdict"]
    ]


def _cells(judged: dict[str, Any]) -> dict[str, str]:
    """``{model: verdict (difference)}`` of one litmus reading; {} where there was no
    reference."""
    return {row["model"]: litmus.verdict_words(row) for row in judged.get("rows", [])}
