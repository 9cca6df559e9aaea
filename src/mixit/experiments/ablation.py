"""Which detail of the authors' code decides which claim: ``mixit reproduce ablation``.

Each *difference* is one group of options set to the authors' values on top of the equations'
construction (docs/constructions.md), for exactly the (task, model) pairs the authors'
construction gives it to: a MixiT-only option leaves the softmax runs as they are, so they are
trained once and shared with the plain reproduction in the same output directory. The whole
``authors`` construction is the last difference. For every difference the experiments that
judge the chosen claims are reported as ``reproduce`` would, and the table gives, per claim,
the change of MixiT's metric against the equations (mean and standard deviation over seeds of
the paired per-seed difference) and whether the verdict flips.

The flips come before an experiment's own settings: where an experiment fixes an option itself
(Table 5's per-head W^M spread, Table 6's plain residual for MixiT), the flip leaves it alone.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mixit.constructions import construction_overrides
from mixit.errors import UsageError
from mixit.experiments.base import REPRODUCED, Claim, Run, markdown_table
from mixit.io import make_dir, write_json, write_text
from mixit.tasks import get_task
from mixit.variants import VARIANTS, get_variant

# The differences: a name, what it is, and the option keys whose authors' values it flips.
DIFFERENCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "non-causal": ("MixiT's mixing not causal (classification only)", ("model.mixing_causal",)),
    "row-sum-drift": ("drift = row sum / (i + 1)", ("model.mixing_centering",)),
    "per-head-std": ("W^M std per head in [1/sqrt(m n_h), 1/sqrt(m)]", ("model.mixing_scale",)),
    "sink": (
        "head 0 a sink with 0.5 on token 0",
        ("model.attention_sink", "model.sink_first_row_weight"),
    ),
    "width-factor": (
        "projections times sqrt(base / fan_in)",
        ("model.width_scaling", "model.width_base", "model.width_base_down"),
    ),
    "init-0.02": ("every weight and embedding N(0, 0.02^2)", ("model.init",)),
    "biases": ("biases on every block projection", ("model.bias",)),
    "shaped-leaky-relu": (
        "MLP non-linearity: leaky ReLU, slope 1 + 1/sqrt(n), times its gain",
        ("model.mlp_activation", "model.leaky_relu_c", "model.activation_gain"),
    ),
    "right-padding": (
        "padding after the content: sentiment's review, retrieval's query and answer",
        ("task.padding",),
    ),
    "bos-token": ("sentiment's review starts with a BOS token", ("task.bos_token",)),
    "retrieval-ids": (
        "retrieval's keys from max_pairs ids, its query a token of its own",
        ("task.key_pool", "task.query_ids"),
    ),
    "memorization-layout": ("memorization written [x, y + n, value]", ("task.layout",)),
    "addition-layout": (
        "addition: reversed operands, the sum's own digit ids, a stop token, the token after "
        "each of the sum's scored",
        ("task.reverse_operands", "task.answer_ids", "task.stop_token", "task.scored_tokens"),
    ),
}
WHOLE = "authors"
# Under the causal mask the row-sum drift is the visible mean (tests/test_constructions.py),
# so on its own it builds the equations' matrices again: it acts only together with
# non-causal mixing, which the whole authors' construction measures. It runs when asked for.
DEFAULT_DIFFERENCES = (*(d for d in DIFFERENCES if d != "row-sum-drift"), WHOLE)
EQUATIONS = "equations"

# The experiment that judges each claim the ablation covers.
CLAIM_EXPERIMENT = {
    "C1": "table1",
    "C2": "table1",
    "C5": "table3",
    "C6": "table4",
    "C7": "table5",
    "C8": "table6",
}


@dataclass(frozen=True)
class Headline:
    """A number a claim turns on: ``metric`` of the runs of one experiment that ``selects``."""

    label: str
    selects: Callable[[Run], bool]
    metric: str = "test_accuracy"


def _mixit(task: str, without: tuple[str, ...] = (), **settings: Any) -> Callable[[Run], bool]:
    """Selects the MixiT runs of ``task`` whose overrides hold ``settings`` and none of the keys
    ``without``."""

    def selects(run: Run) -> bool:
        own = dict(run.overrides)
        return (
            run.task == task
            and run.model == "mixit"
            and all(own.get(k) == v for k, v in settings.items())
            and not any(k in own for k in without)
        )

    return selects


HEADLINES: dict[str, list[Headline]] = {
    "C1": [Headline("retrieval", _mixit("retrieval"))],
    "C2": [Headline("k-hop", _mixit("khop"))],
    "C5": [
        Headline(task, _mixit(task))
        for task in ("addition", "dyck", "modular-addition", "sentiment")
    ],
    "C6": [Headline("memorization bits/param", _mixit("memorization"), "bits_per_param")],
    "C7": [Headline(f"{t}, 64 heads", _mixit(t, **{"model.n_head": 64})) for t in ("addition",)],
    "C8": [
        Headline(
            "addition, depth 16",
            _mixit("addition", without=("model.residual_lambda",), **{"model.n_layer": 16}),
        )
    ],
}


def flips(difference: str, task: str, model: str) -> dict[str, Any]:
    """The option values ``difference`` sets for ``task`` and ``model``: the authors' values of
    its keys where the authors' construction sets them for this pair, else nothing."""
    authors = construction_overrides("authors", get_variant(model), get_task(task).authors_settings)
    if difference == WHOLE:
        return {"model.construction": "authors"}
    return {key: authors[key] for key in DIFFERENCES[difference][1] if key in authors}


