"""Figures of the reproductions: README.md's claim table, docs/reproducing.md's outputs and
docs/reproduce.md's judgements."""

from __future__ import annotations

import shlex
import statistics
from pathlib import Path

from figures import common
from figures.common import (
    BEFORE_NO_REFERENCE,
    BEFORE_READING_RULES,
    CLAIM_IDS,
    OLD_RULES,
    _confirmed,
    _construction,
    _json,
    _old_rules,
    _outputs,
    _presets_label,
    _rates,
    _reproduced,
    _rules,
    _seeds,
    _training,
    _verdicts,
    _whole_reproductions,
    before_the_pass,
    earlier,
)
from mixit.cli.compare import next_command
from mixit.paper.verdicts import format_measurements
from mixit.study.claim import (
    INCONCLUSIVE,
    NO_REFERENCE,
    NOT_RUN,
)
from mixit.study.results import read_results_csv
from mixit.study.table import format_table
from mixit.study.text import duration


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
CONFIRMING = (
    "tiny-seed100",
    "tiny-tuned-seed200",
    "tiny-rules-seed300",
    "small-seed100",
    "small-tuned-seed200",
)


def claim_verdicts() -> str:
    """README: each claim of the paper and its verdict in the outputs on fresh seeds; a
    verdict counted in another output (the same runs) is marked, not repeated."""
    outputs = [common.RESULTS / name for name in CONFIRMING]
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
        if (first := earlier(out, OLD_RULES)) is None:
            continue
        old, new = _verdicts(first), _verdicts(before_the_pass(out))
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
        if (first := earlier(out, OLD_RULES)) is None:
            continue
        old = {c["id"]: c for c in first["claims"]}
        for claim in before_the_pass(out)["claims"]:
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
        if (first := earlier(out, BEFORE_NO_REFERENCE)) is None:
            continue
        before = _verdicts(first)
        # The judgement under the no-reference rule: claims.json, unless a later rule judged
        # the output again (its verdicts before that kept under BEFORE_READING_RULES).
        later = earlier(out, BEFORE_READING_RULES) or before_the_pass(out)
        for claim in later["claims"]:
            if before.get(claim["id"], NOT_RUN) == claim["verdict"]:
                continue
            why = "; ".join(claim.get("no_reference", [])) or "-"
            rows.append(
                f"| `{out.name}` | {claim['id']} | {before.get(claim['id'], NOT_RUN)} | "
                f"{claim['verdict']} | {why} |"
            )
    checked = sum(earlier(out, BEFORE_NO_REFERENCE) is not None for out in _outputs())
    changed = len(rows) - 2
    return "\n".join(rows) + f"\n\n{checked} outputs judged again, {changed} verdicts changed."


def reading_rules_changes() -> str:
    """docs/reproduce.md: each verdict the reading rules of 2026-12-01 changed, in the outputs
    judged again under them (their verdicts before kept in ``BEFORE_READING_RULES``), with why."""
    rows = ["| output | claim | before | now | why |", "|---|---|---|---|---|"]
    judged = [out for out in _outputs() if earlier(out, BEFORE_READING_RULES) is not None]
    for out in judged:
        before = _verdicts(earlier(out, BEFORE_READING_RULES))
        claims = before_the_pass(out)
        for claim in claims["claims"]:
            if before.get(claim["id"], NOT_RUN) == claim["verdict"]:
                continue
            rows.append(
                f"| `{out.name}` | {claim['id']} | {before.get(claim['id'], NOT_RUN)} | "
                f"{claim['verdict']} | {_why(claim)} |"
            )
    labels = [f"`{out.name}` ({_presets_label(out)})" for out in judged]
    return (
        "\n".join(rows)
        + f"\n\n{len(judged)} outputs judged again ({', '.join(labels) or 'none'}), "
        f"{len(rows) - 2} verdicts changed."
    )


def c9_by_construction() -> str:
    """docs/reproduce.md: C9 in every output that judged it, by the construction its models
    were built with: the rise of token correlation with depth at initialisation."""
    rows = [
        "| output | construction | random's rise | MixiT's rise | verdict |",
        "|---|---|---:|---:|---|",
    ]
    for out in _outputs():
        claims = _json(out / "claims.json")
        c9 = next(c for c in claims["claims"] if c["id"] == "C9")
        if c9["verdict"] == NOT_RUN or "rise" not in c9["measured"]:
            continue
        rise = c9["measured"]["rise"]
        built = c9.get("construction") or _construction(claims)
        rows.append(
            f"| `{out.name}` | {built} | {rise['random']:+.3f} | {rise['mixit']:+.3f} "
            f"| {c9['verdict']} |"
        )
    return "\n".join(rows)


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


