"""What an estimate says beyond its times: the range tuning may add, and a shared machine."""

import subprocess
import sys
import time

import pytest

from mixit.comparisons.estimate import format_suite_estimate, tuning_estimate_line, tuning_seconds
from mixit.readings.text import duration
from mixit.running.workers import busy_cores_elsewhere, shared_cores_note
from mixit.tuning.rules import BUDGET_CAP, halving_budgets


def test_tuning_adds_a_range_from_the_grid_to_every_extension_and_doubling():
    rows = [
        {"model": "standard", "runs": 3, "steps": 100, "step_seconds": 0.1, "run_seconds": 10.0}
    ]
    plain = tuning_seconds(rows, {})
    assert plain.least == pytest.approx(10 * halving_budgets(3))
    assert plain.most == pytest.approx(10 * (halving_budgets(5) + 2 + 4 + 3 * (BUDGET_CAP - 1)))
    arch = tuning_seconds(rows, {"model.arch": "hf:llama"})  # each model chooses its init too
    assert arch.least == pytest.approx(10 * halving_budgets(6)) and arch.most > plain.most
    line = tuning_estimate_line(plain)
    assert (
        f"about 18 s one run after another from the grid alone, up to {duration(plain.most)}"
        in line
    )
    estimate = {"task": "t", "preset": "tiny", "device": "here", "rows": rows, "jobs": 1}
    estimate |= {"total_seconds": 30.0, "wall_seconds": 30.0}
    total = format_suite_estimate([estimate, estimate], [plain, plain]).splitlines()[-1]
    both = f"{duration(2 * plain.least)} to {duration(2 * plain.most)}"
    assert total.endswith(f"plus {both} of tuning one run after another")


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_a_busy_neighbour_is_seen_and_said():
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        busy = busy_cores_elsewhere(interval=1.0)
    finally:
        spin.kill()
        spin.wait()
    assert busy is not None and busy >= 0.5
    assert "other processes keep about" in shared_cores_note(busy)
    assert shared_cores_note(0.1) == "" and shared_cores_note(None) == ""
