"""Table 7: covariance between the token representations of a sequence against depth, for
the random transformer and MixiT, on language-model text; claim C9.

Measured at initialisation (the claim: rank collapse is a property of the initialised
network) with every weight N(0, 0.02^2) (``model.init=gpt2``, the authors' Hugging Face
initialisation), and after a short training run at a few depths for comparison. The paper
does not say at which point its numbers were taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.analysis import token_covariance
from mixit.analysis.covariance import covariance_at_initialisation
from mixit.common.plots import line_plot
from mixit.config.schema import RunConfig
from mixit.paper.claims import judged, margin, paired, per_seed
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
)
from mixit.study.measures import (
    cached_measurement,
    mean,
    mean_std,
    measured_overrides,
    measurement_key,
    seeds_note,
)
from mixit.study.text import PAPER_FACTOR, against_paper, markdown_table, ran
from mixit.tasks import get_task
from mixit.training.resolve import fit_model_to_data
from mixit.training.rundir import load_run

MODELS = ("random", "mixit")
DEPTHS = (2, 4, 8, 16, 32)
TRAINED_DEPTHS = (2, 8)
PAPER = {  # Table 7, covariance
    "random": (0.00218, 0.01450, 0.02075, 0.01946, 0.05438),
    "mixit": (0.00088, 0.00260, 0.00210, 0.00154, 0.00104),
}
INIT = {"model.init": "gpt2"}
TRAINING = {
    "tiny": {"train.steps": 150, "train.eval_every": 150},
    "small": {"train.steps": 300, "train.eval_every": 300},
    "paper": {},
}
SEQUENCES = 16


def _trained_runs(scale: str, depth: int) -> list[Run]:
    return runs("lm", MODELS, range(1), scale, {"model.n_layer": depth, **TRAINING[scale]})


def plan(scale: str, seeds: range) -> list[Run]:
    return [run for depth in TRAINED_DEPTHS for run in _trained_runs(scale, depth)]


def _init_config(scale: str, model: str, depth: int, seed: int, overrides: Overrides) -> RunConfig:
    """A model measured at initialisation: the experiment's init and depth, then the
    reproduction's model and training overrides (its construction among them)."""
    run = Run("lm", model, seed, (*INIT.items(), ("model.n_layer", depth)))
    return run.config(scale, measured_overrides(overrides))


def measures(scale: str, seeds: range, overrides: Overrides) -> list[RunConfig]:
    return [
        _init_config(scale, model, depth, seed, overrides)
        for model in MODELS
        for depth in DEPTHS
        for seed in seeds
    ]


