"""The differences between the paper's equations and the authors' code that the ablation
flips one at a time (docs/constructions.md has the table of options behind each), and the
experiment that judges each claim the ablation covers."""

from __future__ import annotations

from collections.abc import Sequence

from mixit.common.errors import UsageError
from mixit.config.overrides import Setting
from mixit.models.adapters import get_variant
from mixit.models.constructions import construction_overrides
from mixit.tasks import get_task

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
    "label-head": ("sentiment's answer among its two labels only", ("task.readout",)),
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
# Under the causal mask the row-sum drift is the visible mean (tests/models/test_constructions.py),
# so on its own it builds the equations' matrices again: it acts only together with
# non-causal mixing, which the whole authors' construction measures. It runs when asked for.
DEFAULT_DIFFERENCES = (*(d for d in DIFFERENCES if d != "row-sum-drift"), WHOLE)
EQUATIONS = "equations"


# The experiment that judges each claim the ablation covers.
def flips(difference: str, task: str, model: str) -> dict[str, Setting]:
    """The option values ``difference`` sets for ``task`` and ``model``: the authors' values of
    its keys where the authors' construction sets them for this pair, else nothing."""
    authors = construction_overrides("authors", get_variant(model), get_task(task).authors_settings)
    if difference == WHOLE:
        return {"model.construction": "authors"}
    return {key: authors[key] for key in DIFFERENCES[difference][1] if key in authors}


def check_differences(differences: Sequence[str]) -> list[str]:
    bad = [d for d in differences if d not in (*DIFFERENCES, WHOLE)]
    if bad:
        raise UsageError(
            f"unknown difference '{bad[0]}'; choose from: {', '.join([*DIFFERENCES, WHOLE])}"
        )
    return list(differences)
