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