def _at_initialisation(
    scale: str, seeds: range, overrides: Overrides
) -> dict[str, list[list[dict[str, float]]]]:
    """{model: [[{covariance, correlation} per seed] per depth]} on test text windows."""
    first = _init_config(scale, "mixit", DEPTHS[0], 0, overrides)
    data = get_task("lm").make_data(first.task, 0)
    inputs = data.test.inputs[:SEQUENCES]  # (S, T)
    table: dict[str, list[list[dict[str, float]]]] = {}
    for model in MODELS:
        table[model] = []
        for depth in DEPTHS:
            per_seed = []
            for seed in seeds:
                config = _init_config(scale, model, depth, seed, overrides)
                config = fit_model_to_data(config, data)
                per_seed.append(covariance_at_initialisation(config, inputs))
            table[model].append(per_seed)
    return table


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C9: from depth 2 to the largest depth the random transformer's token correlation at
    initialisation rises, MixiT's stays flat."""
    correlation = results["correlation_at_init"]  # {model: [[value per seed] per depth]}
    rise = {m: mean(correlation[m][-1]) - mean(correlation[m][0]) for m in MODELS}
    by_seed = {m: paired(correlation[m][-1], correlation[m][0]) for m in MODELS}
    flat, rises = margin("C9", "flat"), margin("C9", "rise")
    readings = {
        f"random's rise >= {rises:.2f}": per_seed(by_seed["random"], rises),
        f"|mixit's rise| <= {flat:.2f}": per_seed([flat - abs(r) for r in by_seed["mixit"]]),
    }
    return [judged("C9", readings, {"rise": rise})]


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    key = measurement_key(scale, seeds, overrides, depths=list(DEPTHS), sequences=SEQUENCES)
    init = cached_measurement(
        out / "measurements.json", key, lambda: _at_initialisation(scale, seeds, overrides)
    )
    correlation = {m: [[s["correlation"] for s in d] for d in init[m]] for m in MODELS}
    covariance = {m: [[s["covariance"] for s in d] for d in init[m]] for m in MODELS}
    line_plot(
        out / "table7.png",
        DEPTHS,
        correlation,
        f"Token correlation at initialisation ({ran(scale, seeds)}, LM text)",
        "layers",
        "mean correlation between tokens",
        log_x=True,
    )
    trained = _after_training(scale, summaries)
    # PAPER's values are at DEPTHS; fewer depths (a test's) compare with the first of them.
    pairs = {m: zip(covariance[m], PAPER[m], strict=False) for m in MODELS}
    gaps = {m: [against_paper(mean(v), paper) for v, paper in pairs[m]] for m in MODELS}
    rows = (
        [[f"{m} (paper covariance)", *(f"{p:.5f}" for p in PAPER[m])] for m in MODELS]
        + [[f"{m} covariance", *(mean_std(v, digits=5) for v in covariance[m])] for m in MODELS]
        + [[f"{m} covariance against the paper's", *gaps[m]] for m in MODELS]
        + [[f"{m} correlation", *(mean_std(v) for v in correlation[m])] for m in MODELS]
    )
    trained_rows = [
        [name, f"{v['covariance']:.4f}", f"{v['correlation']:.3f}"] for name, v in trained.items()
    ]
    markdown = "\n\n".join(
        [
            "At initialisation (every weight N(0, 0.02^2)), last-layer residual stream, "
            f"{SEQUENCES} test windows. " + seeds_note(seeds),
            markdown_table(["", *(f"depth {d}" for d in DEPTHS)], rows),
            _gaps_note(gaps),
            "![table 7](table7.png)",
            "After a short training run (seed 0, initialised as the scale's lm runs are under the "
            "construction). The covariance is not normalised: it grows with the square of the "
            "residual stream's scale, which training changes, so these values are not comparable "
            "with those at initialisation or between depths; the correlation is the scale-free "
            "reading:",
            markdown_table(["model", "covariance", "correlation"], trained_rows),
            trained_order_note(trained),
        ]
    )
    results = {
        "depths": list(DEPTHS),
        "covariance_at_init": covariance,
        "correlation_at_init": correlation,
        "after_training": trained,
    }
    return Report(markdown, results, judge(results))


def _after_training(scale: str, summaries: Summaries) -> dict[str, Mapping[str, float]]:
    """``{"MODEL depth D": token_covariance}`` of the trained runs, on the test windows."""
    trained = {}
    for depth in TRAINED_DEPTHS:
        for run in _trained_runs(scale, depth):
            model, config = load_run(summaries[run]["run_dir"])
            data = get_task("lm").make_data(config.task, 0)
            trained[f"{run.model} depth {depth}"] = token_covariance(
                model, data.test.inputs[:SEQUENCES]
            )
    return trained


def trained_order_note(trained: Mapping[str, Mapping[str, float]]) -> str:
    """Whether, after training, the deepest pair of trained runs keeps the claim's order (the
    random transformer's tokens more correlated than MixiT's), or reverses it."""
    both = [d for d in TRAINED_DEPTHS if all(f"{m} depth {d}" in trained for m in MODELS)]
    if not both:
        return ""
    depth = max(both)
    mixit, random = trained[f"mixit depth {depth}"], trained[f"random depth {depth}"]
    values = f"MixiT {mixit['correlation']:.3f}, the random transformer {random['correlation']:.3f}"
    if mixit["correlation"] > random["correlation"]:
        return (
            f"After training, the order at depth {depth} contradicts the claim ({values}): the "
            "claim and its rule are about initialisation, and these runs do not carry it past "
            "training."
        )
    return f"After training, the order at depth {depth} is still the claim's ({values})."


def _gaps_note(gaps: Mapping[str, list[str]]) -> str:
    """What the comparison with the paper's covariance says, and why it may differ."""
    far = [m for m in MODELS if any(not g.startswith("within") for g in gaps[m])]
    if not far:
        return f"Every covariance is within {PAPER_FACTOR:g}× of the paper's."
    return (
        f"Beyond {PAPER_FACTOR:g}× from the paper's covariance: {', '.join(far)} (the row "
        "above says by how much at each depth). The paper does not say at which point of "
        "training, at which width or on which text its numbers were taken; the claim's rule "
        "reads the correlation, which does not depend on the representations' scale."
    )


EXPERIMENT = Experiment(
    "table7", "Table 7: token covariance against depth", plan, report, judge, measures
)
