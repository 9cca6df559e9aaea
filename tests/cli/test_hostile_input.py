"""Hostile input, one table over every command and every class of bad input: each case exits 2
with one line that names what was wrong, prints no traceback, and leaves no file behind (no
output folder contents, no temporary file). ``KINDS`` lists the classes, ``APPLIES`` the
commands each class applies to; a test checks that every such pair has a case."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixit.cli import main
from mixit.cli import train as train_command
from mixit.common.errors import UsageError
from mixit.training.checkpoint import load_checkpoint
from mixit.training.rundir import RunDir, load_run, read_records

QUICK = ["train.steps=2", "train.eval_every=2", "task.n_train=200", "task.n_test=20"]
QUICK += ["train.eval_examples=20", "model.n_embd=32", "model.n_head=2", "model.n_layer=1"]
TRAIN = ["train", "--task", "addition", "--model", "standard", *QUICK]
COMPARE = ["compare", "--task", "addition", "--models", "standard", *QUICK]
SUITE = ["suite", "--tasks", "addition", "--models", "standard", *QUICK]
SWEEP = ["sweep", "--task", "addition", "--model", "standard", "--preset", "tiny", *QUICK]
REPRODUCE = ["reproduce", "table4"]
BENCH = ["bench", "--models", "standard", "--rounds", "1", "--seq-len", "8", "--batch", "2"]
RUN_READERS = ("analyze", "export-hf", "generate")
TRAINERS = ("train", "compare", "suite", "sweep", "reproduce")
KINDS = {
    "device": (*TRAINERS, "bench"),
    "size": (*TRAINERS, "bench", *RUN_READERS),
    "damaged run file": ("train", *RUN_READERS),
    "I/O error": (*TRAINERS, "bench", "analyze", "export-hf"),
    "malformed side input": ("sweep", "reproduce"),
    "missing dependency": ("train", "compare", "suite", "sweep", "reproduce"),
    "accepted silently": ("train", "compare"),
    "misleading message": ("generate",),
    "empty list": ("suite", "reproduce"),
    "stored code": RUN_READERS,
}
HUGE_ROWS, HUGE_WIDTH = "task.n_train=1000000000000", "model.n_embd=2000000"


@dataclass(frozen=True)
class Case:
    kind: str
    command: str
    argv: Callable[[Path, Path], list[str]]  # (a scratch folder, a finished run's copy) -> argv
    fragment: str  # what the one line must hold
    damage: Callable[[Path], None] | None = None  # done to the run's copy first


def stored(key: str, value: object) -> Callable[[Path], None]:
    """Damage: set ``SECTION.KEY`` in the run's config.json to ``value``."""
    section, name = key.split(".")

    def damage(run: Path) -> None:
        config = json.loads((run / "config.json").read_text())
        config[section][name] = value
        (run / "config.json").write_text(json.dumps(config))

    return damage


def replaced(name: str, content: bytes) -> Callable[[Path], None]:
    return lambda run: (run / name).write_bytes(content)


def reader_argv(command: str) -> Callable[[Path, Path], list[str]]:
    """The argv of a command that reads a finished run directory."""
    return {
        "analyze": lambda tmp, run: ["analyze", "attention", str(run), "--out", str(tmp / "out")],
        "export-hf": lambda tmp, run: ["export-hf", str(run), str(tmp / "out")],
        "generate": lambda tmp, run: ["generate", str(run), "--prompt-ids", "1,2"],
    }[command]


