"""Every committed output under results/ read again as a user would: ``reproduce EXPERIMENT
--no-train`` on a copy of each reproduction, and ``suite --report`` on a copy of each suite,
either write byte-identical files or exit 2 having changed nothing; on a damaged copy
(garbage, truncated, wrong types) they exit 2 having changed nothing. And every committed run
is still named by its config's hash. An output keeps its runs in one archive
(``mixit records pack``); a copy has them unpacked, as a user restores them."""

from __future__ import annotations

import contextlib
import dataclasses
import filecmp
import io
import itertools
import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from mixit.cli import main
from mixit.paper.claims import experiment_of
from mixit.running.archive import ARCHIVE, archived_files, unpack
from mixit.running.records import RUNS
from mixit.running.runs import run_dir_name
from mixit.study.setting import Setting
from mixit.tasks.base import PLATEAU_KEY
from mixit.training.resolve import stored_config

RESULTS = Path(__file__).resolve().parents[2] / "results"
REPRODUCTIONS = sorted(p.parent for p in RESULTS.glob("*/claims.json"))
SUITES = sorted(p.parent for p in RESULTS.glob("*/suite.json"))
Damage = Callable[[Path], None]


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00\xff not this file's format \x89\n")


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])


def _wrong_types(path: Path) -> None:
    if path.suffix == ".csv":  # every column there, a seed that is no number
        lines = path.read_text().splitlines()
        path.write_text("\n".join([lines[0], ",".join(["x"] * len(lines[0].split(",")))]) + "\n")
    else:  # every value a list
        stored = json.loads(path.read_text())
        path.write_text(json.dumps({key: [] for key in stored}))


DAMAGES: dict[str, Damage] = {
    "garbage": _garbage,
    "truncated": _truncated,
    "wrong types": _wrong_types,
}


