import os

import pytest
import torch

from mixit.config import ModelConfig


@pytest.fixture(autouse=True)
def _two_threads():
    torch.set_num_threads(2)


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Tokenizers and token caches of the tests go to a temporary folder, not ~/.cache."""
    os.environ["MIXIT_CACHE"] = str(tmp_path_factory.mktemp("mixit-cache"))


@pytest.fixture
def small_config() -> ModelConfig:
    return ModelConfig(vocab_size=20, block_size=16, n_embd=32, n_head=4, n_layer=2)
