"""Nothing lost: a command never overwrites a run it did not start, two writers never share a
run directory, and writes neither follow planted symlinks nor replace special files."""

import json
import os
import stat

import pytest

from mixit.cli import main
from mixit.common.errors import UsageError
from mixit.common.io import DirLock, write_json
from mixit.training.rundir import load_run
from mixit.training.train import train

SHORT = {"train.steps": 2, "train.eval_every": 2, "model.n_embd": 16, "task.n_test": 100}
ARGS = ["train", "--task", "addition", "--model", "standard"]


@pytest.fixture
def finished(tmp_path):
    run_dir = tmp_path / "run"
    train("addition", "standard", out=run_dir, overrides=SHORT, progress=False)
    return run_dir, {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}


def _overrides(**extra):
    return [f"{k}={v}" for k, v in {**SHORT, **extra}.items()]


def test_export_into_a_run_directory_is_refused(finished, tmp_path, capsys):
    run_dir, files = finished
    other = tmp_path / "other"
    train("addition", "standard", out=other, overrides=SHORT, progress=False)
    for target in (run_dir, other, run_dir / "hf"):
        assert main(["export-hf", str(run_dir), str(target)]) == 2
        assert "is a mixit run directory" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == files
    assert not (run_dir / "hf").exists()
    load_run(run_dir)


def test_export_into_a_folder_that_is_not_empty_needs_overwrite(finished, tmp_path, capsys):
    pytest.importorskip("transformers")
    run_dir, _ = finished
    target = tmp_path / "hf"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    assert main(["export-hf", str(run_dir), str(target)]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert main(["export-hf", str(run_dir), str(target), "--overwrite"]) == 0


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"model.n_layer": 1}, "holds a finished run"),  # another config, finished
        ({}, "holds a finished run"),  # the same config, finished
    ],
)
def test_train_never_overwrites_a_finished_run_without_overwrite(finished, capsys, extra, message):
    run_dir, files = finished
    argv = [*ARGS, "--out", str(run_dir), *_overrides(**extra)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == files
    assert main([*argv, "--resume"]) == (0 if not extra else 2)  # resume returns it as it is
    assert main([*argv, "--overwrite"]) == 0


def test_train_never_overwrites_an_unfinished_run_of_another_config(finished, capsys):
    run_dir, _ = finished
    (run_dir / "summary.json").unlink()  # as if killed before the end
    assert main([*ARGS, "--out", str(run_dir), *_overrides(**{"model.n_layer": 1})]) == 2
    assert "holds a run of another config" in capsys.readouterr().err


def test_a_second_writer_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    lock = DirLock(run_dir)  # another process training into it
    with pytest.raises(UsageError, match="being written by another mixit process"):
        train("addition", "standard", out=run_dir, overrides=SHORT, progress=False)
    assert not (run_dir / "config.json").exists()
    lock.release()
    train("addition", "standard", out=run_dir, overrides=SHORT, progress=False)


def test_a_symlink_planted_in_a_run_directory_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "metrics.jsonl").symlink_to(victim)
    train("addition", "standard", out=run_dir, overrides=SHORT, progress=False)
    assert victim.read_text() == "keep me\n"
    assert not (run_dir / "metrics.jsonl").is_symlink()
    assert json.loads((run_dir / "metrics.jsonl").read_text())["step"] == 2


def test_a_special_file_is_written_into_not_replaced(tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to(os.devnull)
    write_json(link, {"a": 1})
    assert link.is_symlink() and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    with pytest.raises(UsageError, match="is a folder"):
        write_json(tmp_path, {"a": 1})


def test_run_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        overrides = {**SHORT, "train.checkpoint_every": 1}
        train("addition", "standard", out=tmp_path / "run", overrides=overrides, progress=False)
    finally:
        os.umask(old)
    files = [
        p for p in (tmp_path / "run").rglob("*") if p.is_file() and "tensorboard" not in str(p)
    ]
    assert {p.name for p in files} >= {"config.json", "summary.json", "state.pt"}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _damage_progress(run_dir):
    import torch

    path = run_dir / "checkpoint" / "state.pt"
    state = torch.load(path, weights_only=True)
    progress = json.loads(state["progress"])
    progress["step"] = "ten"
    state["progress"] = json.dumps(progress)
    torch.save(state, path)


CHECKPOINTED = {**SHORT, "train.checkpoint_every": 1}
DAMAGES = {
    # a crash or a full disk while appending: the torn line is dropped, the run resumes
    "torn metrics line": (
        lambda d: d.joinpath("metrics.jsonl").write_text(
            d.joinpath("metrics.jsonl").read_text()[:-7]
        ),
        0,
    ),
    "summary.json a list": (lambda d: d.joinpath("summary.json").write_text("[]"), 0),
    "summary.json empty": (lambda d: d.joinpath("summary.json").write_text(""), 0),
    "checkpoint step 'ten'": (_damage_progress, 2),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_run_directory_resumes_or_is_refused_in_one_line(damage, tmp_path, capsys):
    run_dir = tmp_path / "run"
    train("addition", "standard", out=run_dir, overrides=CHECKPOINTED, progress=False)
    whole = json.loads((run_dir / "summary.json").read_text())
    change, code = DAMAGES[damage]
    change(run_dir)
    if damage != "summary.json a list" and damage != "summary.json empty":
        (run_dir / "summary.json").unlink()
    argv = [*ARGS, "--out", str(run_dir), "--resume", *_overrides(**{"train.checkpoint_every": 1})]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and len([x for x in err.splitlines() if x.strip()]) == 1
    if code == 0:
        assert json.loads((run_dir / "summary.json").read_text())["metrics"] == whole["metrics"]


@pytest.mark.parametrize("command", ["generate", "export-hf"])
def test_a_stored_config_that_does_not_validate_is_refused(finished, command, tmp_path, capsys):
    run_dir, _ = finished
    _edit_json(run_dir / "config.json", lambda c: c["model"].update(n_head=0))
    argv = {
        "generate": ["generate", str(run_dir), "--prompt-ids", "1,2"],
        "export-hf": ["export-hf", str(run_dir), str(tmp_path / "hf")],
    }[command]
    assert main(argv) == 2
    assert "config.json: model.n_head must be >= 1" in capsys.readouterr().err


def test_a_full_disk_during_a_checkpoint_keeps_the_last_one_and_says_so(
    tmp_path, capsys, monkeypatch
):
    import errno

    import torch

    import mixit.training.checkpoint

    whole = train(
        "addition", "standard", out=tmp_path / "whole", overrides=CHECKPOINTED, progress=False
    )
    real_save, calls = torch.save, []

    def disk_fills_up(obj, path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(mixit.training.checkpoint.torch, "save", disk_fills_up)
    run_dir = tmp_path / "run"
    argv = [*ARGS, "--out", str(run_dir), *_overrides(**{"train.checkpoint_every": 1})]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "No space left on device" in err
    assert not list(run_dir.glob(".checkpoint*.tmp"))
    monkeypatch.undo()
    assert main([*argv, "--resume"]) == 0
    assert json.loads((run_dir / "summary.json").read_text())["metrics"] == whole["metrics"]


@pytest.mark.processes
def test_sigterm_is_one_line_and_exit_143(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "mixit", *ARGS, "--out", str(run_dir)]
    argv += _overrides(**{"train.steps": 100_000, "train.eval_every": 100_000})
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (run_dir / "config.json").exists():  # training has started
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143
    assert err.strip().splitlines() == ["mixit: terminated"], err
