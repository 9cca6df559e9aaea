"""mixit: take transformers apart, following "Is Random Attention Sufficient for Sequence Modeling?"

Python entry points (the ``mixit`` command is a thin layer over them):
``train(task=..., model=..., preset=..., seed=..., out=..., overrides={...})`` -> summary dict,
``compare(...)`` -> the comparison dict, ``load_run(dir)`` -> ``(model, config)``,
``spectrum(model_or_config)`` -> the five variants of any causal LM, with ``Parts`` saying
where a user model's parts are.

The layers, from the floor up, are the packages ``common``, ``config``, ``data``, ``tasks``,
``models``, ``cost``, ``readings``, ``training``, ``analysis``, ``inference``, ``running``,
``tuning``, ``comparisons``, ``experiments``, ``bench`` and ``cli``: each imports only those
before it (tests/test_structure.py).
"""

from mixit.comparisons.compare import compare
from mixit.models.adapters import Parts, spectrum
from mixit.models.decoder import Decoder
from mixit.models.variants import VARIANTS
from mixit.training.rundir import load_run
from mixit.training.train import train

__all__ = ["VARIANTS", "Decoder", "Parts", "compare", "load_run", "spectrum", "train"]
