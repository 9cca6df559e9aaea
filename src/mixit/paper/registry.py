"""Every experiment by name, in the order ``reproduce all`` runs them; the machinery that runs
them (runner, estimate, ablation) reads this registry, not the package, so that it imports
one way."""

from mixit.paper import (
    figure2,
    figure3,
    table1,
    table2,
    table3,
    table4,
    table5,
    table6,
    table7,
    theorem21,
    throughput,
    width,
)
from mixit.study.experiment import Experiment

_IN_ORDER = (table1, figure2, table2, table3, table4, table5, table6, table7, figure3)
EXPERIMENTS: dict[str, Experiment] = {
    module.EXPERIMENT.name: module.EXPERIMENT for module in (*_IN_ORDER, throughput, theorem21)
}
# Questions of this project about the paper's results, asked by name only: not in `all`.
QUESTIONS: dict[str, Experiment] = {e.name: e for e in (width.EXPERIMENT, width.DEPTH_EXPERIMENT)}
