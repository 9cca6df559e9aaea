"""One module per result of the paper; ``EXPERIMENTS`` in the order ``reproduce all`` runs."""

from mixit.experiments import (
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
)
from mixit.experiments.base import Experiment
from mixit.experiments.estimate import estimate_reproduction
from mixit.experiments.runner import reproduce

_IN_ORDER = (table1, figure2, table2, table3, table4, table5, table6, table7, figure3)
EXPERIMENTS: dict[str, Experiment] = {
    module.EXPERIMENT.name: module.EXPERIMENT for module in (*_IN_ORDER, throughput, theorem21)
}

__all__ = ["EXPERIMENTS", "Experiment", "estimate_reproduction", "reproduce"]
