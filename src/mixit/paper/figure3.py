"""Figure 3: the induction circuit of a Frozen-QK model trained on retrieval; claim C10.

Heat maps of every head of one Frozen-QK model on one test example, and for every head of
every variant a previous-token score and an induction score (``mixit.models.heads``),
measured on 256 test sequences with padding excluded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from mixit.analysis.attention import plot_attention_maps
from mixit.models.heads import attention_patterns, previous_token_score, scores_of_patterns
from mixit.paper.claims import claim, margin
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
    test_split,
)
from mixit.study.text import markdown_table, ran
from mixit.tasks.retrieval import value_positions
from mixit.training.rundir import load_run

MODELS = ("standard", "frozen-qk", "frozen-mlp", "mixit", "random")
PAD = 0  # retrieval's padding token
SEQUENCES = 256


def plan(scale: str, seeds: range) -> list[Run]:
    return runs("retrieval", MODELS, seeds, scale)


def circuit_scores(run_dir: str) -> tuple[dict[str, list[list[float]]], torch.Tensor, object]:
    """A finished retrieval run's head scores on ``SEQUENCES`` test rows (each layer's list of
    its heads'), the previous-token score at value positions among them, with the rows and the
    model they were read from."""
    model, config = load_run(run_dir)
    inputs = test_split(config).inputs[:SEQUENCES]
    patterns = attention_patterns(model, inputs)  # (L, S, H, T, T), read once for both
    scores = scores_of_patterns(patterns, inputs, mask=inputs != PAD)
    # Retrieval needs the previous token only at value positions (a value's previous token is
    # its key): C10's rule reads that score; the one over every position is shown beside it.
    values = value_positions(inputs, config.task.vocab_size)
    at_values = previous_token_score(patterns, inputs != PAD, values)
    scores["previous_token_at_values"] = at_values.tolist()
    return scores, inputs, model


# The previous-token score C10's rule reads (at value positions, since 2026-11-25), and the
# one over every position that it read before, measured beside it.
DECIDES, BESIDE = "previous_token_at_values", "previous_token"


def has_circuit(scores: dict[str, list[list[float]]], previous_token: str = DECIDES) -> bool:
    """A previous-token head (by the ``previous_token`` column of ``scores``) and an
    induction head in a later layer, each scoring at least C10's threshold."""
    threshold = margin("C10", "threshold")
    previous = [max(layer) >= threshold for layer in scores[previous_token]]
    induction = [max(layer) >= threshold for layer in scores["induction"]]
    return any(p and any(induction[later + 1 :]) for later, p in enumerate(previous))


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C10: every seed's Frozen-QK retrieval model has the circuit."""
    seeds = results["head_scores"]["frozen-qk"]
    frozen_qk = [has_circuit(scores) for scores in seeds]
    measured = {
        "frozen_qk_circuit_per_seed": frozen_qk,
        "by_the_every_position_score": [has_circuit(scores, BESIDE) for scores in seeds],
    }
    return [claim("C10").judge(all(frozen_qk), measured)]


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    results: dict[str, list] = {}
    rows = []
    for model_name in MODELS:
        results[model_name] = []
        for run in runs("retrieval", [model_name], seeds, scale):
            scores, inputs, model = circuit_scores(summaries[run]["run_dir"])
            results[model_name].append(scores)
            best_previous = max(max(layer) for layer in scores["previous_token"])
            best_induction = max(max(layer) for layer in scores["induction"])
            best_at_values = max(max(layer) for layer in scores["previous_token_at_values"])
            rows.append(
                [
                    model_name,
                    run.seed,
                    f"{best_previous:.2f}",
                    f"{best_induction:.2f}",
                    "yes" if has_circuit(scores) else "no",
                    f"{best_at_values:.2f}",
                ]
            )
            if model_name == "frozen-qk" and run.seed == seeds.start:
                shown = ran(scale, range(run.seed, run.seed + 1))
                _plot_example(model, inputs[:1], out / "frozen_qk_attention.png", shown)
    markdown = "\n\n".join(
        [
            "Best previous-token and induction scores over the heads of each trained retrieval "
            f"model (fraction of attention on the circuit's target; circuit = a head >= "
            f"{margin('C10', 'threshold')} for previous-token at values and one for induction, "
            "the induction head in a later layer).",
            markdown_table(
                [
                    "model",
                    "seed",
                    "previous-token",
                    "induction",
                    "circuit",
                    "previous-token at values",
                ],
                rows,
            ),
            "C10's rule reads the last column: the best head's attention to the previous token "
            "from value positions only, the positions where retrieval needs it (a value's "
            "previous token is its key). The previous-token column averages over every "
            "position, keys included, where a perfect value-to-key head scores about 0.5 "
            "(docs/reproduce.md says when and why the rule moved to the last column).",
            "Attention of every Frozen-QK head on one test example (padding removed):",
            "![Frozen-QK attention](frozen_qk_attention.png)",
        ]
    )
    stored = {"head_scores": results}
    return Report(markdown, stored, judge(stored))


def _plot_example(model: torch.nn.Module, example: torch.Tensor, path: Path, shown: str) -> None:
    """Every head's attention on one test example (1, T), padding removed; ``shown``: the
    scale, seed and training, for the title."""
    keep = example[0] != PAD
    patterns = attention_patterns(model, example)[:, 0]  # (L, H, T, T)
    patterns = patterns[:, :, keep][:, :, :, keep]  # padding removed
    tokens = [str(t) for t in example[0, keep].tolist()]
    title = f"Frozen-QK on retrieval ({shown}); the last row is the query, {tokens[-1]}"
    plot_attention_maps(patterns, tokens, path, title)


EXPERIMENT = Experiment("figure3", "Figure 3: induction heads in Frozen-QK", plan, report, judge)