def _run(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def _differences(a: Path, b: Path) -> list[str]:
    """Files that differ, or are only on one side, anywhere under ``a`` and ``b``, the runs
    unpacked from the archive aside (they are read, never written)."""

    def walk(c: filecmp.dircmp, prefix: str) -> list[str]:
        found = [prefix + f for f in c.diff_files + c.left_only + c.right_only + c.funny_files]
        return found + [f for n, sub in c.subdirs.items() for f in walk(sub, f"{prefix}{n}/")]

    return walk(filecmp.dircmp(a, b, ignore=[RUNS]), "")


def _restored(output: Path, scratch: Path) -> Path:
    """``output`` as ``mixit records restore`` gives it back: copied to ``scratch/restored``
    with its archive unpacked (its runs, and the figures no report shows); made once, and never
    written to after."""
    restored = scratch / "restored" / output.name
    if not restored.exists():
        shutil.copytree(output, restored, symlinks=True)
        unpack(output, restored)
    return restored


def _copy(output: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``output`` copied to ``scratch/results/NAME`` with its runs unpacked, the working
    folder ``scratch``, so that the run folders it names resolve as they do in the
    repository."""
    copy = scratch / "results" / output.name
    shutil.copytree(_restored(output, scratch), copy, symlinks=True)
    monkeypatch.chdir(scratch)
    return Path("results") / output.name


def _reproduce_calls(output: Path) -> list[list[str]]:
    """``reproduce EXPERIMENT --no-train`` at the output's own setting (its claims.json), for
    every experiment it holds a results.json of or a verdict from."""
    stored = json.loads((output / "claims.json").read_text())
    setting = Setting.from_record(stored)
    argv = ["--scale", setting.scale, "--seeds", str(setting.seeds), "--seed"]
    argv.append(str(setting.first_seed))
    if setting.tune:
        argv += ["--tune", "lr"]
    elif setting.tuned:
        argv += ["--tuned", setting.tuned]
    elif not setting.presets:
        argv.append("--no-tune")
    # A record without train.plateau trained before the plateau rule: read again without it.
    overrides = {PLATEAU_KEY: 0} | dict(setting.overrides)
    argv += [f"{key}={value}" for key, value in overrides.items()]
    judged = {experiment_of(c["id"]) for c in stored["claims"] if c["verdict"] != "not run"}
    held = {p.parent.name for p in output.glob("*/results.json")}
    out = str(Path("results") / output.name)
    return [
        ["reproduce", e, "--no-train", "--no-progress", "--out", out, *argv]
        for e in sorted(judged | held)
    ]


def _suite_call(output: Path) -> list[str]:
    """The suite command its README gives, with ``--report`` on the copy. An earlier suite it
    reads ``--beside`` is copied beside it (the working folder is the copy's scratch)."""
    readme = (output / "README.md").read_text().splitlines()
    argv = shlex.split(next(line for line in readme if line.startswith("    mixit suite")))[1:]
    if "--beside" in argv:
        earlier = Path(argv[argv.index("--beside") + 1])
        if not earlier.exists():
            shutil.copytree(RESULTS.parent / earlier, earlier, symlinks=True)
    at = argv.index("--out")
    return [*argv[:at], *argv[at + 2 :], "--out", str(Path("results") / output.name), "--report"]


def test_results_holds_reproductions_and_suites():
    assert len(REPRODUCTIONS) >= 10 and len(SUITES) >= 2


@pytest.mark.parametrize("output", REPRODUCTIONS, ids=lambda p: p.name)
def test_no_train_on_a_committed_output_changes_nothing(output, tmp_path, monkeypatch):
    copy = _copy(output, tmp_path, monkeypatch)
    outcomes = [_run(argv) for argv in _reproduce_calls(output)]
    assert set(outcomes) <= {0, 2}
    assert _differences(_restored(output, tmp_path), copy) == []


@pytest.mark.parametrize("output", SUITES, ids=lambda p: p.name)
def test_suite_report_on_a_committed_suite_changes_nothing(output, tmp_path, monkeypatch):
    copy = _copy(output, tmp_path, monkeypatch)
    assert _run(_suite_call(output)) == 0
    assert _differences(_restored(output, tmp_path), copy) == []


def _damaged_cases() -> list[tuple[Path, str, str]]:
    """(output, file, damage): each reproduction's claims.json, results.csv and one
    results.json, and each suite's tasks' compare.json and results.csv, each damaged one
    way in turn, so that every kind meets every file over the outputs."""
    cases = []
    for output in [*REPRODUCTIONS, *SUITES]:
        if output in SUITES:
            task = json.loads((output / "suite.json").read_text())["tasks"][0]
            files = [f"{task}/compare.json", f"{task}/results.csv"]
        else:
            held = sorted(p.relative_to(output) for p in output.glob("*/results.json"))
            files = ["claims.json", "results.csv", *map(str, held[:1])]
        for number, name in enumerate(files):
            kind = list(DAMAGES)[(number + len(cases)) % len(DAMAGES)]
            cases.append((output, name, kind))
    return cases


@pytest.mark.parametrize(
    "output,name,kind", _damaged_cases(), ids=lambda v: v.name if isinstance(v, Path) else v
)
def test_a_damaged_copy_exits_2_and_changes_nothing(output, name, kind, tmp_path, monkeypatch):
    """Unless the runs are all there to report from: then the files are written again from
    them, byte for byte the committed ones."""
    copy = _copy(output, tmp_path, monkeypatch)
    DAMAGES[kind](copy / name)
    damaged = tmp_path / "damaged"
    shutil.copytree(copy, damaged, symlinks=True)
    if output in SUITES:
        calls = [_suite_call(output)]
    else:  # a call that reads the damaged file: each reads the output's shared files
        calls = [argv for argv in _reproduce_calls(output) if argv[1] in name]
        calls = calls or _reproduce_calls(output)[-1:]
    outcomes = {_run(argv) for argv in calls}
    assert calls and outcomes <= {0, 2}
    if outcomes == {2}:
        assert _differences(damaged, copy) == []
    else:
        assert _differences(_restored(output, tmp_path), copy) == []


def test_no_train_under_another_setting_than_the_claims_exits_2(tmp_path, monkeypatch, capsys):
    """The claims.json of seeds 0-2 judged with --seed 100: merging would drop its verdicts."""
    output = RESULTS / "tiny-seed0"
    copy = _copy(output, tmp_path, monkeypatch)
    argv = _reproduce_calls(output)[0]
    argv[argv.index("--seed") + 1] = "100"
    assert main(argv) == 2
    assert "judged under another setting: --seed: stored 0, now 100" in capsys.readouterr().err
    assert _differences(_restored(output, tmp_path), copy) == []


def _names(stored: dict) -> set[str]:
    """The run directory names a stored config gets from ``run_dir_name``: its vocabulary and
    length as stored, or at 0 where the plan left them to be filled in from the task's data
    (``RunDir.matches`` reads a run back the same way)."""
    config = stored_config(stored)
    found = set()
    for vocab, block in itertools.product(
        (config.model.vocab_size, 0), (config.model.block_size, 0)
    ):
        model = dataclasses.replace(config.model, vocab_size=vocab, block_size=block)
        found.add(run_dir_name(dataclasses.replace(config, model=model)))
    return found


def committed_run_configs() -> dict[str, dict]:
    """``{output/path: config}`` of every run config the committed archives hold."""
    return {
        f"{archive.parent.name}/{name}": json.loads(data)
        for archive in sorted(RESULTS.glob(f"*/{ARCHIVE}"))
        for name, data in archived_files(archive.parent)
        if name.endswith("/config.json")
    }


def test_every_committed_run_is_named_by_its_configs_hash():
    configs = committed_run_configs()
    assert len(configs) > 1000
    misnamed = [p for p, stored in configs.items() if Path(p).parent.name not in _names(stored)]
    assert misnamed == []


def test_results_keeps_no_loose_run_records():
    """Each output's runs are in its archive, so results/ stays a few hundred files."""
    assert not sorted(RESULTS.glob("*/runs")) + sorted(RESULTS.glob("*/*/runs"))