def with_out(argv: list[str], *extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: [*argv, *extra, "--out", str(tmp / "out")]


def into(argv: list[str], target: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: [*argv, *extra, "--out", target]


TRAINER_ARGV = {
    "train": TRAIN,
    "compare": COMPARE,
    "suite": SUITE,
    "sweep": SWEEP,
    "reproduce": REPRODUCE,
}
NOT_HERE = "is not on this machine"

CASES = [
    *(
        Case("device", command, with_out(argv, "train.device=cuda:7"), NOT_HERE)
        for command, argv in TRAINER_ARGV.items()
    ),
    Case("device", "train", with_out(TRAIN, "train.device=cuda"), NOT_HERE),
    Case("device", "train", with_out(TRAIN, "train.device=mps"), "no MPS device"),
    Case("device", "bench", lambda tmp, run: [*BENCH, "train.device=cuda"], NOT_HERE),
    *(
        Case("size", command, with_out(argv, HUGE_ROWS), "GiB of memory")
        for command, argv in TRAINER_ARGV.items()
        if command != "reproduce"  # its tasks' row counts are the experiments' own
    ),
    Case("size", "reproduce", with_out(REPRODUCE, HUGE_WIDTH), "needs at least"),
    Case("size", "train", with_out(TRAIN, HUGE_WIDTH), "needs at least"),
    Case("size", "bench", lambda tmp, run: [*BENCH, "--seq-len", "100000000"], "--seq-len"),
    Case("size", "bench", lambda tmp, run: [*BENCH, "--batch", "1000000000"], "needs at least"),
    Case("size", "bench", lambda tmp, run: [*BENCH, HUGE_WIDTH], "needs at least"),
    *(
        Case("size", command, reader_argv(command), "its model needs at least", damage)
        for command in RUN_READERS
        for damage in (stored("model.n_embd", 2_000_000), stored("model.vocab_size", 10**12))
    ),
    *(
        Case("damaged run file", command, reader_argv(command), fragment, damage)
        for command in RUN_READERS
        for damage, fragment in (
            (stored("model.n_embd", "wide"), "model.n_embd='wide' is not a valid int"),
            (stored("train.lr", [1]), "train.lr=[1] has the wrong type"),
            (stored("model.colour", 1), "unknown key 'model.colour'"),
            (replaced("config.json", b"[1, 2]"), "is not a run config that mixit wrote"),
            (replaced("config.json", b"\xff\x00"), "is not a run config that mixit wrote"),
            (replaced("model.safetensors", b"junk"), "cannot read weights"),
        )
    ),
    *(
        Case("I/O error", command, into(argv, "/dev/null"), "/dev/null")
        for command, argv in TRAINER_ARGV.items()
    ),
    Case(
        "I/O error",
        "bench",
        lambda tmp, run: [*BENCH, "--json", "/dev/full", "--force"],
        "No space left",
    ),
    Case("I/O error", "bench", lambda tmp, run: [*BENCH, "--json", str(tmp)], "is a folder"),
    Case(
        "I/O error",
        "analyze",
        lambda tmp, run: ["analyze", "attention", str(run), "--out", "/dev/null"],
        "exists and is not a folder",
    ),
    Case(
        "I/O error",
        "export-hf",
        lambda tmp, run: ["export-hf", str(run), "/dev/null"],
        "exists and is not a folder",
    ),
    *(
        Case("malformed side input", "sweep", with_out(SWEEP, "--grid", "GRID"), fragment, damage)
        for damage, fragment in (
            (replaced("grid.yaml", b"\x00\xff\xfe" * 20), "is not UTF-8 text"),
            (replaced("grid.yaml", b"- 1\n- 2\n"), "expected a mapping"),
            (replaced("grid.yaml", b"train.lr: [1, 2\n"), "is not YAML"),
        )
    ),
    *(
        Case(
            "malformed side input",
            "reproduce",
            with_out(REPRODUCE, "--no-train", "--tuned", "TUNED"),
            fragment,
            replaced("tuned.json", content),
        )
        for content, fragment in (
            (b"[1, 2]", "expected the best.json"),
            (b"\xff\x00", "is not a UTF-8 JSON file"),
            (b'{"addition": "fast"}', "expected the best.json"),
            (b"3", "expected the best.json"),
        )
    ),
    *(
        Case("missing dependency", command, with_out(argv, "--launcher", "slurm"), "--launcher")
        for command, argv in TRAINER_ARGV.items()
        if command != "train"
    ),
    Case("empty list", "suite", with_out([*SUITE[:1], "--tasks", "", *SUITE[3:]]), "--tasks"),
    Case("empty list", "suite", with_out([*SUITE[:1], "--tasks", ",", *SUITE[3:]]), "names"),
    Case(
        "empty list", "reproduce", with_out(["reproduce", "ablation", "--claims", ""]), "--claims"
    ),
    Case(
        "empty list",
        "reproduce",
        with_out(["reproduce", "ablation", "--differences", ","]),
        "--differences names nothing",
    ),
    Case("empty list", "reproduce", with_out([*REPRODUCE, "--claims", ""]), "belong to"),
    *(
        Case(
            "stored code",
            reader,
            reader_argv(reader),
            "MIXIT_TRUST_MODULES=evilmod",
            stored("model.arch", "module:evilmod:build"),
        )
        for reader in RUN_READERS
    ),
    Case(
        "accepted silently",
        "compare",
        with_out(COMPARE, "--tolerance", "nan"),
        "--tolerance: must be a finite",
    ),
    Case(
        "accepted silently",
        "compare",
        with_out(COMPARE, "--tolerance", "inf"),
        "--tolerance: must be a finite",
    ),
    Case(
        "misleading message",
        "generate",
        lambda tmp, run: ["generate", str(run), "--prompt-ids", "1,2", "--max-new-tokens", "-1"],
        "--max-new-tokens: must be >= 1",
    ),
    Case(
        "misleading message",
        "generate",
        lambda tmp, run: ["generate", str(run), "--prompt-ids", "1,2", "--max-new-tokens", "0"],
        "--max-new-tokens: must be >= 1",
    ),
]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("finished") / "run"
    assert main([*TRAIN, "--out", str(run), "--no-progress"]) == 0
    return run


def _case_id(case: Case) -> str:
    return f"{case.kind}|{case.command}|{case.fragment}"


def expect_one_line(argv: list[str], fragment: str, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert fragment in lines[0], lines[0]


def expect_nothing_left(tmp: Path) -> None:
    out = tmp / "out"
    assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))
    assert not list(tmp.rglob("*.tmp")), sorted(tmp.rglob("*.tmp"))


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_hostile_input_is_one_line_and_leaves_nothing(
    case, finished_run, tmp_path, capsys, monkeypatch
):
    if "mps" in case.fragment.lower() and torch.backends.mps.is_available():
        pytest.skip("this machine has an MPS device")
    if case.kind == "missing dependency":  # Slurm's srun, whatever this machine has
        (tmp_path / "bin").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    if case.damage is not None:
        case.damage(run)
    argv = [a.replace("GRID", str(run / "grid.yaml")) for a in case.argv(tmp_path, run)]
    argv = [a.replace("TUNED", str(run / "tuned.json")) for a in argv]
    expect_one_line(argv, case.fragment, capsys)
    expect_nothing_left(tmp_path)


# Cases that need more than one command line, each a test of its own below.
OWN_TESTS = {
    ("damaged run file", "train"): "test_a_checkpoint_past_the_last_step_is_refused",
    ("missing dependency", "train"): "test_wandb_missing_leaves_no_run_files",
    ("accepted silently", "train"): "test_a_summary_linked_in_from_another_run_is_refused",
}


def test_every_class_has_a_case_for_every_command_it_applies_to():
    assert all(callable(globals().get(test)) for test in OWN_TESTS.values())
    covered = {(case.kind, case.command) for case in CASES} | set(OWN_TESTS)
    wanted = {(kind, command) for kind, commands in KINDS.items() for command in commands}
    assert wanted - covered == set() and covered - wanted == set()


@pytest.fixture
def no_srun(monkeypatch, tmp_path):
    """A PATH without Slurm's srun, whatever this machine has."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_slurm_without_srun_is_refused_before_anything_is_written(no_srun, tmp_path, capsys):
    pytest.importorskip("submitit")
    argv = [*SWEEP, "--launcher", "slurm", "--out", str(tmp_path / "out")]
    expect_one_line(argv, "no srun on its PATH", capsys)
    assert not (tmp_path / "out").exists()  # no study.db


def test_wandb_missing_leaves_no_run_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    expect_one_line([*TRAIN, "train.wandb=proj", "--out", str(tmp_path / "out")], "wandb", capsys)
    expect_nothing_left(tmp_path)


def test_a_summary_linked_in_from_another_run_is_refused(finished_run, tmp_path, capsys):
    other = tmp_path / "other"
    assert main([*TRAIN, "train.lr=0.002", "--out", str(other), "--no-progress"]) == 0
    capsys.readouterr()
    (other / "summary.json").unlink()
    (other / "summary.json").symlink_to(finished_run / "summary.json")
    argv = [*TRAIN, "train.lr=0.002", "--resume", "--out", str(other)]
    expect_one_line(argv, "summary.json is a symbolic link", capsys)


def test_a_checkpoint_past_the_last_step_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    longer = [*TRAIN, "train.steps=4", "train.checkpoint_every=2", "train.halt_at=2"]
    assert main([*longer, "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    state_path = out / "checkpoint" / "state.pt"
    state = torch.load(state_path, weights_only=True)
    progress = json.loads(state["progress"])
    state["progress"] = json.dumps(progress | {"step": 10**6})
    torch.save(state, state_path)
    expect_one_line([*longer, "--resume", "--out", str(out)], "cannot resume", capsys)


def test_a_checkpoint_beyond_the_file_size_limit_is_one_line_and_no_partial_copy(tmp_path, capsys):
    """The disk filling during a checkpoint, as a file-size limit (Python ignores SIGXFSZ, so
    the write fails with EFBIG)."""
    out = tmp_path / "run"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, hard))
    try:
        argv = [*TRAIN, "train.checkpoint_every=1", "--out", str(out), "--no-progress"]
        # Its first checkpoint fails: none is kept, and the line does not claim one (#103).
        expect_one_line(argv, "no earlier one was written, so the run starts again", capsys)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert not list(out.glob(".checkpoint*")), sorted(out.iterdir())


# ---- unreadable files: as a user who may not read them (root reads everything) ----


def _unreadable_argv(command: str, run: Path, scratch: Path) -> list[str]:
    out = str(scratch / "out")
    custom = ["train", "--task", "custom", "--model", "standard", "train.steps=2"]
    sentiment = ["train", "--task", "sentiment", "--model", "standard", "task.dataset=files"]
    sentiment += [f"task.data_files={run / 'data.csv'},{run / 'data.csv'}", "task.seq_len=8"]
    sentiment += ["task.tokenizer=words", "train.steps=2", "train.eval_every=2"]
    return {
        "analyze": ["analyze", "attention", str(run), "--out", out],
        "export-hf": ["export-hf", str(run), out],
        "generate": ["generate", str(run), "--prompt-ids", "1,2"],
        "sweep": [*SWEEP, "--grid", str(run / "grid.yaml"), "--out", out],
        "train custom": [*custom, f"task.data_files={run / 'data.jsonl'},{run / 'data.jsonl'}"],
        "train sentiment": [*sentiment, f"task.cache_dir={run / 'cache'}", "--out", out],
    }[command] + (["--out", out] if command == "train custom" else [])


# (the command, the file or folder made unreadable)
UNREADABLE = {
    "config.json": ("analyze", "config.json"),
    "weights for export": ("export-hf", "model.safetensors"),
    "weights for generate": ("generate", "model.safetensors"),
    "grid": ("sweep", "grid.yaml"),
    "corpus file": ("train custom", "data.jsonl"),
    "tokenizer cache folder": ("train sentiment", "cache"),
}


def _as_other_user() -> list[str] | None:
    """The prefix that runs a command as a user without root's reach, or None where there is
    none to be had (then the file mode alone binds this user)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


# Runs each argv through mixit's main in one process (one start-up for all cases) and prints
# each one's exit status and stderr as JSON lines.
MAIN_PER_ARGV = """
import contextlib, io, json, sys
from mixit.cli import main
from mixit.cli import train as train_command
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(argv)
    print(json.dumps([status, err.getvalue()]))
"""


@pytest.fixture(scope="module")
def unreadable_outcomes(finished_run, tmp_path_factory) -> dict[str, tuple[int, str]]:
    """Each UNREADABLE case run as a user who may not read its file: (exit status, stderr)."""
    prefix = _as_other_user()
    if prefix is None:
        pytest.skip("running as root without setpriv: no user for whom a file is unreadable")
    argvs = []
    # pytest's base folders are 0700, from pytest-of-USER down (pytest-N, and a worker's own
    # popen-gwK under pytest-xdist): the other user must be let through each of them.
    base = tmp_path_factory.getbasetemp()
    top = next((p for p in base.parents if p.name.startswith("pytest-of-")), base.parent)
    for command, name in UNREADABLE.values():
        scratch = Path(tmp_path_factory.mktemp("unreadable"))
        for folder in [scratch, *scratch.parents]:
            if folder.is_relative_to(top):
                folder.chmod(folder.stat().st_mode | 0o755)
        scratch.chmod(0o777)  # the other user writes its output here
        run = scratch / "run"
        shutil.copytree(finished_run, run)
        (run / "grid.yaml").write_text("train.lr: [0.001]\n")
        (run / "data.jsonl").write_text('{"input": "abc", "target": "cba"}\n')
        (run / "data.csv").write_text("text,label\ngood film,1\nbad film,0\n")
        (run / "cache").mkdir()
        for path in [run, *run.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)
        (run / name).chmod(0)
        argvs.append(_unreadable_argv(command, run, scratch))
    home = tmp_path_factory.getbasetemp()
    environment = os.environ | {"HOME": str(home), "MPLCONFIGDIR": str(home)}
    done = subprocess.run(
        [*prefix, sys.executable, "-c", MAIN_PER_ARGV, json.dumps(argvs)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    return dict(zip(UNREADABLE, map(tuple, outcomes), strict=True))


@pytest.mark.processes
@pytest.mark.parametrize("case", UNREADABLE)
def test_an_unreadable_file_is_one_line_naming_it(case, unreadable_outcomes):
    status, err = unreadable_outcomes[case]
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1, err
    assert "Permission denied" in lines[0] and UNREADABLE[case][1] in lines[0], lines[0]


# ---- random bytes and random JSON into every reader of a run folder ----

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
CONTENTS = st.binary(max_size=64) | JSON_VALUES.map(lambda v: json.dumps(v).encode())
RUN_FILES = ("config.json", "summary.json", "metrics.jsonl", "model.safetensors")


def _readers(run: Path, config) -> dict[str, Callable[[], object]]:
    return {
        "load_run": lambda: load_run(run),
        "finished": lambda: RunDir(run, config).finished(),
        "read_records": lambda: read_records(run / "metrics.jsonl"),
        "halted": lambda: RunDir(run, config).halted(),
    }


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.sampled_from(RUN_FILES), content=CONTENTS)
def test_each_reader_of_a_run_folder_returns_or_says_one_usage_error(
    name, content, finished_run, tmp_path
):
    from mixit.training.resolve import stored_config

    config = stored_config(json.loads((finished_run / "config.json").read_text()))
    config = config.with_train(halt_at=config.train.steps)
    run = Path(tempfile.mkdtemp(dir=tmp_path)) / "run"
    shutil.copytree(finished_run, run)
    (run / name).write_bytes(content)
    for reader in _readers(run, config).values():
        with contextlib.suppress(UsageError):
            reader()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=CONTENTS)
def test_a_damaged_checkpoint_state_is_a_usage_error(content, tmp_path):
    from mixit.training.setup import setup  # noqa: F401  (the same modules a resume imports

    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    (folder / "checkpoint").mkdir(parents=True)
    (folder / "checkpoint" / "state.pt").write_bytes(content)
    (folder / "checkpoint" / "model.safetensors").write_bytes(content)
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    with pytest.raises(UsageError):
        load_checkpoint(folder, model, optimizer, schedule, torch.Generator())


# The scripts beside the package that take arguments: the one-off studies and the docs' build.
SCRIPT_FOLDERS = ("studies", "docs/build")


def tool(name: str):
    """A script under studies/ or docs/build/, imported as a module."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    (path,) = [
        root / f / f"{name}.py" for f in SCRIPT_FOLDERS if (root / f / f"{name}.py").is_file()
    ]
    spec = importlib.util.spec_from_file_location(f"tool_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def linked_summary(tmp: Path) -> Path:
    """An output folder whose one run's summary.json is a link to a file elsewhere."""
    run = tmp / "out" / "runs" / "r"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}")
    (run / "metrics.jsonl").write_text("")
    (tmp / "elsewhere.json").write_text("{}")
    (run / "summary.json").symlink_to(tmp / "elsewhere.json")
    return tmp / "out"