def plan_ablation(
    differences: Sequence[str],
    claims: Sequence[str],
    scale: str,
    seeds: int,
    jobs: int,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[list[str], dict[tuple[str, Run], Any]]:
    """The experiments judging ``claims`` and the config of every (difference, run) they need;
    the equations' runs come first, under the name ``EQUATIONS``. ``overrides`` apply to every
    run, after everything else (as ``reproduce``'s)."""
    from mixit.experiments import EXPERIMENTS
    from mixit.experiments.runner import plan_reproduction

    unknown = [c for c in claims if c not in CLAIM_EXPERIMENT]
    if unknown:
        raise UsageError(
            f"the ablation does not cover claim '{unknown[0]}'; choose from: "
            + ", ".join(CLAIM_EXPERIMENT)
        )
    names = sorted({CLAIM_EXPERIMENT[c] for c in claims}, key=list(EXPERIMENTS).index)
    tasks = {run.task for name in names for run in EXPERIMENTS[name].plan(scale, range(seeds))}
    configs: dict[tuple[str, Run], Any] = {}
    for difference in (EQUATIONS, *differences):
        tuned = {
            (task, model): {} if difference == EQUATIONS else flips(difference, task, model)
            for task in tasks
            for model in VARIANTS
        }
        _, planned = plan_reproduction(names, scale, range(seeds), jobs, overrides, tuned)
        configs |= {(difference, run): config for run, config in planned.items()}
    return names, configs


def per_seed(
    summaries: Mapping[Run, Mapping[str, Any]], headline: Headline, planned: Collection[Run]
) -> dict[int, float]:
    """The headline's value per seed, over the runs of the claim's own experiment
    (``planned``): another experiment's MixiT runs on the same task are not the claim's."""
    values: dict[int, float] = {}
    for run, summary in summaries.items():
        if run in planned and headline.selects(run):
            if run.seed in values:
                raise ValueError(f"headline '{headline.label}' selects two runs of seed {run.seed}")
            values[run.seed] = float(summary["metrics"][headline.metric])
    return values


def _shift(base: dict[int, float], flipped: dict[int, float]) -> str:
    paired = [flipped[s] - base[s] for s in sorted(base) if s in flipped]
    if not paired:
        return "-"
    spread = statistics.stdev(paired) if len(paired) > 1 else 0.0
    return f"{statistics.fmean(paired):+.3f} ± {spread:.3f}"


def ablate(
    differences: Sequence[str] | None = None,
    claims: Sequence[str] | None = None,
    scale: str = "tiny",
    seeds: int = 3,
    jobs: int = 1,
    out: str | Path = "runs/reproduce",
    progress: bool = False,
    overrides: Mapping[str, Any] | None = None,
    train: bool = True,
) -> dict[str, Any]:
    """Train what the ablation needs into ``OUT/runs`` and write ``OUT/ablation/report.md``
    and ``results.json``: per difference and claim, the verdict and the shift of the claim's
    MixiT numbers against the equations' construction. With ``train=False`` nothing is
    trained and the report covers the differences whose runs are all finished."""
    from mixit.runs import train_missing

    differences = check_differences(differences or DEFAULT_DIFFERENCES)
    claims = list(claims or CLAIM_EXPERIMENT)
    names, configs = plan_ablation(differences, claims, scale, seeds, jobs, overrides)
    out = Path(out)
    started = time.perf_counter()
    summaries, trained = train_missing(configs, out / "runs", jobs, progress, train)
    wall = time.perf_counter() - started
    unfinished = [
        d
        for d in (EQUATIONS, *differences)
        if any(e == d and (e, run) not in summaries for e, run in configs)
    ]
    if EQUATIONS in unfinished:
        raise UsageError(
            f"the equations' runs of the ablation in {out} are not all finished; "
            "run it without --no-train"
        )
    differences = [d for d in differences if d not in unfinished]
    folder = make_dir(out / "ablation")
    verdicts, shifts = judge(
        [EQUATIONS, *differences], claims, names, scale, seeds, summaries, folder
    )
    markdown = ablation_markdown(verdicts, shifts, claims, scale, seeds, wall, trained)
    if unfinished:
        markdown += (
            f"\n\nNot finished yet, so not in the table: {', '.join(unfinished)} "
            "(the same command without --no-train trains them).\n"
        )
    results = {"scale": scale, "seeds": seeds, "overrides": dict(overrides or {}), "claims": claims}
    results["differences"] = difference_results(verdicts, shifts, claims)
    results |= {"train_wall_seconds": wall, "runs_trained": trained, "unfinished": unfinished}
    write_text(folder / "report.md", markdown)
    write_json(folder / "results.json", results)
    annotate_claims(out)
    return results


def difference_results(
    verdicts: Mapping[str, Mapping[str, Any]],
    shifts: Mapping[str, Mapping[str, Any]],
    claims: Sequence[str],
) -> dict[str, dict[str, dict[str, Any]]]:
    """results.json's per-difference, per-claim verdict, measured numbers and shift."""
    return {
        d: {
            c: {"verdict": verdicts[d][c].verdict, "measured": verdicts[d][c].measured}
            | {"shift": shifts[d][c]}
            for c in claims
        }
        for d in verdicts
    }


def check_differences(differences: Sequence[str]) -> list[str]:
    bad = [d for d in differences if d not in (*DIFFERENCES, WHOLE)]
    if bad:
        raise UsageError(
            f"unknown difference '{bad[0]}'; choose from: {', '.join([*DIFFERENCES, WHOLE])}"
        )
    return list(differences)


def judge(
    differences: Sequence[str],
    claims: Sequence[str],
    names: Sequence[str],
    scale: str,
    seeds: int,
    summaries: Mapping[tuple[str, Run], Mapping[str, Any]],
    folder: Path,
) -> tuple[dict[str, dict[str, Claim]], dict[str, dict[str, dict[str, str]]]]:
    """Each difference's verdict on each claim (its experiments' reports, plots under
    ``folder``) and the shift of the claim's MixiT numbers from the equations' runs."""
    from mixit.experiments import EXPERIMENTS

    planned = {c: set(EXPERIMENTS[CLAIM_EXPERIMENT[c]].plan(scale, range(seeds))) for c in claims}
    base = {run: s for (d, run), s in summaries.items() if d == EQUATIONS}
    verdicts: dict[str, dict[str, Claim]] = {}
    shifts: dict[str, dict[str, dict[str, str]]] = {}
    for difference in differences:
        mine = {run: s for (d, run), s in summaries.items() if d == difference}
        plots = make_dir(folder / re.sub(r"[^a-z0-9]+", "-", difference.lower()).strip("-"))
        reports = [EXPERIMENTS[name].report(scale, range(seeds), mine, plots) for name in names]
        judged = [c for report in reports for c in report.claims]
        verdicts[difference] = {c.id: c for c in judged if c.id in claims}
        shifts[difference] = {
            c: {
                h.label: _shift(per_seed(base, h, planned[c]), per_seed(mine, h, planned[c]))
                for h in HEADLINES[c]
            }
            for c in claims
        }
    return verdicts, shifts


def _same_setting(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    def key(s: Mapping[str, Any]) -> tuple:
        overrides = {k: str(v) for k, v in s.get("overrides", {}).items()}  # CLI: strings
        return s["scale"], s["seeds"], overrides

    return key(a) == key(b)


def dependence(out: Path, setting: Mapping[str, Any]) -> dict[str, str]:
    """Per claim id, what ``OUT/ablation/results.json`` says its verdict turns on: the
    differences that flip it against the equations' construction, or that none does. Nothing
    when there is no ablation at this ``setting``'s scale, seeds and overrides."""
    try:
        results = json.loads((out / "ablation" / "results.json").read_text())
        if not _same_setting(results, setting):
            return {}
        differences = results["differences"]
        base = differences[EQUATIONS]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    where = f"(`{results['scale']}`, {results['seeds']} seeds, ablation/report.md)"
    notes = {}
    for claim, judged in base.items():
        others = {d: v[claim]["verdict"] for d, v in differences.items() if d != EQUATIONS}
        flipped = [f"`{d}` ({verdict})" for d, verdict in others.items() if verdict != judged]
        if flipped:
            notes[claim] = (
                f"{judged} under the equations' construction, flipped by "
                f"{', '.join(flipped)} {where}"
            )
        else:
            notes[claim] = (
                f"{judged} under each of {', '.join(f'`{d}`' for d in others)} as under the "
                f"equations' construction {where}"
            )
    return notes


def annotate_claims(out: Path) -> None:
    """Rewrite ``OUT/claims.json`` and ``claims.md``, if a reproduction wrote them, with what
    the ablation now says each verdict turns on."""
    from mixit.experiments.verdicts import write_claims

    try:
        stored = json.loads((out / "claims.json").read_text())
        claims = [Claim(**claim) for claim in stored.pop("claims")]
    except (OSError, ValueError, KeyError, TypeError):
        return
    write_claims(out, claims, stored)


def ablation_markdown(
    verdicts: Mapping[str, Mapping[str, Claim]],
    shifts: Mapping[str, Mapping[str, Mapping[str, str]]],
    claims: Sequence[str],
    scale: str,
    seeds: int,
    wall: float,
    trained: int,
) -> str:
    base = verdicts[EQUATIONS]

    def cell(difference: str, claim_id: str) -> str:
        verdict = verdicts[difference][claim_id].verdict
        mark = "yes" if verdict == REPRODUCED else "no"
        if difference != EQUATIONS and verdict != base[claim_id].verdict:
            mark += " (flips)"
        moved = "; ".join(f"{k} {v}" for k, v in shifts[difference][claim_id].items())
        return f"{mark}: {moved}" if difference != EQUATIONS else mark

    rows = [[d, *(cell(d, c) for c in claims)] for d in verdicts]
    return "\n\n".join(
        [
            "# Ablation: which detail of the authors' code decides which claim",
            f"Scale `{scale}`, {seeds} seed(s). Each row sets one group of options to the "
            "authors' values (docs/constructions.md) for the runs the authors' construction "
            "gives them to, on top of the equations' construction; the last row is the whole "
            "authors' construction. A cell is the claim's verdict (reproduced: yes or no), "
            "whether it flips against the equations' row, and the shift of MixiT's metric: "
            "mean ± standard deviation over seeds of the paired per-seed difference.",
            markdown_table(["difference", *claims], rows),
            "Differences: "
            + "; ".join(f"`{name}`: {what}" for name, (what, _) in DIFFERENCES.items())
            + f"; `{WHOLE}`: all of them at once (docs/constructions.md). `row-sum-drift` "
            "alone builds the equations' matrices again under the causal mask; it acts only "
            "with non-causal mixing, inside the authors' row.",
            (
                f"Training took {wall / 60:.1f} minutes of wall time ({trained} runs trained; "
                "runs already in the output directory were reused)."
                if trained
                else "This call trained nothing: every run in the table was already in the "
                "output directory (its wall time is that of the calls that trained it)."
            ),
        ]
    )
