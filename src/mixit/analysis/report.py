"""``mixit analyze KIND RUN_DIR``: an analysis of a finished run on its own test data."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from mixit.analysis.ablation import ablate, format_ablation
from mixit.analysis.attention import plot_attention_maps
from mixit.analysis.covariance import token_covariance
from mixit.analysis.dynamics import format_dynamics, plot_dynamics, read_dynamics
from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.models.heads import HEAD_THRESHOLD, PAD, attention_patterns, head_scores
from mixit.training.rundir import load_run

ANALYSES = ("attention", "covariance", "ablate", "dynamics")


def analyze_run(kind: str, run_dir: str, sequences: int, out: str | None) -> str:
    """Run one analysis, write its JSON (and figures) under ``out``, return a printable text."""
    if kind not in ANALYSES:
        raise UsageError(f"unknown analysis '{kind}'; choose one of: {', '.join(ANALYSES)}")
    model, config = load_run(run_dir)
    folder = Path(out) if out else Path(run_dir) / "analysis"
    inputs = config.task_spec.make_data(config.task, config.seed).test.inputs
    inputs = inputs[:sequences]  # (S, T)
    if kind == "dynamics":
        found = read_dynamics(run_dir, config)
        write_json(folder / "dynamics.json", dataclasses.asdict(found))
        title = f"{config.variant} on {config.task_name}: heads as it trained"
        plot_dynamics(found, folder / "dynamics.png", title)
        return f"{format_dynamics(found)}\nwritten: {folder}/dynamics.json, {folder}/dynamics.png"
    if kind == "ablate":
        found = ablate(model, config, sequences)
        write_json(folder / "ablation.json", dataclasses.asdict(found))
        return f"{format_ablation(found)}\nwritten: {folder}/ablation.json"
    if kind == "covariance":
        result = token_covariance(model, inputs)
        write_json(folder / "covariance.json", result)
        return json.dumps(result, indent=2)
    scores = head_scores(model, inputs, mask=inputs != PAD)
    write_json(folder / "head_scores.json", scores)
    example = inputs[:1]  # (1, T)
    keep = example[0] != PAD
    patterns = attention_patterns(model, example)[:, 0][:, :, keep][:, :, :, keep]  # (L,H,T,T)
    title = f"{config.variant} on {config.task_name}: attention on test example 0"
    tokens = [str(t) for t in example[0, keep].tolist()]
    plot_attention_maps(patterns, tokens, folder / "attention.png", title)
    lines = ["layer head previous-token induction uniformity"]
    columns = ("previous_token", "induction", "uniformity")
    for layer, heads in enumerate(zip(*(scores[c] for c in columns), strict=True)):
        for head, (p, i, u) in enumerate(zip(*heads, strict=True)):
            shown = "n/a" if u is None else f"{u:.3f}"
            lines.append(f"{layer:>5} {head:>4} {_score(p):>14} {_score(i):>9} {shown:>10}")
    lines.append(
        f"* a score of at least {HEAD_THRESHOLD:g}: a previous-token or induction head "
        "(the threshold of claim C10)"
    )
    if any(u is None for heads in scores["uniformity"] for u in heads):
        lines.append("uniformity n/a: the head's rows hold negative weights (MixiT's mixing)")
    lines.append(f"written: {folder}/head_scores.json, {folder}/attention.png")
    return "\n".join(lines)


def mean_uniformity(run_dir: str | Path, sequences: int = 64) -> float | None:
    """A finished run's attention uniformity (``head_scores``), averaged over its layers and
    heads, on its first training sequences: 1 is plain averaging, 0 one position. None for a
    model whose attention mixit has no taps on (a ``model.arch`` model, a bottleneck readout:
    ``load_run`` refuses those)."""
    try:
        model, config = load_run(run_dir)
    except UsageError:
        return None
    inputs = config.task_spec.make_data(config.task, config.seed).train.inputs
    inputs = inputs[:sequences]  # (S, T)
    by_head = head_scores(model, inputs, mask=inputs != PAD)["uniformity"]
    defined = [u for heads in by_head for u in heads if u is not None]
    return sum(defined) / len(defined) if defined else None


def _score(value: float) -> str:
    """A head score, starred at ``HEAD_THRESHOLD`` or above."""
    return f"{value:.3f}{'*' if value >= HEAD_THRESHOLD else ' '}"
