import pytest
import torch

from mixit.config import ModelConfig


@pytest.fixture(autouse=True)
def _two_threads():
    torch.set_num_threads(2)


@pytest.fixture
def small_config() -> ModelConfig:
    return ModelConfig(vocab_size=20, block_size=16, n_embd=32, n_head=4, n_layer=2)
