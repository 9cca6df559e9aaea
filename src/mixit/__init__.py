"""mixit: take transformers apart, following "Is Random Attention Sufficient for Sequence Modeling?"

Python entry points (the ``mixit`` command is a thin layer over them):
``train(task=..., model=..., preset=..., seed=..., out=..., overrides={...})`` -> summary dict,
``compare(...)`` -> the comparison dict, ``load_run(dir)`` -> ``(model, config)``,
``spectrum(model_or_config)`` -> the five variants of any causal LM (``mixit.spectrum``).
"""

from mixit.compare import compare
from mixit.model import Decoder
from mixit.rundir import load_run
from mixit.spectrum import spectrum
from mixit.train import train
from mixit.variants import VARIANTS

__all__ = ["VARIANTS", "Decoder", "compare", "load_run", "spectrum", "train"]
