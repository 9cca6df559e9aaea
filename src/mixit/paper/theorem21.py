"""Theorem 2.1: MixiT's covariance at initialisation against the SDE (2.4); claim C12.

Three parts, all at initialisation (nothing trains):

1. the recursion the theorem is about (``analysis.theory``), simulated at several widths with
   depth tau * n, against Euler-Maruyama paths of eq. 2.4 from the same start;
2. the same comparison at the largest width under the conventions the paper leaves open,
   read the other way (row means, W^M variance 1/sqrt(nm)), to show which reading the
   theorem needs;
3. the real model's blocks: the mean correlation between token representations against
   depth for MixiT (the paper's mixing scale) and the random transformer (the picture behind
   Table 7), on random tokens, built under the reproduction's model and training overrides.

Parts 1 and 2 draw their paths from each of the reproduction's seeds in turn, and C12 is
judged seed by seed, as the other claims' comparisons are (``claims.per_seed``).
The recursion and the SDE are the paper's equations whatever the construction, so C12 is
independent of the overrides.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from mixit.analysis.covariance import covariance_at_initialisation
from mixit.analysis.theory import compare, simulate_recursion, solve_sde, upper_indices
from mixit.common.io import JSONObject
from mixit.common.plots import PAGE, line_plot, save, series_style, styled
from mixit.config.schema import RunConfig
from mixit.paper.claims import judged, margin, per_seed
from mixit.study.claim import (
    OVERRIDES,
    Claim,
)
from mixit.study.experiment import (
    Experiment,
    Overrides,
    Report,
    Run,
    Summaries,
)
from mixit.study.measures import (
    cached_measurement,
    mean,
    mean_std,
    measured_overrides,
    measurement_key,
    seeds_text,
)
from mixit.study.text import markdown_table
from mixit.training.resolve import resolve_config

WIDTHS = {
    "tiny": (32, 64, 128, 256),
    "small": (32, 64, 128, 256, 512),
    "paper": (32, 64, 128, 256, 512),
}
PATHS = {"tiny": 4000, "small": 8000, "paper": 8000}
TOKENS, TAU, SDE_STEPS = 3, 0.1, 50
START_CORRELATION = 0.5  # Phi_0: ones on the diagonal, 0.5 elsewhere
DEPTHS = (2, 4, 8, 16, 32)
MODEL_SHAPE = {"model.n_embd": 128, "model.n_head": 4, "model.init": "gpt2"}
SEQ_LEN, SEQUENCES, VOCAB = 64, 16, 1024
MODELS = ("mixit", "random")


def plan(scale: str, seeds: range) -> list[Run]:
    return []


def start() -> torch.Tensor:
    phi = torch.full((TOKENS, TOKENS), START_CORRELATION, dtype=torch.float64)
    return phi + (1 - START_CORRELATION) * torch.eye(TOKENS, dtype=torch.float64)


def _theory(scale: str, seed: int) -> JSONObject:
    widths, paths = WIDTHS[scale], PATHS[scale]
    generator = torch.Generator().manual_seed(seed)
    sde = solve_sde(start(), TAU, paths, SDE_STEPS, generator)
    per_width = [
        compare(simulate_recursion(start(), n, TAU, paths, generator), sde) for n in widths
    ]
    largest = widths[-1]
    alternatives = {
        name: compare(simulate_recursion(start(), largest, TAU, paths, generator, **kw), sde)
        for name, kw in {
            "row mean": {"mean_over": "row"},
            "W^M variance 1/sqrt(nm)": {"entry_scale": "variance"},
        }.items()
    }
    paths_to_plot = {
        "sde": _sample_path(lambda phi: solve_sde(phi, TAU / 10, 1, SDE_STEPS // 10, generator)),
        "recursion n=" + str(largest): _sample_path(
            lambda phi: simulate_recursion(phi, largest, TAU / 10, 1, generator)
        ),
    }
    # Two independent SDE samples differ by sampling noise alone: the floor of the discrepancy.
    floor = compare(solve_sde(start(), TAU, paths, SDE_STEPS, generator), sde)["discrepancy"]
    return {
        "widths": list(widths),
        "per_width": per_width,
        "noise_floor": floor,
        "alternatives": {k: v["discrepancy"] for k, v in alternatives.items()},
        "sample_paths": paths_to_plot,
    }


def _sample_path(step) -> list[list[float]]:
    """Phi^{11} and Phi^{12} along 10 segments of length tau/10, for 4 independent paths."""
    traces = []
    for _ in range(4):
        phi, trace = start(), [[1.0, START_CORRELATION]]
        for _ in range(10):
            phi = step(phi)[0]
            trace.append([phi[0, 0].item(), phi[0, 1].item()])
        traces.append(trace)
    return traces


def _model_config(variant: str, depth: int, seed: int, overrides: Overrides) -> RunConfig:
    shape = {
        **MODEL_SHAPE,
        "model.n_layer": depth,
        "model.vocab_size": VOCAB,
        "model.block_size": SEQ_LEN,
    }
    return resolve_config("lm", variant, "paper", seed, {**measured_overrides(overrides), **shape})


def measures(scale: str, seeds: range, overrides: Overrides) -> list[RunConfig]:
    return [
        _model_config(variant, depth, seed, overrides)
        for variant in MODELS
        for depth in DEPTHS
        for seed in seeds
    ]


def _model_correlation(seeds: range, overrides: Overrides) -> dict[str, list[list[float]]]:
    tokens = torch.randint(
        0, VOCAB, (SEQUENCES, SEQ_LEN), generator=torch.Generator().manual_seed(0)
    )
    table: dict[str, list[list[float]]] = {}
    for variant in MODELS:
        table[variant] = [
            [
                covariance_at_initialisation(
                    _model_config(variant, depth, seed, overrides), tokens
                )["correlation"]
                for seed in seeds
            ]
            for depth in DEPTHS
        ]
    return table


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C12, read seed by seed (``claims.per_seed``): the discrepancy falls from the smallest
    to the largest width, and is within the rule's limit at the largest, on every seed and on
    the 95 % interval over them; a seed on which it rises leaves the claim undecided, or not
    reproduced when every seed rises."""
    by_seed = list(results["discrepancy_by_seed"].values())
    limit = margin("C12", "limit")
    readings = {
        "falls from the smallest width to the largest": per_seed(
            [seed[0] - seed[-1] for seed in by_seed], strict=True
        ),
        f"<= {limit:.2f} at the largest width": per_seed([limit - seed[-1] for seed in by_seed]),
    }
    widths = list(map(str, results["widths"]))
    measured = {
        "discrepancy": dict(zip(widths, results["discrepancy"], strict=True)),
        "by_seed": {seed: dict(zip(widths, values, strict=True))
                    for seed, values in results["discrepancy_by_seed"].items()},
    }  # fmt: skip
    return [judged("C12", readings, measured)]


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    key = {"paths": PATHS[scale], "tau": TAU, "tokens": TOKENS, "paths_seeded": "per seed"}
    per_seed = cached_measurement(
        out / "theory.json",
        measurement_key(scale, seeds, {}, **key),
        lambda: [_theory(scale, seed) for seed in seeds],
    )
    models = cached_measurement(
        out / "models.json",
        measurement_key(scale, seeds, overrides, **key),
        lambda: _model_correlation(seeds, overrides),
    )
    theory = per_seed[0]
    widths = theory["widths"]
    by_seed = [[w["discrepancy"] for w in seed["per_width"]] for seed in per_seed]
    discrepancy = [mean(values) for values in zip(*by_seed, strict=True)]
    noise_floor = mean([seed["noise_floor"] for seed in per_seed])
    alternatives = {
        name: mean([seed["alternatives"][name] for seed in per_seed])
        for name in theory["alternatives"]
    }
    _plots(out, widths, by_seed, noise_floor, theory["sample_paths"], models)
    markdown = _markdown(scale, seeds, by_seed, noise_floor, theory, alternatives, models)
    results = {
        "widths": widths,
        "discrepancy": discrepancy,
        "discrepancy_by_seed": dict(zip(map(str, seeds), by_seed, strict=True)),
        "per_width": theory["per_width"],
        "noise_floor": noise_floor,
        "alternative_conventions": alternatives,
        "model_correlation": {"depths": list(DEPTHS), **models},
    }
    return Report(markdown, results, judge(results))