def damaged_run(tmp: Path) -> Path:
    """An output folder whose one run's config.json is not UTF-8."""
    run = tmp / "out" / "runs" / "r"
    run.mkdir(parents=True)
    (run / "config.json").write_bytes(b"\xff{")
    return tmp / "out"


def linked_output(tmp: Path) -> Path:
    """An output folder whose results.csv is a link to a file elsewhere."""
    (tmp / "out").mkdir()
    (tmp / "elsewhere.csv").write_text("task\n")
    (tmp / "out" / "results.csv").symlink_to(tmp / "elsewhere.csv")
    return tmp / "out"


TOOL_CASES = [
    ("tuning_cost", lambda tmp: ["--task", "../x", "--out", str(tmp)], "invalid choice"),
    ("tuning_cost", lambda tmp: ["--seeds", "0", "--out", str(tmp)], "must be >= 1"),
    ("members_device", lambda tmp: ["--out", str(tmp), "--seeds", "0"], "must be >= 1"),
    ("members_device", lambda tmp: ["--out", str(tmp / "n"), "--target", "tpu9"], "tpu9"),
    ("members_device", lambda tmp: ["--out", str(tmp)], "exists"),
    ("members_device", lambda tmp: ["--out", str(tmp / "n"), "--tasks", "lm,x"], "not one of"),
    ("members_device", lambda tmp: ["--out", str(tmp / "n"), "--steps", "x"], "whole number"),
    ("width_device", lambda tmp: ["--out", str(tmp), "--widths", "abc"], "not a whole number"),
    ("width_device", lambda tmp: ["--out", str(tmp), "--widths", "0,-64"], "must be >= 1"),
    ("width_device", lambda tmp: ["--out", str(tmp), "--budget-seconds", "nan"], "finite"),
    ("init_finding", lambda tmp: ["--name", "../x"], "not a folder name"),
    ("init_finding", lambda tmp: ["--jobs", "0"], "must be >= 1"),
    ("doc_figures", lambda tmp: ["--bogus"], "unrecognized arguments"),
    ("dynamics_retrieval", lambda tmp: [str(tmp / "none"), str(tmp / "kept")], "no comparison"),
    (
        "verdict_ablations",
        lambda tmp: [str(tmp / "none"), "--out", str(tmp / "kept")],
        "no comparison",
    ),
    ("draws_circuit", lambda tmp: [str(tmp / "none")], "no draw-SEED folders"),
    ("bench_beside", lambda tmp: ["--out", str(tmp / "b.json"), "--rounds", "0"], "must be >= 1"),
    ("together", lambda tmp: ["--out", str(tmp / "t.json"), "--settings", "spin"], "not one of"),
    ("fixed_costs", lambda tmp: ["--out", str(tmp / "f.json"), "--tries", "0"], "must be >= 1"),
    ("time_breakdown", lambda tmp: [str(tmp), "--out", str(tmp / "b.json")], "no timing.json"),
    ("compile_repay", lambda tmp: ["--out", str(tmp / "c.json"), "--tasks", "nope"], "not a task"),
    ("estimate_calibration", lambda tmp: [str(tmp), "--out", str(tmp / "e.json")], "no records"),
    ("members_folded", lambda tmp: ["--out", str(tmp / "m.json"), "--task", "nope"], "not a task"),
    (
        "bench_convert",
        lambda tmp: ["--out", str(tmp / "b.json"), "--n-embd", "30"],
        "multiple of --n-head",
    ),
]


