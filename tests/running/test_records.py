"""``mixit records`` keeps a run's text files, from which a new output reuses it when finished
or halted at a rung; and the in-process training (one job) that reuse depends on leaves the
caller's config as it was."""

import io
import shutil
import tarfile

import pytest

from mixit.cli import main
from mixit.running import runs
from mixit.running.archive import ARCHIVE, archived_files
from mixit.running.records import RECORDS
from mixit.running.runs import run_dir_name, train_missing
from mixit.training.checkpoint import latest_checkpoint
from mixit.training.resolve import resolve_config

STEPS = {"train.steps": 2, "train.eval_every": 2, "train.eval_examples": 32, "train.plateau": 0}


def config(model: str):
    return resolve_config("retrieval", model, "tiny", 0, STEPS)


def test_a_new_output_reuses_the_kept_records_and_trains_only_the_rest(tmp_path):
    first = tmp_path / "first" / "runs"
    _, trained = train_missing({"finished": config("standard")}, first)
    assert trained == 1
    (first / "unfinished-run").mkdir()  # no summary: left out
    assert main(["records", "keep", str(tmp_path / "first"), str(tmp_path / "kept")]) == 0
    kept = tmp_path / "kept" / "runs"
    assert sorted(p.name for p in kept.rglob("*") if p.is_file()) == sorted(RECORDS)
    assert not list(kept.rglob("*.safetensors"))
    again = tmp_path / "again"
    again.mkdir()
    (again / "runs").symlink_to(kept)  # as `cp -r`, without copying
    configs = {"finished": config("standard"), "unfinished": config("mixit")}
    summaries, to_train = train_missing(configs, again / "runs", train=False)
    assert list(summaries) == ["finished"] and to_train == 0


def test_a_trial_halted_at_its_rung_is_reused_from_its_records_without_training(tmp_path):
    """The tuning's halving halts trials at rungs; their checkpoints are not kept, but their
    evaluation at the rung is, and it is all the halving reads of a trial it drops."""
    trial = resolve_config("retrieval", "standard", "tiny", 0, STEPS | {"train.steps": 4})
    trial = trial.with_train(halt_at=2)
    first, _ = train_missing({"trial": trial}, tmp_path / "first" / "runs")
    assert main(["records", "keep", str(tmp_path / "first"), str(tmp_path / "kept")]) == 0
    kept = tmp_path / "kept" / "runs"
    files = sorted(p.name for p in kept.rglob("*") if p.is_file())
    assert files == ["config.json", "metrics.jsonl"]
    assert not list(kept.rglob("checkpoint*"))
    again, trained = train_missing({"trial": trial}, kept)
    assert trained == 0
    assert (again["trial"]["steps_run"], again["trial"]["stopped"]) == (2, "halted")
    assert again["trial"]["metrics"] == first["trial"]["metrics"]


def test_weights_keeps_finished_weights_and_a_cut_off_runs_checkpoint_to_go_on_from(tmp_path):
    """With --weights a restored output reads a finished run's weights and resumes a run cut
    off mid-budget from its checkpoint, ending as the run trained without a break."""
    whole = resolve_config("retrieval", "standard", "tiny", 0, STEPS | {"train.steps": 4})
    cut = resolve_config("retrieval", "mixit", "tiny", 0, STEPS | {"train.steps": 4})
    cut = cut.with_train(halt_at=2)
    first = tmp_path / "first"
    train_missing({"whole": whole, "cut": cut}, first / "runs")
    kept = tmp_path / "kept"
    assert main(["records", "keep", "--weights", "*", str(first), str(kept)]) == 0
    files = {str(p.relative_to(kept / "runs")).split("/", 1)[1] for p in kept.rglob("*.*")}
    assert {"model.safetensors", "checkpoint/model.safetensors", "checkpoint/state.pt"} <= files
    only = tmp_path / "only"
    assert main(["records", "keep", "--weights", "*-standard-*", str(first), str(only)]) == 0
    assert [p.parent.name for p in only.rglob("*.safetensors")] == [run_dir_name(whole)]
    again = tmp_path / "again"
    assert main(["records", "restore", str(kept), str(again)]) == 0
    assert latest_checkpoint(again / "runs" / run_dir_name(cut)) is not None
    assert (again / "runs" / run_dir_name(whole) / "model.safetensors").is_file()
    cut = cut.with_train(halt_at=0)
    resumed, trained = train_missing({"whole": whole, "cut": cut}, again / "runs")
    assert trained == 1  # the cut-off run only
    unbroken, _ = train_missing({"cut": cut}, tmp_path / "unbroken" / "runs")
    assert resumed["cut"]["metrics"] == unbroken["cut"]["metrics"]