def _markdown(
    scale: str,
    seeds: range,
    by_seed: list[list[float]],
    noise_floor: float,
    theory: Mapping[str, Any],
    alternatives: Mapping[str, float],
    models: Mapping[str, Any],
) -> str:
    """The report's text: the discrepancy per width, the largest width's entries (from
    ``theory``, the first seed's measurement), the other conventions and the real blocks."""
    widths, per_width_at_largest = theory["widths"], theory["per_width"][-1]
    detail = _largest_width_rows(per_width_at_largest)
    return "\n\n".join(
        [
            f"{TOKENS} tokens, Phi_0 = ones on the diagonal and {START_CORRELATION} elsewhere, "
            f"tau = {TAU} (depth = tau x width), {PATHS[scale]} independent paths per width, "
            f"drawn from each of {seeds_text(seeds)}; SDE by Euler-Maruyama with {SDE_STEPS} "
            "steps. Discrepancy = mean relative error of the means and standard deviations of "
            "the entries of Phi at tau; mean ± std over the seeds.",
            markdown_table(
                ["width", "depth", "discrepancy"],
                [
                    [n, max(1, round(TAU * n)), mean_std(values, digits=4)]
                    for n, values in zip(widths, zip(*by_seed, strict=True), strict=True)
                ],
            ),
            f"Two independent SDE samples of the same size differ by {noise_floor:.4f} (mean "
            "over the seeds; the sampling-noise floor of the discrepancy).",
            "![discrepancy](discrepancy.png) ![sample paths](sample_paths.png)",
            f"At width {widths[-1]}, recursion / SDE (seed {seeds.start}):",
            markdown_table(["entry", "mean", "std", "W1"], detail),
            f"The conventions read the other way, at width {widths[-1]} (discrepancy, mean "
            "over the seeds): "
            + ", ".join(f"{k} {v:.3f}" for k, v in alternatives.items())
            + ". See docs/theorem21.md for each convention.",
            "The real blocks at initialisation (every weight N(0, 0.02^2), MixiT with the "
            "paper's W^M scale and shaped residual), mean correlation between tokens. "
            + f"Mean ± std over {len(seeds)} seeds:",
            markdown_table(
                ["model", *(f"depth {d}" for d in DEPTHS)],
                [[m, *(mean_std(v) for v in models[m])] for m in models],
            ),
            "![rank collapse](rank_collapse.png)",
        ]
    )


