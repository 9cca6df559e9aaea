"""Layer 9: what the paper says. ``claims`` writes each finding and the rule that judges it
down before any result; one module per table or figure (``table1`` ... ``table7``,
``figure2``, ``figure3``, ``theorem21``, ``throughput``) plans its runs and writes its report;
``registry`` lists them in the order ``reproduce all`` runs; ``runner``, ``estimate``,
``verdicts`` and the ablation and width questions run and read a reproduction. It imports
``study`` and the layers below."""

from mixit.paper.estimate import estimate_reproduction
from mixit.paper.registry import EXPERIMENTS
from mixit.paper.runner import reproduce
from mixit.study.experiment import Experiment

__all__ = ["EXPERIMENTS", "Experiment", "estimate_reproduction", "reproduce"]