def test_resumable_keeps_only_the_checkpoints_of_runs_cut_off_mid_way(tmp_path, monkeypatch, steps):
    """A run cut off mid-way keeps its checkpoint and resumes from it after a restore; a
    trial halted at its rung and a finished run keep their text records alone, and once the
    cut-off run finishes, packing again drops its archived checkpoint."""
    monkeypatch.setattr(runs, "CHECKPOINT_FLOOR", 1)
    longer = STEPS | {"train.steps": 8, "train.eval_every": 4}
    cut = resolve_config("retrieval", "mixit", "tiny", 0, longer)
    trial = resolve_config("retrieval", "standard", "tiny", 0, longer)
    trial = trial.with_train(halt_at=4)
    first = tmp_path / "first"
    train_missing({"finished": config("standard"), "trial": trial}, first / "runs")
    steps.stop = 3
    with pytest.raises(KeyboardInterrupt):
        train_missing({"cut": cut}, first / "runs")
    kept = tmp_path / "kept"
    assert main(["records", "keep", "--resumable", str(first), str(kept)]) == 0
    checkpoints = {p.parent.parent.name for p in kept.rglob("checkpoint/state.pt")}
    assert checkpoints == {run_dir_name(cut)}
    assert main(["records", "pack", str(kept)]) == 0
    again = tmp_path / "again"
    assert main(["records", "restore", str(kept), str(again)]) == 0
    steps.stop, steps.trained = None, []
    _, trained = train_missing({"cut": cut}, again / "runs")
    assert trained == 1 and steps.trained[0] == 3  # from its checkpoint after step 3, not from 0
    shutil.rmtree(again / "runs" / run_dir_name(cut) / "checkpoint")
    assert main(["records", "keep", "--resumable", str(again), str(tmp_path / "later")]) == 0
    shutil.copy(kept / ARCHIVE, tmp_path / "later")
    assert main(["records", "pack", str(tmp_path / "later")]) == 0
    names = [name for name, _ in archived_files(tmp_path / "later")]
    assert f"runs/{run_dir_name(cut)}/summary.json" in names
    assert not [name for name in names if "/checkpoint/" in name]


def test_a_trial_cut_off_then_halted_at_its_rung_has_its_archived_checkpoint_dropped(
    tmp_path, monkeypatch, steps
):
    """A tuning trial cut off before its rung keeps its checkpoint; once it has gone on and
    halted at the rung, its evaluation there stands for it, so packing again drops the
    checkpoint and keeps the metrics."""
    monkeypatch.setattr(runs, "CHECKPOINT_FLOOR", 1)
    trial = resolve_config("retrieval", "standard", "tiny", 0, STEPS | {"train.steps": 8})
    trial = trial.with_train(halt_at=6)
    first = tmp_path / "first"
    steps.stop = 3
    with pytest.raises(KeyboardInterrupt):
        train_missing({"trial": trial}, first / "runs")
    kept = tmp_path / "kept"
    assert main(["records", "keep", "--resumable", str(first), str(kept)]) == 0
    assert main(["records", "pack", str(kept)]) == 0
    archived = [name for name, _ in archived_files(kept)]
    assert [name for name in archived if "/checkpoint/" in name]
    again = tmp_path / "again"
    assert main(["records", "restore", str(kept), str(again)]) == 0
    steps.stop = None
    done, _ = train_missing({"trial": trial}, again / "runs")
    assert (done["trial"]["steps_run"], done["trial"]["stopped"]) == (6, "halted")
    later = tmp_path / "later"
    assert main(["records", "keep", "--resumable", str(again), str(later)]) == 0
    shutil.copy(kept / ARCHIVE, later)
    assert main(["records", "pack", str(later)]) == 0
    names = [name for name, _ in archived_files(later)]
    assert f"runs/{run_dir_name(trial)}/metrics.jsonl" in names
    assert not [name for name in names if "/checkpoint/" in name]


def test_training_here_leaves_the_callers_config_and_its_run_name_as_they_were(tmp_path):
    """One job trains in this process; the config it is given stays the one asked for, so a
    second call with it finds the run (as after a worker, which trains a copy)."""
    standard = config("standard")
    assert train_missing({"run": standard}, tmp_path / "runs")[1] == 1
    assert list(train_missing({"run": standard}, tmp_path / "runs", train=False)[0]) == ["run"]


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["records", "keep", str(tmp_path / "nothing"), str(tmp_path / "kept")]) == 2
    (tmp_path / "out" / "runs").mkdir(parents=True)
    (tmp_path / "kept" / "runs").mkdir(parents=True)
    assert main(["records", "keep", str(tmp_path / "out"), str(tmp_path / "kept")]) == 2
    assert capsys.readouterr().err.count("\n") == 2
    (tmp_path / "suite" / "retrieval" / "runs").mkdir(parents=True)
    assert main(["records", "keep", str(tmp_path / "suite"), str(tmp_path / "other")]) == 2
    assert "add --suite" in capsys.readouterr().err


