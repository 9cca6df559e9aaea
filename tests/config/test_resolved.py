"""A resolved config is frozen and carries what its names name: the task's spec and the
variant, looked up once where it is made, kept out of its settings and its run's name."""

import dataclasses

import pytest

from mixit.config.overrides import with_settings
from mixit.models.adapters import get_variant
from mixit.running.runs import run_dir_name
from mixit.tasks import get_task
from mixit.training.resolve import fit_model_to_data, resolve_config, stored_config


def test_a_resolved_config_carries_its_task_spec_and_variant():
    config = resolve_config("retrieval", "frozen-qk", "tiny", 3)
    assert config.task_spec is get_task("retrieval")
    assert config.variant_spec == get_variant("frozen-qk")
    assert "task_spec" not in config.to_dict() and "variant_spec" not in config.to_dict()
    again = stored_config(config.to_dict())
    assert again == config and again.task_spec is config.task_spec
    assert again.variant_spec == config.variant_spec


@pytest.mark.parametrize(
    "change",
    [
        lambda c: setattr(c, "seed", 1),
        lambda c: setattr(c.model, "n_layer", 3),
        lambda c: setattr(c.train, "lr", 0.5),
        lambda c: setattr(c.task, "n_train", 7),
    ],
)
def test_nothing_changes_a_resolved_config_in_place(change):
    config = resolve_config("retrieval", "mixit", "tiny", 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        change(config)


def test_a_change_is_a_new_config_with_its_own_name_and_the_old_one_kept():
    config = resolve_config("addition", "standard", "tiny", 0)
    name = run_dir_name(config)
    changed = with_settings(config, {"train.lr": "0.01", "model.n_layer": 3})
    assert (changed.train.lr, changed.model.n_layer) == (0.01, 3)
    assert (config.train.lr, config.model.n_layer) != (0.01, 3)
    assert run_dir_name(config) == name != run_dir_name(changed)
    assert changed.task_spec is config.task_spec
    fitted = fit_model_to_data(config, config.task_spec.make_data(config.task, 0))
    assert fitted.model.vocab_size > 0 and config.model.vocab_size == 0


def test_a_comparison_resolved_once_per_model_still_checks_its_last_seed():
    from mixit.common.errors import UsageError
    from mixit.study.plan import Comparison

    near = 2**62 - 2
    fits = Comparison("addition", ("standard",), "tiny", range(near, near + 2), None, {})
    assert [key[1] for key in fits.configs()] == [near, near + 1]
    past = Comparison("addition", ("standard",), "tiny", range(near, near + 3), None, {})
    with pytest.raises(UsageError, match="--seed must be in"):
        past.configs()
