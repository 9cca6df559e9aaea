"""Members: runs trained together as one batched model reach the numbers they reach alone,
to 1e-5 in fp32 over 50 steps, with their own seeds and learning rates and one member
stopping early; runs that differ in a shape cannot be members."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mixit.cli import main
from mixit.common.errors import UsageError
from mixit.running import runs
from mixit.running.launchers import Launch
from mixit.training.members import member_key, train_members
from mixit.training.resolve import resolve_config
from mixit.training.train import run

OVERRIDES = {
    "task.num_digits": 2,
    "task.n_train": 600,
    "task.n_test": 100,
    "model.n_embd": 32,
    "model.n_head": 2,
    "model.n_layer": 2,
    "train.steps": 50,
    "train.eval_every": 10,
    "train.batch_size": 16,
    "train.plateau": 0,  # the first two use their whole budget
}
# (seed, learning rate, more): the third stops at its first evaluation (any accuracy reaches 0).
MEMBERS = [(0, 1e-3, {}), (1, 3e-3, {}), (2, 2e-3, {"train.stop_at": 0.0})]
TIMES = {"phase_seconds", "train_seconds", "tokens_per_second"}


def _configs(variant):
    return [
        resolve_config("addition", variant, "tiny", seed, OVERRIDES | {"train.lr": lr, **more})
        for seed, lr, more in MEMBERS
    ]


def _records(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").open()]


def _close(a, b):
    """Every number of ``a`` (nested too) within 1e-5 of ``b``'s, the timings aside; the same
    keys."""
    assert a.keys() == b.keys()
    for key in a.keys() - TIMES:
        if isinstance(a[key], dict):
            _close(a[key], b[key])
        elif isinstance(a[key], float | int) and not isinstance(a[key], bool):
            assert a[key] == pytest.approx(b[key], abs=1e-5), key
        else:
            assert a[key] == b[key], key


@pytest.mark.parametrize("variant", ["standard", "frozen-qk", "mixit"])
def test_members_train_to_the_numbers_of_separate_runs(variant, tmp_path):
    torch.manual_seed(12345)  # what the global generator holds must not matter
    configs = _configs(variant)
    alone = [run(config, tmp_path / f"alone-{i}") for i, config in enumerate(configs)]
    outs = [tmp_path / f"member-{i}" for i in range(len(configs))]
    together = train_members(configs, outs)
    assert [s["steps_run"] for s in alone] == [50, 50, 10]
    assert [s["stopped"] for s in together] == ["budget", "budget", "target"]
    for i, (one, member) in enumerate(zip(alone, together, strict=True)):
        _close({**one, "device": 0}, {**member, "device": 0})
        records = _records(tmp_path / f"alone-{i}"), _records(outs[i])
        assert len(records[0]) == len(records[1]) == (5 if i < 2 else 1)
        for a, b in zip(*records, strict=True):
            _close(a, b)
        weights = load_file(tmp_path / f"alone-{i}" / "model.safetensors")
        kept = load_file(outs[i] / "model.safetensors")
        assert weights.keys() == kept.keys()
        for name, value in weights.items():
            torch.testing.assert_close(kept[name], value, atol=1e-5, rtol=0)


def test_members_resume_a_finished_member_as_it_is(tmp_path):
    configs = _configs("standard")[:2]
    outs = [tmp_path / "a", tmp_path / "b"]
    first = run(configs[0], outs[0])
    again = train_members(configs, outs, resume=True)
    assert again[0] == first
    assert again[1]["steps_run"] == 50 and (outs[1] / "summary.json").is_file()


def test_runs_of_another_shape_or_arch_are_not_members():
    configs = _configs("standard")
    wider = resolve_config("addition", "standard", "tiny", 0, OVERRIDES | {"model.n_embd": 64})
    assert member_key(configs[0]) == member_key(configs[1]) != member_key(wider)
    assert member_key(_configs("mixit")[0]) != member_key(configs[0])
    hf = resolve_config("addition", "standard", "tiny", 0, OVERRIDES | {"model.arch": "hf:gpt2"})
    assert member_key(hf) is None
    with pytest.raises(UsageError, match="members must share"):
        train_members([configs[0], wider], [None, None])


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_plan_trains_its_members_together_to_the_numbers_of_separate_runs(jobs, tmp_path):
    """``train_missing`` with members: the two runs of one shape train as one group (here,
    or in a worker of the pool), the run of another shape alone; the summaries are those of
    runs trained one by one."""
    few = {"train.steps": 20, "train.eval_every": 10}
    wider = OVERRIDES | few | {"model.n_embd": 64}
    configs = {
        key: resolve_config("addition", "standard", "tiny", i, OVERRIDES | few)
        for i, key in enumerate(("a", "b"))
    }
    configs["wide"] = resolve_config("addition", "standard", "tiny", 0, wider)
    assert [
        len(unit)
        for unit in runs.member_groups({runs.run_dir_name(c): (c, [k]) for k, c in configs.items()})
    ] == [2, 1]
    alone, _ = runs.train_missing(configs, tmp_path / "alone")
    together, trained = runs.train_missing(
        configs, tmp_path / "members", launch=Launch(jobs=jobs, members=True)
    )
    assert trained == 3
    for key in configs:
        _close(
            {**alone[key], "run_dir": 0, "device": 0},
            {**together[key], "run_dir": 0, "device": 0},
        )


def test_members_on_with_a_submitting_launcher_exits_2(capsys, tmp_path):
    argv = ["compare", "--task", "addition", "--members", "on", "--launcher", "submitit-local"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert "--members on trains locally" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_device_script_times_every_mode_at_toy_size_on_the_cpu(tmp_path):
    path = Path(__file__).parents[2] / "studies" / "members_device.py"
    spec = importlib.util.spec_from_file_location("members_device", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--toy", "--out", str(tmp_path / "out")]) == 0
    timing = json.loads((tmp_path / "out" / "members.json").read_text())
    assert timing["runs"] == 10 and list(timing["modes"]) == [
        "alone",
        "jobs2",
        "members",
        "members+jobs2",
    ]
    modes = timing["modes"]
    assert modes["members"]["units"] == 5 and modes["alone"]["units"] == 10
    assert len({mode["tokens"] for mode in modes.values()}) == 1  # the same steps every way
    assert modes["alone"]["speedup"] == 1.0
