"""Layer 3: the tasks, one module each, and their registry: importing this package registers
every task in ``TASKS``. It imports ``common``, ``config`` (``Settings``) and ``data``."""

from mixit.tasks import (
    addition,
    compression,
    custom,
    dyck,
    fuzzy_recall,
    khop,
    lm,
    memorization,
    modular_addition,
    mqar,
    noisy_recall,
    retrieval,
    selective_copying,
    sentiment,
)
from mixit.tasks.addition import AdditionConfig
from mixit.tasks.base import (
    IGNORE_INDEX,
    PRESET_NAMES,
    TASKS,
    Split,
    TaskData,
    TaskSpec,
    get_task,
    register,
)
from mixit.tasks.dyck import DyckConfig
from mixit.tasks.khop import KHopConfig
from mixit.tasks.memorization import MemorizationConfig
from mixit.tasks.modular_addition import ModularAdditionConfig
from mixit.tasks.retrieval import RetrievalConfig
from mixit.tasks.rows import answer_split

__all__ = [
    "IGNORE_INDEX",
    "PRESET_NAMES",
    "TASKS",
    "AdditionConfig",
    "DyckConfig",
    "KHopConfig",
    "MemorizationConfig",
    "ModularAdditionConfig",
    "RetrievalConfig",
    "Split",
    "TaskData",
    "TaskSpec",
    "addition",
    "answer_split",
    "compression",
    "custom",
    "dyck",
    "fuzzy_recall",
    "get_task",
    "khop",
    "lm",
    "memorization",
    "modular_addition",
    "mqar",
    "noisy_recall",
    "register",
    "retrieval",
    "selective_copying",
    "sentiment",
]
