"""Two writers into one output folder: while a command writes there, a second one that would
write the same folder (named through a link, too) exits 2 at once with one line naming the
first, and the first goes on."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import time

import pytest

from mixit.cli import main
from mixit.common.io import command_lock

LONG = ["train.steps=100000", "train.eval_every=100000", "model.n_layer=1", "model.n_embd=32"]
COMPARE = ["compare", "--task", "addition", "--models", "standard", "--seeds", "1", *LONG]


def _second(argv: list[str]) -> tuple[int, list[str]]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, [line for line in err.getvalue().splitlines() if line.strip()]


@pytest.mark.processes
def test_a_second_compare_into_the_same_folder_is_refused_naming_the_first(tmp_path, session):
    out, link = tmp_path / "out", tmp_path / "link"
    first = session(
        [sys.executable, "-m", "mixit", *COMPARE, "--out", str(out), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    waited = time.monotonic()
    while not (out / "runs").is_dir():  # the lock is taken before the first run starts
        assert first.poll() is None and time.monotonic() - waited < 120, "the first never ran"
        time.sleep(0.2)
    link.symlink_to(out, target_is_directory=True)
    status, lines = _second([*COMPARE, "--out", str(link), "--no-progress"])
    assert status == 2 and len(lines) == 1, lines
    assert f"is being written by process {first.pid} (mixit compare)" in lines[0], lines[0]
    assert first.poll() is None  # the first goes on


def test_an_export_into_a_folder_another_command_writes_is_refused(tmp_path):
    run, folder = tmp_path / "run", tmp_path / "hf"
    with command_lock(folder, "export-hf"):
        status, lines = _second(["export-hf", str(run), str(folder)])
    assert status == 2 and len(lines) == 1 and "is being written by process" in lines[0], lines
    assert not folder.exists()
