"""OpenMP's wait policy: passive only beside other busy processes, never over the user's, and
chosen before torch loads."""

import subprocess
import sys

from mixit.common.cores import SHARED_FROM, WAIT_POLICY, wait_policy_line


def test_passive_waiting_only_where_other_processes_keep_the_cores_busy():
    shared = {}
    line = wait_policy_line(shared, busy=SHARED_FROM + 1.0)
    assert shared == {WAIT_POLICY: "PASSIVE"} and "wait passively" in line and "\n" not in line
    for busy in (0.0, SHARED_FROM / 2, None):  # quiet, or no /proc/stat to read
        quiet = {}
        assert wait_policy_line(quiet, busy) == "" and quiet == {}


def test_a_policy_the_user_set_is_kept():
    chosen = {WAIT_POLICY: "ACTIVE"}
    assert wait_policy_line(chosen, busy=2.0) == "" and chosen == {WAIT_POLICY: "ACTIVE"}


def test_the_policy_is_chosen_before_torch_loads():
    code = "import sys, mixit.common.cores, mixit.__main__; print('torch' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "False", loaded.stderr


def test_the_cores_line_is_printed_only_before_training(monkeypatch, capsys):
    import mixit.__main__ as entry
    import mixit.cli

    monkeypatch.setattr(entry, "settle_wait_policy", lambda: "mixit: other processes ...")
    monkeypatch.setattr(mixit.cli, "entry_point", lambda: None)
    for argv, printed in [
        (["compare", "--help"], False),
        (["records", "pack", "out"], False),
        (["reproduce", "table1", "--no-train"], False),
        (["compare", "--task", "retrieval", "--estimate"], False),
        (["sweep", "--best"], False),
        (["compare", "--task", "retrieval"], True),
        (["train", "--task", "retrieval", "--model", "mixit"], True),
    ]:
        monkeypatch.setattr(sys, "argv", ["mixit", *argv])
        entry.entry_point()
        assert ("other processes" in capsys.readouterr().err) is printed, argv