# The archiving and preset commands that were scripts under tools/, as the command line runs them.
RECORDS_CASES = [
    (lambda tmp: ["presets", "tune", "--scale", "nope"], "invalid choice"),
    (lambda tmp: ["presets", "tune", "--jobs", "0"], "must be >= 1"),
    (
        lambda tmp: ["presets", "tune", "--scale", "paper", "--missing-only"],
        "no tuned presets to add to",
    ),
    (lambda tmp: ["records", "publish", str(tmp / "none"), str(tmp / "d")], "not an output"),
    (lambda tmp: ["records", "publish", "--bogus"], "arguments are required: source"),
    (lambda tmp: ["records", "keep", str(linked_summary(tmp)), str(tmp / "kept")], "is a link"),
    (lambda tmp: ["records", "publish", str(linked_output(tmp)), str(tmp / "kept")], "is a link"),
    (lambda tmp: ["records", "rename", str(tmp / "none")], "holds no run"),
    (lambda tmp: ["records", "rename", str(damaged_run(tmp))], "not a readable config"),
]


@pytest.mark.parametrize(("argv", "fragment"), RECORDS_CASES)
def test_the_records_commands_keep_the_promise_on_bad_input(argv, fragment, tmp_path, capsys):
    from mixit.cli import main

    (tmp_path / "sibling").mkdir()
    try:
        code = main(argv(tmp_path))
    except SystemExit as stop:  # the parser's own refusal
        code = stop.code
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert fragment in error and "\n" not in error and "Traceback" not in error, error
    assert (tmp_path / "sibling").is_dir()  # nothing beside the output removed
    assert not (tmp_path / "kept").exists()  # nothing half-copied


