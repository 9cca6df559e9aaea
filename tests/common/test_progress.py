"""Progress: bars on a terminal, whole lines at most every LINE_SECONDS in a log, none asked."""

import io
import itertools
import time

import pytest

from mixit.cli import main
from mixit.common import progress
from mixit.common.progress import LogLines, progress_mode


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Log(io.StringIO):
    """A log file that notes when each line was written."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def write(self, text: str) -> int:
        self.times += [time.monotonic()] * text.count("\n")
        return super().write(text)


def test_the_mode_follows_the_option_and_else_the_stream():
    assert progress_mode(True, io.StringIO()) == "bars"
    assert progress_mode(False, Terminal()) == "off"
    assert progress_mode(None, Terminal()) == "bars"
    assert progress_mode(None, io.StringIO()) == "lines"
    assert progress_mode("lines", Terminal()) == "lines"  # a parent's choice is kept


def test_log_lines_are_whole_lines_and_none_for_short_work(monkeypatch):
    log = Log()
    for _ in LogLines(range(5), file=log, desc="quick"):
        pass
    assert log.getvalue() == ""  # shorter than LINE_SECONDS: nothing to say
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.05)
    log = Log()
    bar = LogLines(range(20), file=log, desc="retrieval/mixit seed 0", unit="step")
    for _ in bar:
        time.sleep(0.02)
        bar.set_postfix(loss="1.234")
    lines = log.getvalue().splitlines()
    assert len(lines) >= 3 and "\r" not in log.getvalue()
    assert lines[-1].startswith("mixit: retrieval/mixit seed 0 ")
    assert "steps, " in lines[-1] and " elapsed, ~" in lines[-1] and " left" in lines[-1]
    assert "loss=1.234" in lines[-1]


def test_a_command_in_a_log_says_it_goes_on_at_least_every_line_seconds(monkeypatch, tmp_path):
    """What `make demo 2>demo.log` shows, at a short interval: run i of N and each run's step,
    metric, elapsed and remaining, with no gap much longer than the interval."""
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.1)
    log = Log()
    monkeypatch.setattr("sys.stderr", log)
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--out"]
    argv += [str(tmp_path / "c"), "--no-tune", "train.steps=100", "train.eval_every=25"]
    argv += ["train.eval_examples=64", "model.n_embd=32", "model.n_layer=1", "train.batch_size=32"]
    start = time.monotonic()
    assert main(argv) == 0
    lines = [line for line in log.getvalue().splitlines() if line.startswith("mixit: ")]
    steps = [line for line in lines if " steps, " in line]
    runs = [line for line in lines if line.startswith("mixit: training runs ")]
    assert runs and all("/2 runs, " in line for line in runs)  # run i of N
    assert steps and all(line.startswith("mixit: retrieval/") for line in steps)
    assert any(" seed 0 " in line and "test=" in line for line in steps)  # once evaluated
    if time.monotonic() - start < 1.0:
        pytest.skip("trained too fast here to see several intervals")
    gaps = [b - a for a, b in itertools.pairwise(log.times)]
    assert max(gaps) < 3 * progress.LINE_SECONDS + 1.0, log.getvalue()  # a step or set-up aside


@pytest.mark.parametrize(("fraction", "label"), [("0.0", "test="), ("0.2", "val=")])
def test_the_bar_names_the_split_it_scores(monkeypatch, tmp_path, fraction, label):
    """A tuning trial is scored on held-out training rows, and its bar says so (val=)."""
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0)
    log = Log()
    monkeypatch.setattr("sys.stderr", log)
    argv = ["train", "--task", "retrieval", "--model", "standard", "--progress"]
    argv += ["--out", str(tmp_path / "run"), "train.steps=4", "train.eval_every=2"]
    argv += ["train.eval_examples=16", "model.n_embd=16", "model.n_layer=1"]
    argv += ["train.batch_size=8", f"train.validation_fraction={fraction}"]
    assert main(argv) == 0
    evaluated = [line for line in log.getvalue().splitlines() if "loss=" in line]
    other = {"test=": "val=", "val=": "test="}[label]
    assert evaluated and all(label in line and other not in line for line in evaluated)


def test_the_runs_progress_weighs_each_run_by_its_predicted_cost(capsys):
    """A cheap run done first of a costly one: one run of two, a tenth of the work, so after
    10 s the line says 90 s are left (not the 10 s that counting runs would say)."""
    bar = progress.WorkBar(
        {"short": 1.0, "long": 9.0}, mode="bars", desc="training runs", unit="run"
    )
    bar.finished("short")
    shown = {**bar.bar.format_dict, "elapsed": 10.0, "bar_format": progress._WORK_LINE}
    assert bar.bar.format_meter(**shown).startswith(
        "mixit: training runs 1/2 runs, 00:10 elapsed, ~01:30 left"
    )
    bar.close()