def test_a_suite_keeps_each_tasks_records_and_files_and_the_suites_reports(tmp_path):
    out = tmp_path / "suite"
    train_missing({"finished": config("standard")}, out / "retrieval" / "runs")
    (out / "retrieval" / "compare.json").write_text("{}")
    (out / "summary.md").write_text("# Suite")
    (out / "retrieval" / "runs" / "unfinished-run").mkdir()  # no metrics: left out
    kept = tmp_path / "kept"
    assert main(["records", "keep", "--suite", str(out), str(kept)]) == 0
    files = sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file())
    run = next((kept / "retrieval" / "runs").iterdir()).name
    records = [f"retrieval/runs/{run}/{name}" for name in RECORDS]
    assert files == sorted(["summary.md", "retrieval/compare.json", *records])
    assert main(["records", "keep", "--suite", str(out), str(kept)]) == 2  # exists: refused
    assert main(["records", "keep", "--suite", str(tmp_path / "kept"), str(tmp_path / "k2")]) == 0
    assert main(["records", "keep", "--suite", str(tmp_path / "empty"), str(tmp_path / "k3")]) == 2
    assert not (tmp_path / "k3").exists()


def test_a_published_axis_gets_only_its_values_runs_added(tmp_path):
    out = tmp_path / "axis"
    for value in ("task.max_pairs=3", "task.max_pairs=4"):
        train_missing({"finished": config("standard")}, out / value / "runs")
        (out / value / "compare.json").write_text("{}")
    published = tmp_path / "published"  # as mixit records publish leaves it: no runs/
    shutil.copytree(out, published, ignore=shutil.ignore_patterns("runs"))
    (published / "README.md").write_text("# Kept by hand")
    assert main(["records", "keep", "--suite", str(out), str(published)]) == 0
    for value in ("task.max_pairs=3", "task.max_pairs=4"):
        assert len(list((published / value / "runs").glob("*/summary.json"))) == 1
    assert (published / "README.md").read_text() == "# Kept by hand"
    assert main(["records", "keep", "--suite", str(out), str(published)]) == 2  # its runs/ exist


def test_restore_brings_a_suites_records_back_and_keeps_what_the_output_has(tmp_path):
    out = tmp_path / "suite"
    train_missing({"finished": config("standard")}, out / "retrieval" / "runs")
    (out / "retrieval" / "compare.json").write_text("{}")
    kept = tmp_path / "kept"
    assert main(["records", "keep", "--suite", str(out), str(kept)]) == 0
    (kept / "README.md").write_text("how these were made")
    again = tmp_path / "again"
    (again / "retrieval").mkdir(parents=True)
    (again / "retrieval" / "compare.json").write_text('{"newer": true}')
    assert main(["records", "restore", str(kept), str(again)]) == 0
    assert (again / "retrieval" / "compare.json").read_text() == '{"newer": true}'
    assert not (again / "README.md").exists()
    summaries, to_train = train_missing(
        {"finished": config("standard")}, again / "retrieval" / "runs", train=False
    )
    assert list(summaries) == ["finished"] and to_train == 0


