"""Every preset of every task resolves to a valid config whose data fits the model."""

from pathlib import Path

import pytest

from mixit.tasks import PRESET_NAMES, TASKS
from mixit.train import fit_model_to_data, get_task, resolve_config
from mixit.variants import VARIANTS

EXAMPLE = Path(__file__).parents[1] / "examples" / "custom"
# The custom task has no data of its own: the presets are tried on the shipped example.
NEEDS = {"custom": {"task.data_files": f"{EXAMPLE / 'train.jsonl'},{EXAMPLE / 'test.jsonl'}"}}


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("task", list(TASKS))
def test_preset_resolves_for_every_model(task, preset):
    for model in VARIANTS:
        config = resolve_config(task, model, preset, overrides=NEEDS.get(task))
        assert config.preset == preset
    assert set(TASKS[task].presets) == set(PRESET_NAMES)


@pytest.mark.parametrize("task", list(TASKS))
def test_tiny_preset_data_fits_the_model(task):
    config = resolve_config(task, "mixit", "tiny", overrides=NEEDS.get(task))
    data = get_task(task).make_data(config.task, 0)
    fit_model_to_data(config, data)
    assert config.model.block_size == data.train.inputs.shape[1]
    assert data.train.inputs.max() < config.model.vocab_size
