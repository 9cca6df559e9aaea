"""``mixit presets tune`` (mixit.paper.presets): what the presets file records of the cost."""

import json
from pathlib import Path

from mixit.paper.presets import trials_train_seconds


def write_metrics(run_dir: Path, seconds: list[float]) -> None:
    run_dir.mkdir(parents=True)
    lines = [json.dumps({"step": 100 * (i + 1), "train_seconds": s}) for i, s in enumerate(seconds)]
    (run_dir / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def test_trials_train_seconds_sums_each_tuning_trials_last_evaluation(tmp_path):
    write_metrics(tmp_path / "addition-standard-s1000-aaaa", [10.0, 25.0])
    write_metrics(tmp_path / "addition-mixit-s1000-bbbb", [7.5])
    write_metrics(tmp_path / "addition-mixit-s200-cccc", [1000.0])  # a verdict run
    (tmp_path / "dyck-standard-s1000-dddd").mkdir()  # cut off before its first evaluation
    assert trials_train_seconds(tmp_path, 1000) == 32.5


def test_missing_only_tunes_the_groups_the_file_lacks_at_their_tasks_budget(tmp_path, monkeypatch):
    from mixit.paper import presets as paper_presets
    from mixit.tuning import presets as tuning_presets

    real = json.loads(tuning_presets.preset_path("tiny").read_text())
    dropped = next(g for g in real["groups"] if g["task"] == "addition" and g["model"] == "mixit")
    # The file as it was before Frozen-MLP's groups were added, less one group of addition.
    kept = [g for g in real["groups"] if g is not dropped and "added" not in g]
    planted = tmp_path / "tiny.json"
    planted.write_text(json.dumps({**real, "groups": kept}))
    monkeypatch.setattr(tuning_presets, "preset_path", lambda scale: planted)
    monkeypatch.setattr(paper_presets, "preset_path", lambda scale: planted)
    seen = {}

    def planted_tune_plan(experiments, configs, how, floors=None):
        seen["runs"], seen["floors"] = set(configs), floors
        groups = {(run.task, run.model, run.overrides) for run in configs}
        rows = [
            {"task": task, "model": model, "run_overrides": dict(overrides), "steps": 7}
            | {"overrides": {"train.lr": 0.001, "train.steps": 7}}
            for task, model, overrides in sorted(groups)
        ]
        how.out.mkdir(parents=True, exist_ok=True)
        (how.out / "tuning.json").write_text(json.dumps(rows))
        return dict(configs)

    monkeypatch.setattr(paper_presets, "tune_plan", planted_tune_plan)
    assert paper_presets.tune_missing("tiny", tmp_path / "out") == 6
    tuned = {(run.task, run.model) for run in seen["runs"]}
    beyond = {(task, "frozen-mlp") for task in ("addition", "dyck", "modular-addition")}
    assert (
        tuned == {("addition", "mixit"), ("lm", "frozen-mlp"), ("sentiment", "frozen-mlp")} | beyond
    )
    # Addition's other groups train the dropped group's budget: the family's floor.
    assert seen["floors"]["addition", ()] == dropped["steps"]
    written = json.loads(planted.read_text())
    assert written["groups"][: len(kept)] == kept
    assert {key: value for key, value in written.items() if key != "groups"} == {
        key: value for key, value in real.items() if key != "groups"
    }
    assert all("added" in group for group in written["groups"][len(kept) :])
    assert paper_presets.tune_missing("tiny", tmp_path / "out") == 0