def test_restore_refuses_a_folder_without_records(tmp_path, capsys):
    (tmp_path / "kept").mkdir()
    assert main(["records", "restore", str(tmp_path / "kept"), str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def _tool(capsys, *args):
    """``mixit records`` as the command line runs it: its exit status and its error output."""
    try:
        code = main(["records", *map(str, args)])
    except SystemExit as stop:  # the parser's own refusal
        code = stop.code
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def trained_suite(tmp_path_factory):
    """A suite's kept records (as ``--suite`` writes them), trained once for the tests below."""
    root = tmp_path_factory.mktemp("trained")
    out = root / "suite"
    train_missing({"finished": config("standard")}, out / "retrieval" / "runs")
    (out / "retrieval" / "compare.json").write_text("{}")
    assert main(["records", "keep", "--suite", str(out), str(root / "kept")]) == 0
    return root / "kept"


def _kept_suite(root, trained):
    """A fresh copy of ``trained_suite`` under ``root``."""
    shutil.copytree(trained, root / "kept")
    return root / "kept"


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_pack_makes_one_archive_the_same_bytes_each_time_and_restore_gives_the_runs_back(
    tmp_path, trained_suite
):
    kept = _kept_suite(tmp_path, trained_suite)
    before = _files(kept)
    twin = tmp_path / "twin"
    shutil.copytree(kept, twin)
    assert main(["records", "pack", str(kept)]) == 0
    assert main(["records", "pack", str(twin)]) == 0
    assert not list(kept.rglob("runs"))
    assert sorted(_files(kept)) == ["records.tar.gz", "retrieval/compare.json"]
    assert (kept / "records.tar.gz").read_bytes() == (twin / "records.tar.gz").read_bytes()
    again = tmp_path / "again"
    assert main(["records", "restore", str(kept), str(again)]) == 0
    assert _files(again) == before
    assert main(["records", "pack", str(kept)]) == 2  # nothing left to pack


def test_packing_again_keeps_the_archived_files_the_folders_do_not_hold(tmp_path, trained_suite):
    kept = _kept_suite(tmp_path, trained_suite)
    assert main(["records", "pack", str(kept)]) == 0
    (kept / "runs" / "another-run").mkdir(parents=True)
    (kept / "runs" / "another-run" / "config.json").write_text("{}")
    assert main(["records", "pack", str(kept)]) == 0
    names = [name for name, _ in archived_files(kept)]
    assert "runs/another-run/config.json" in names
    assert sum(name.startswith("retrieval/runs/") for name in names) == 3


# What stays outside the archive: with --figures the figure a report shows (and a PDF with no
# PNG beside it, no copy of a figure shown); with --retire, for a superseded output, no figure.
PACKED_FIGURES = {
    "--figures": ["draft.pdf", "table1/khop.png"],
    "--retire": [],
}


@pytest.mark.parametrize("option", sorted(PACKED_FIGURES))
def test_pack_figures_and_retire_keep_what_a_reader_reads_and_restore_gives_the_rest_back(
    tmp_path, trained_suite, option
):
    kept = _kept_suite(tmp_path, trained_suite)
    table = kept / "table1"
    table.mkdir()
    (table / "report.md").write_text("![k-hop](khop.png)\n")
    (kept / "ablation" / "sink").mkdir(parents=True)
    for name in ("table1/khop.png", "table1/khop.pdf", "ablation/sink/khop.png", "draft.pdf"):
        (kept / name).write_bytes(name.encode())
    # A measurement's cache (just its key and value) goes too; results that hold more stay.
    (table / "measurements.json").write_text('{"key": {"scale": "tiny"}, "value": [1, 2]}')
    (table / "results.json").write_text('{"key": 1, "value": 2, "scale": "tiny"}')
    before = _files(kept)
    assert main(["records", "pack", option, str(kept)]) == 0
    reports = [
        "records.tar.gz",
        "retrieval/compare.json",
        "table1/report.md",
        "table1/results.json",
    ]
    assert sorted(_files(kept)) == sorted(reports + PACKED_FIGURES[option])
    again = tmp_path / "again"
    assert main(["records", "restore", str(kept), str(again)]) == 0
    assert _files(again) == before
    assert main(["records", "pack", option, str(kept)]) == 2  # nothing left to pack


@pytest.mark.parametrize("bad", ["../outside.json", "/etc/passwd"])
def test_an_archive_naming_a_path_outside_its_folder_is_refused(tmp_path, capsys, bad):
    kept = tmp_path / "kept"
    kept.mkdir()
    with tarfile.open(kept / "records.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo(bad)
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    code, err = _tool(capsys, "restore", kept, tmp_path / "out")
    assert code == 2 and "not a file inside its folder" in err
    assert not (tmp_path / "outside.json").exists() and not (tmp_path / "out").exists()


def test_a_damaged_archive_is_refused_in_one_line(tmp_path, capsys, trained_suite):
    kept = _kept_suite(tmp_path, trained_suite)
    assert main(["records", "pack", str(kept)]) == 0
    archive = kept / "records.tar.gz"
    archive.write_bytes(archive.read_bytes()[:200])
    capsys.readouterr()
    code, err = _tool(capsys, "restore", kept, tmp_path / "out")
    assert code == 2 and "is damaged" in err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["pack", "A", "B"], "unrecognized arguments"),
        (["pack", "--suite", "A"], "unrecognized arguments"),
        (["keep", "A"], "arguments are required: destination"),
    ],
)
def test_pack_and_a_missing_destination_are_refused_in_one_line(tmp_path, capsys, argv, message):
    code, err = _tool(capsys, *(str(tmp_path / a) if a.isupper() else a for a in argv))
    assert code == 2 and message in err and err.count("\n") == 1
