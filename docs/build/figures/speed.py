"""Figures of docs/speed.md: `mixit bench`'s training and decoding speed."""

from __future__ import annotations

from typing import Any

from figures.common import ROOT, _json


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


def _benches() -> list[dict[str, Any]]:
    """The bench runs in docs/bench/, narrowest model first."""
    runs = [_json(path) for path in (ROOT / "docs" / "bench").glob("*.json")]
    return sorted(runs, key=lambda run: run["rows"][0]["n_embd"])


def wait_policy() -> str:
    """docs/speed.md: training speed under each OpenMP wait policy on a quiet machine, from
    results/wait-policy-quiet/."""
    folder = ROOT / "results" / "wait-policy-quiet"
    speeds = {
        policy: [
            _json(path)["rows"][0]["tokens_per_s"]
            for path in sorted(folder.glob(f"{policy}-*.json"))
        ]
        for policy in ("default", "active", "passive")
    }
    mean = {policy: sum(values) / len(values) for policy, values in speeds.items()}
    rows = ["| OMP_WAIT_POLICY | tokens/s, each try | mean |", "|---|---|---:|"]
    for policy, values in speeds.items():
        listed = ", ".join(f"{v:,.0f}" for v in values)
        shown = "unset (libgomp's default)" if policy == "default" else policy.upper()
        rows.append(f"| {shown} | {listed} | {mean[policy]:,.0f} |")
    rows += [
        "",
        f"Quiet, the default is {mean['default'] / mean['passive']:.2f}x as fast as passive "
        f"waiting, and active spinning {mean['active'] / mean['passive']:.2f}x.",
    ]
    return "\n".join(rows)


def wait_policy_beside() -> str:
    """docs/speed.md: a tiny step beside a second training, before and after the command
    chose the wait policy, from results/wait-policy-beside/."""
    tries = [_json(p) for p in sorted((ROOT / "results" / "wait-policy-beside").glob("try-*.json"))]
    rows = ["| try | alone, ms a step | before: x alone | after: x alone |", "|---|---:|---:|---:|"]
    for number, measured in enumerate(tries, start=1):
        ratio = {case["case"]: case["times_alone"] for case in measured["cases"]}
        rows.append(
            f"| {number} | {measured['alone_ms_per_step']:.0f} | {ratio['before']:.2f}x "
            f"| {ratio['after']:.2f}x |"
        )
    return "\n".join(rows)


def wait_together() -> str:
    """docs/speed.md: two tiny trainings on the same cores, both timed, per waiting setting
    (studies/together.py), from each file of results/wait-together/."""
    rows = [
        "| file | setting | alone, s | together: x alone | second started 8 s later: x alone |",
        "|---|---|---:|---:|---:|",
    ]
    for path in sorted((ROOT / "results" / "wait-together").glob("*.json")):
        for row in _json(path)["settings"]:
            together = ", ".join(f"{x:.2f}x" for x in row["together_x"])
            beside = ", ".join(f"{x:.2f}x" for x in row["beside_x"])
            rows.append(
                f"| {path.name} | {row['setting']} | {row['alone_seconds']:.1f} | {together} "
                f"| {beside} |"
            )
    return "\n".join(rows)


def fixed_costs() -> str:
    """docs/speed.md: what a short run pays besides its steps, from
    results/fixed-costs/fixed-costs.json (studies/fixed_costs.py)."""
    measured = _json(ROOT / "results" / "fixed-costs" / "fixed-costs.json")
    starts = ", ".join(f"{s:.1f}" for s in measured["pool_start_seconds"])
    runs = measured["short_runs"]
    outside = ", ".join(f"{r['whole_seconds'] - r['step_seconds']:.1f}" for r in runs)
    steps = ", ".join(f"{r['step_seconds']:.1f}" for r in runs)
    data = measured["data_seconds"]
    slowest = max(data, key=data.get)
    return "\n".join(
        [
            "| what | seconds, each try |",
            "|---|---|",
            f"| a fresh pool of {measured['jobs']} workers, until each is ready to train | "
            f"{starts} |",
            f"| a 100-step tiny retrieval run's steps | {steps} |",
            f"| the same run outside its steps (setup, evaluation, files) | {outside} |",
            f"| the slowest tiny task's data ({slowest}) | {data[slowest]:.2f} |",
        ]
    )