# Pre-registered in docs/tuning.md: k-hop at `small` retrained at the preset's rate for the
# tuned budget, beside the verdict runs at their tuned rates on the same seeds.
C2_BUDGET, C2_TUNED, C2_BAR = "c2-budget-small", "small-tuned-seed200", 0.90


def c2_budget() -> str:
    """docs/tuning.md: per model, k-hop test accuracy seed by seed at its tuned rate and at
    the preset's, the paired difference, and the reading the rule written before the runs
    gives."""
    if not (common.RESULTS / C2_BUDGET / "compare.json").is_file():
        return "(not run yet)"
    compare = _json(common.RESULTS / C2_BUDGET / "compare.json")
    rate = float(compare["overrides"]["train.lr"])
    tuned = {
        (row["model"], int(row["seed"])): row
        for row in read_results_csv(common.RESULTS / C2_TUNED / "results.csv")
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
    printed from ``compare.json`` (``table.format_table``), and the next command it gives for
    what is open (``cli.compare.next_command``, from the command the folder's README gives),
    as an indented code block."""
    result = _json(common.RESULTS / folder / "compare.json")
    readme = (common.RESULTS / folder / "README.md").read_text().splitlines()
    argv = shlex.split(next(line for line in readme if line.startswith("    mixit compare")))
    shown = format_table(result).splitlines()
    step = next_command(argv[1:], result)
    shown += [f"next, to decide what is open: mixit {step}"] if step else []
    return "\n" + "\n".join(f"    {line}".rstrip() for line in shown) + "\n"


def timed_transcript(folder: str, note: str = "") -> str:
    """README and docs/your-task.md: a committed comparison's transcript, under what its runs
    cost by their own summaries (never a time typed by hand) and ``note``."""
    rows = read_results_csv(common.RESULTS / folder / "results.csv")
    seconds = sum(float(row["train_seconds"]) for row in rows)
    head = (
        f"prints (`results/{folder}`: its {len(rows)} runs trained {duration(seconds)} by their "
        f"own summaries, one after another on 2 CPU cores{note}):\n"
    )
    return "\n" + head + transcript(folder)


def demo() -> str:
    """README: the demo's transcript and its wall time (timing.json, measured around
    ``make demo``'s command)."""
    timed = _json(common.RESULTS / "demo-retrieval" / "timing.json")
    head = (
        f"prints (`results/demo-retrieval`: {duration(timed['wall_seconds'])} of wall time from "
        "an empty output on 2 CPU cores, two runs at a time; runs flat at chance stop early, "
        "docs/tuning.md rule 5):\n"
    )
    return "\n" + head + transcript("demo-retrieval")


def _why(claim: dict) -> str:
    """What a verdict rests on, from its claim record: runs cut off still rising, a missing
    reference, seeds left undecided, tasks it fails on."""
    why = [*claim.get("unfinished", []), *claim.get("no_reference", [])]
    why += [f"undecided by the seeds: {u}" for u in claim.get("undecided", [])]
    if claim.get("failing") and claim["verdict"] != NO_REFERENCE:
        why.append(f"fails on tasks with a reference: {', '.join(claim['failing'])}")
    return "; ".join(why) or "-"


def tuning_rules_changes() -> str:
    """docs/reproduce.md: each whole reproduction under presets tuned by the rules of
    2026-12-01 beside the one under the old rules' presets at the same scale and construction
    on fresh seeds, claim by claim, with what the new verdict rests on."""
    outputs = {out: _json(out / "claims.json") for out in _whole_reproductions()}
    lines = []
    for out, new in outputs.items():
        if _presets_label(out) != "tuned presets" or not new.get("confirmed_on_seeds"):
            continue
        old = [
            other
            for other, claims in outputs.items()
            if _presets_label(other) == "presets tuned under the old rules"
            and claims.get("confirmed_on_seeds")
            and (claims["scale"], _construction(claims)) == (new["scale"], _construction(new))
        ]
        if not old:
            continue
        before = {c["id"]: c for c in outputs[old[-1]]["claims"]}
        lines += [
            f"`results/{out.name}` (presets tuned under the new rules, seeds {_seeds(new)}) "
            f"beside `results/{old[-1].name}` (presets tuned under the old rules, seeds "
            f"{_seeds(outputs[old[-1]])}), {new['scale']}:",
            "",
            "| claim | old rules | new rules | what the new verdict rests on |",
            "|---|---|---|---|",
        ]
        for claim in new["claims"]:
            was = before.get(claim["id"], {}).get("verdict", NOT_RUN)
            bold = "**" if was != claim["verdict"] else ""
            lines.append(
                f"| {claim['id']} | {was} | {bold}{claim['verdict']}{bold} | {_why(claim)} |"
            )
        lines.append("")
    return "\n".join(lines).strip() or "(no reproduction under the new rules' presets yet)"