def _plots(
    out: Path,
    widths: list[int],
    by_seed: list[list[float]],
    noise_floor: float,
    sample_paths: JSONObject,
    models: JSONObject,
) -> None:
    """The discrepancy against width, sample paths, and token correlation against depth."""
    line_plot(
        out / "discrepancy.png",
        widths,
        {
            "recursion vs SDE": [list(values) for values in zip(*by_seed, strict=True)],
            "SDE vs SDE (sampling noise)": [[noise_floor]] * len(widths),
        },
        f"Theorem 2.1: recursion vs SDE at tau = {TAU}",
        "width n",
        "mean relative error (means, stds of Phi entries)",
        log_x=True,
        log_y=True,
    )
    _plot_paths(out / "sample_paths.png", sample_paths)
    line_plot(
        out / "rank_collapse.png",
        DEPTHS,
        models,
        "Token correlation at initialisation (random tokens, width 128)",
        "layers",
        "mean correlation between tokens",
        log_x=True,
    )


def _largest_width_rows(largest: JSONObject) -> list[list[str]]:
    """Each entry of Phi at the largest width: recursion / SDE mean and std, and W1."""
    rows, cols = upper_indices(TOKENS)
    entries = [f"Phi{r + 1}{c + 1}" for r, c in zip(rows.tolist(), cols.tolist(), strict=True)]
    return [
        [
            entry,
            f"{largest['simulated_mean'][i]:.3f} / {largest['sde_mean'][i]:.3f}",
            f"{largest['simulated_std'][i]:.3f} / {largest['sde_std'][i]:.3f}",
            f"{largest['wasserstein'][i]:.4f}",
        ]
        for i, entry in enumerate(entries)
    ]


def _plot_paths(path: Path, traces: dict[str, list[list[list[float]]]]) -> None:
    times = [TAU * i / 10 for i in range(11)]
    with styled() as plt:
        fig, axes = plt.subplots(1, 2, figsize=(PAGE, 2.6))
        for index, (name, runs_) in enumerate(traces.items()):
            colour = series_style(name, index)["color"]
            for k, trace in enumerate(runs_):
                for entry, ax in enumerate(axes):
                    label = name if k == 0 else None
                    ax.plot(times, [p[entry] for p in trace], color=colour, alpha=0.7, label=label)
        for ax, title in zip(axes, ("Phi11 (diagonal)", "Phi12 (off-diagonal)"), strict=True):
            ax.set(title=title, xlabel="tau (depth / width)", ylabel="covariance entry")
            ax.legend()
        fig.suptitle("Sample paths: the recursion and the SDE")
        fig.tight_layout()
        save(fig, path)


EXPERIMENT = Experiment(
    "theorem21",
    "Theorem 2.1: the MixiT covariance SDE",
    plan,
    report,
    judge,
    measures,
    independent_of=(OVERRIDES,),
)
