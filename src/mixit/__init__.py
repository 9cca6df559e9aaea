"""mixit: take transformers apart, following "Is Random Attention Sufficient for Sequence Modeling?"

Python entry points (the ``mixit`` command is a thin layer over them):
``train(task=..., model=..., preset=..., seed=..., out=..., overrides={...})`` -> summary dict,
``compare(...)`` -> the comparison dict, ``suite(...)`` the same over many tasks,
``load_run(dir)`` -> ``(model, config)``,
``spectrum(model_or_config)`` -> the five variants of any causal LM, with ``Parts`` saying
where a user model's parts are, ``convert(model, "frozen-qk")`` -> one variant of a model the
user has, ``freeze(model)`` -> an exported model's frozen groups applied after loading,
``load_converted(folder)`` -> a converted model ``save_pretrained`` saved, loaded whole.

The layers, from the floor up, are the packages ``common``, ``config``, ``data``, ``tasks``,
``models``, ``cost``, ``training``, ``inference``, ``running``, ``analysis``, ``tuning``,
``study``, ``paper`` and ``cli``: each imports only those before it
(tests/test_structure.py).
"""

import importlib
from typing import Any

# The API by name and the module that defines it, imported on first use (PEP 562), so that
# ``mixit.common`` loads without torch: the command line sets OpenMP's wait policy first.
_API = {
    "VARIANTS": "mixit.models.variants",
    "Decoder": "mixit.models.decoder",
    "Parts": "mixit.models.adapters",
    "compare": "mixit.study.compare",
    "convert": "mixit.models.convert",
    "freeze": "mixit.models.convert",
    "load_converted": "mixit.models.convert",
    "load_run": "mixit.training.rundir",
    "spectrum": "mixit.models.adapters",
    "suite": "mixit.study.suite",
    "train": "mixit.training.train",
}
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'mixit' has no attribute '{name}'")
    return getattr(importlib.import_module(_API[name]), name)
