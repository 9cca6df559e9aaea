"""Where missing runs train: fewer runs than jobs get the machine's cores among themselves."""

import pytest

from mixit.running import runs
from mixit.running.launchers import Launch
from mixit.training.resolve import resolve_config


def test_a_single_missing_run_trains_with_every_core_despite_jobs(tmp_path, monkeypatch):
    # A halving's last rung leaves one run: a pool of two would leave half the cores idle.
    def no_pool(*args, **kwargs):
        raise AssertionError("one run trained in a worker pool of two")

    monkeypatch.setattr(runs, "kept_pool", no_pool)
    overrides = {"train.steps": 2, "train.eval_every": 2, "task.n_train": 64, "task.n_test": 32}
    config = resolve_config("addition", "standard", "tiny", 0, overrides)
    summaries, trained = runs.train_missing({"one": config}, tmp_path, launch=Launch(jobs=2))
    assert trained == 1 and summaries["one"]["steps_run"] == 2


def test_a_config_dict_is_what_dataclasses_asdict_gives_for_every_task_and_model():
    """Run directories are named by these dicts' hash: the fast conversion moves none."""
    import dataclasses

    from mixit.config.schema import RESOLVED
    from mixit.models.variants import VARIANTS
    from mixit.tasks import TASKS

    for task in [name for name in TASKS if name != "custom"]:  # custom needs its files
        for model in VARIANTS:
            config = resolve_config(task, model)
            settings = [f for f in dataclasses.fields(config) if not f.metadata.get(RESOLVED)]
            plain = {f.name: getattr(config, f.name) for f in settings}
            assert config.to_dict() == {
                name: dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
                for name, value in plain.items()
            }


def test_a_planned_run_stopped_mid_way_goes_on_from_its_checkpoint(tmp_path, monkeypatch, steps):
    """A plan's run checkpoints as it goes (with no train.checkpoint_every of its own), under
    the same directory name; stopped mid-way, the same plan resumes it there, to the numbers
    of an uninterrupted run."""
    import json

    import torch

    from mixit.training.checkpoint import latest_checkpoint

    monkeypatch.setattr(runs, "CHECKPOINT_FLOOR", 1)
    overrides = {"train.steps": 32, "train.eval_every": 8, "task.n_train": 64, "task.n_test": 32}
    overrides |= {"model.n_embd": 16, "model.n_layer": 1, "train.batch_size": 8}
    config = resolve_config("addition", "standard", "tiny", 0, overrides)
    name = runs.run_dir_name(config)
    whole, _ = runs.train_missing({"one": config}, tmp_path / "whole")
    steps.stop = 21
    with pytest.raises(KeyboardInterrupt):
        runs.train_missing({"one": config}, tmp_path / "cut")
    stored = json.loads((tmp_path / "cut" / name / "config.json").read_text())
    assert stored["train"]["checkpoint_every"] == 32 // runs.CHECKPOINTS_PER_RUN
    state = torch.load(latest_checkpoint(tmp_path / "cut" / name) / "state.pt")
    assert json.loads(state["progress"])["step"] == 20  # the last multiple of 4 before the stop
    steps.stop, steps.trained = None, []
    resumed, trained = runs.train_missing({"one": config}, tmp_path / "cut")
    assert trained == 1 and steps.trained[0] == 20
    assert resumed["one"]["metrics"] == whole["one"]["metrics"]