def convert_bench() -> str:
    """docs/huggingface.md: training speed of a converted Hugging Face model against the
    original, one table per architecture, from results/convert-bench/."""
    rows = [
        "| model | shape | variant | trainable | tokens/s | speed-up |",
        "|---|---|---|---:|---:|---:|",
    ]
    for path in sorted((ROOT / "results" / "convert-bench").glob("*.json")):
        measured = _json(path)
        s = measured["setting"]
        shape = f"n={s['n_embd']} L={s['n_layer']} H={s['n_head']} T={s['seq_len']} B={s['batch']}"
        for row in measured["rows"]:
            name = "original" if row["variant"] == "standard" else row["variant"]
            rows.append(
                f"| {s['arch']} | {shape} | {name} | {row['trainable_params']:,} "
                f"| {row['tokens_per_s']:,.0f} | {row['speed_up']:.2f}x |"
            )
            shape = ""
    return "\n".join(rows)


FUSED_RULE = 0.03  # docs/cost.md: fused AdamW becomes the CPU default at >= 3 % of every step


def cpu_presets() -> str:
    """docs/cost.md: each tiny preset's CPU step, split and profiled, and the readings of the
    fused-AdamW and foreach-AdamW rules, from results/cpu-presets/presets.json."""
    measured = _json(ROOT / "results" / "cpu-presets" / "presets.json")
    foreach = all("foreach_optimizer_ms" in r for r in measured["rows"])
    rows = [
        "| preset | shape | tokens/s | MFU | forward ms | backward ms | AdamW ms | fused AdamW ms "
        + ("| foreach AdamW ms " if foreach else "")
        + "| matmul share |",
        "|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if foreach else "") + "---:|",
    ]
    saved = []
    for r in measured["rows"]:
        step = r["forward_ms"] + r["backward_ms"] + r["optimizer_ms"]
        saved.append((r["optimizer_ms"] - r["fused_optimizer_ms"]) / step)
        over_lists = f"| {r['foreach_optimizer_ms']:.2f} " if foreach else ""
        rows.append(
            f"| {r['preset']} | n={r['n_embd']} L={r['n_layer']} T={r['seq_len']} B={r['batch']} "
            f"| {r['tokens_per_s']:,.0f} | {r['mfu']:.1%} | {r['forward_ms']:.1f} "
            f"| {r['backward_ms']:.1f} | {r['optimizer_ms']:.2f} | {r['fused_optimizer_ms']:.2f} "
            f"{over_lists}| {r['matmul_share']:.0%} |"
        )
    adopted = min(saved) >= FUSED_RULE
    rows += [
        "",
        f"The fused AdamW saves between {min(saved):+.1%} and {max(saved):+.1%} of a step "
        f"(rule: at least {FUSED_RULE:.0%} on every preset): "
        + ("adopted as the CPU default." if adopted else "not adopted; AdamW stays as it is."),
    ]
    if foreach:
        faster = [r["foreach_optimizer_ms"] < r["optimizer_ms"] for r in measured["rows"]]
        rows.append(
            f"The foreach AdamW's step is faster than the default's on {sum(faster)} of "
            f"{len(faster)} presets (rule: on every one, and the same parameters bit for bit): "
            + ("adopted as the default." if all(faster) else "not adopted.")
        )
    rows.append(
        f"Peak fp32 matmul: {measured['peak_gflops']['fp32']:,.0f} GFLOP/s; "
        f"medians of {measured['rounds']} rounds."
    )
    return "\n".join(rows)


# docs/cost.md's rule for members on the CPU: on by default only at this many times the
# tokens per second of the better of one run at a time and --jobs.
MEMBERS_RULE = 1.2


