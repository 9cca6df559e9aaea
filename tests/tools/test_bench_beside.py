"""tools/bench_beside.py: bad input is one line and exit 2, and nothing is written."""

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "bench_beside.py"


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(TOOL), "--out", str(out), "--rounds", "0"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--rounds" in done.stderr
    assert not out.exists()
