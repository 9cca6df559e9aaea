"""Every preset of every task resolves to a valid config whose data fits the model."""

from pathlib import Path

import pytest

from mixit.models.variants import VARIANTS
from mixit.tasks import PRESET_NAMES, TASKS, get_task
from mixit.training.resolve import fit_model_to_data, resolve_config

EXAMPLE = Path(__file__).parents[2] / "examples" / "custom"
# The custom task has no data of its own: the presets are tried on the shipped example.
NEEDS = {"custom": {"task.data_files": f"{EXAMPLE / 'train.jsonl'},{EXAMPLE / 'test.jsonl'}"}}


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("task", list(TASKS))
def test_every_preset_setting_reaches_every_models_config(task, preset):
    settings = TASKS[task].presets[preset]
    for model in VARIANTS:
        config = resolve_config(task, model, preset, overrides=NEEDS.get(task))
        for key, value in settings.items():
            section, name = key.split(".")
            assert getattr(getattr(config, section), name) == value, (model, key)


@pytest.mark.parametrize("task", list(TASKS))
def test_tiny_preset_data_fits_the_model(task):
    config = resolve_config(task, "mixit", "tiny", overrides=NEEDS.get(task))
    data = get_task(task).make_data(config.task, 0)
    config = fit_model_to_data(config, data)
    assert config.model.block_size == data.train.inputs.shape[1]
    assert data.train.inputs.max() < config.model.vocab_size
