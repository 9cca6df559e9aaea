"""Where missing runs train: fewer runs than jobs get the machine's cores among themselves."""

from mixit.running import runs
from mixit.running.launchers import Launch
from mixit.training.resolve import resolve_config


def test_a_single_missing_run_trains_with_every_core_despite_jobs(tmp_path, monkeypatch):
    # A halving's last rung leaves one run: a pool of two would leave half the cores idle.
    def no_pool(*args, **kwargs):
        raise AssertionError("one run trained in a worker pool of two")

    monkeypatch.setattr(runs, "worker_pool", no_pool)
    overrides = {"train.steps": 2, "train.eval_every": 2, "task.n_train": 64, "task.n_test": 32}
    config = resolve_config("addition", "standard", "tiny", 0, overrides)
    summaries, trained = runs.train_missing({"one": config}, tmp_path, launch=Launch(jobs=2))
    assert trained == 1 and summaries["one"]["steps_run"] == 2


def test_a_config_dict_is_what_dataclasses_asdict_gives_for_every_task_and_model():
    """Run directories are named by these dicts' hash: the fast conversion moves none."""
    import dataclasses

    from mixit.models.variants import VARIANTS
    from mixit.tasks import TASKS

    for task in [name for name in TASKS if name != "custom"]:  # custom needs its files
        for model in VARIANTS:
            config = resolve_config(task, model)
            assert config.to_dict() == dataclasses.asdict(config)
