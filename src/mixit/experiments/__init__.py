"""One module per result of the paper; ``EXPERIMENTS`` in the order ``reproduce all`` runs."""

from mixit.experiments.base import Experiment
from mixit.experiments.estimate import estimate_reproduction
from mixit.experiments.registry import EXPERIMENTS
from mixit.experiments.runner import reproduce

__all__ = ["EXPERIMENTS", "Experiment", "estimate_reproduction", "reproduce"]