def members_cpu() -> str:
    """docs/cost.md: the runs of members_device.py timed each way on this machine, and the
    rule's reading, from results/members-cpu/members.json."""
    measured = _json(ROOT / "results" / "members-cpu" / "members.json")
    modes = measured["modes"]
    rows = [
        "| mode | units trained | wall s | tokens/s | vs one at a time |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, mode in modes.items():
        rows.append(
            f"| {name} | {mode['units']} | {mode['wall_seconds']:.1f} "
            f"| {mode['tokens_per_second']:,.0f} | {mode['speedup']:.2f}x |"
        )
    plain = max(m["tokens_per_second"] for m in modes.values() if not m["members"])
    best = max(m["tokens_per_second"] for m in modes.values() if m["members"])
    verdict = "on" if best >= MEMBERS_RULE * plain else "off"
    rows += [
        "",
        f"{measured['runs']} runs ({', '.join(measured['tasks'])}; five models, "
        f"{measured['seeds']} seeds, {measured['steps']} steps each) on {measured['device']}. "
        f"Members reach {best / plain:.2f}x the better plain mode (rule: at least "
        f"{MEMBERS_RULE:.1f}x): `--members auto` is {verdict} on the CPU.",
    ]
    return "\n".join(rows)


def members_folded() -> str:
    """docs/cost.md: model-steps per second of mixit's own step and of folded members, the
    rule's reading and how much of it is the folding, from results/members-cpu/folded.json
    (studies/members_folded.py)."""
    measured = _json(ROOT / "results" / "members-cpu" / "folded.json")
    rates, shape = measured["model_steps_per_second"], measured["shape"]
    rows = ["| mode | model-steps/s |", "|---|---:|"]
    rows += [f"| {name} | {rate:,.1f} |" for name, rate in rates.items()]
    passes = measured["gain"] >= MEMBERS_RULE
    rows += [
        "",
        f"{measured['task']} (n={shape['n_embd']} L={shape['n_layer']} T={shape['seq_len']} "
        f"B={shape['batch']}), {measured['members']} members, {measured['steps']} timed steps a "
        f"process, {measured['cores']} cores. Folded members reach {measured['gain']:.2f}x the "
        f"better of mixit's own step alone and two at once (rule: at least {MEMBERS_RULE:.1f}x): "
        f"{'passes' if passes else 'fails'}. Of that, the folding itself (members against one "
        f"member of the same folded decoder) gives {measured['folding_gain']:.2f}x.",
    ]
    return "\n".join(rows)


def time_breakdown() -> str:
    """docs/cost.md: where a reproduction's time went, by experiment and by stop reason, from
    each file of results/time-breakdown/ (studies/time_breakdown.py)."""
    tables = []
    for path in sorted((ROOT / "results" / "time-breakdown").glob("*.json")):
        measured = _json(path)
        rows = [
            f"`{measured['output']}` (--jobs {measured['jobs']}):",
            "",
            "| experiment | runs | steps run of budget | steps, s | its calls' wall, s |",
            "|---|---:|---:|---:|---:|",
        ]
        for row in measured["experiments"]:
            if not row["runs"]:
                continue
            rows.append(
                f"| {row['experiment']} | {row['runs']} | {row['steps_run']:,} of "
                f"{row['steps_budget']:,} | {row['step_seconds']:,.0f} "
                f"| {row['wall_seconds']:,.0f} |"
            )
        rows += ["", "| stopped | runs | steps run of budget | steps, s |", "|---|---:|---:|---:|"]
        for reason, group in sorted(measured["stopped"].items()):
            rows.append(
                f"| {reason} | {group['runs']} | {group['steps_run']:,} of "
                f"{group['steps_budget']:,} | {group['step_seconds']:,.0f} |"
            )
        tables.append("\n".join(rows))
    return "\n\n".join(tables)


def compile_repay() -> str:
    """docs/cost.md: compile seconds against what compiling saves over each tiny preset's
    budget, from results/compile-repay/compile-repay.json (studies/compile_repay.py)."""
    path = ROOT / "results" / "compile-repay" / "compile-repay.json"
    if not path.is_file():
        return "(not measured yet)"
    measured = _json(path)
    rows = [
        "| preset | budget | eager s a step | compiled s a step | compile s | saved over budget, s "
        "| repays (rule) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in measured["rows"]:
        repays = row["compile_seconds"] < 0.5 * row["saved_over_budget"]
        rows.append(
            f"| {row['task']} | {row['budget']:,} | {row['eager_step_seconds']:.4f} "
            f"| {row['compiled_step_seconds']:.4f} | {row['compile_seconds']:.1f} "
            f"| {row['saved_over_budget']:.1f} | {'yes' if repays else 'no'} |"
        )
    return "\n".join(rows)