@pytest.mark.parametrize(("name", "argv", "fragment"), TOOL_CASES)
def test_every_tool_keeps_the_promise_on_bad_input(name, argv, fragment, tmp_path, capsys):
    from mixit.cli import run_tool

    (tmp_path / "sibling").mkdir()
    module = tool(name)
    assert run_tool(name, lambda: module.main(argv(tmp_path))) == 2
    error = capsys.readouterr().err.strip()
    assert fragment in error and "\n" not in error and "Traceback" not in error, error
    assert (tmp_path / "sibling").is_dir()  # nothing beside the output removed
    assert not (tmp_path / "kept").exists()  # nothing half-copied


def test_every_tool_is_named_in_the_table():
    root = Path(__file__).resolve().parents[2]
    scripts = {path.stem for folder in SCRIPT_FOLDERS for path in (root / folder).glob("*.py")}
    assert scripts == {name for name, _, _ in TOOL_CASES}


def test_a_tool_run_as_a_script_prints_one_line():
    path = Path(__file__).resolve().parents[2] / "studies" / "init_finding.py"
    argv = [sys.executable, str(path), "--jobs", "0"]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "raised",
    [
        RuntimeError(
            "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
            "memory: you tried to allocate 40000000000000 bytes. Error code 12"
        ),
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        MemoryError(),
    ],
)
def test_running_out_of_memory_is_one_line_past_the_check(raised, monkeypatch, tmp_path, capsys):
    """Past the memory check's lower bound, the host's allocator (a plain RuntimeError from
    torch on the CPU) or the GPU's may still fail: one line, exit 1 (#103)."""

    def allocate(*args, **kwargs):
        raise raised

    monkeypatch.setattr(train_command, "train", allocate)
    argv = ["train", "--task", "retrieval", "--model", "mixit", "--out", str(tmp_path / "r")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mixit: train ran out of memory; use smaller sizes" in err


def test_another_runtime_error_is_not_read_as_memory(monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug, not the memory")

    monkeypatch.setattr(train_command, "train", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["train", "--task", "retrieval", "--model", "mixit", "--out", str(tmp_path / "r")])
