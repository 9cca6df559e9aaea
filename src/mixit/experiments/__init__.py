"""Layer 9: the paper's results, one module per table or figure, and the machinery that plans,
trains and judges them; ``EXPERIMENTS`` in the order ``reproduce all`` runs."""

from mixit.experiments.base import Experiment
from mixit.experiments.estimate import estimate_reproduction
from mixit.experiments.registry import EXPERIMENTS
from mixit.experiments.runner import reproduce

__all__ = ["EXPERIMENTS", "Experiment", "estimate_reproduction", "reproduce"]
