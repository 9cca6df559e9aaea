"""A run's name covers the files it reads besides its config (mixit.common.digest): an edited
data file, generator or model factory trains anew; a built-in task's name is its config's."""

import json
import sys

from mixit.common.digest import files_digest, module_file
from mixit.running.runs import run_dir_name
from mixit.training.resolve import resolve_config

GENERATOR = """
def examples(size, n, seed):
    return [(str(i).zfill(size), str(i % {modulus})) for i in range(n + 50)]
"""


def write_generator(path, modulus):
    path.write_text(GENERATOR.replace("{modulus}", str(modulus)))


def custom(overrides):
    return resolve_config("custom", "standard", "tiny", 0, overrides)


def test_an_edited_generator_gives_its_runs_a_new_name_and_an_unchanged_one_keeps_it(tmp_path):
    generator = tmp_path / "gen.py"
    write_generator(generator, 2)
    config = custom({"task.generator": f"{generator}:examples", "task.size": 4})
    first = run_dir_name(config)
    assert run_dir_name(config) == first
    write_generator(generator, 3)
    assert run_dir_name(config) != first
    write_generator(generator, 2)
    assert run_dir_name(config) == first  # the contents name it, not the file's time


def test_edited_data_files_give_a_new_name(tmp_path):
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    for path in (train, test):
        path.write_text(json.dumps({"input": "ab", "target": "b"}) + "\n")
    config = custom({"task.data_files": f"{train},{test}"})
    first = run_dir_name(config)
    test.write_text(json.dumps({"input": "ba", "target": "a"}) + "\n")
    assert run_dir_name(config) != first


def test_a_built_in_task_is_named_by_its_config_alone():
    # The preset as it was before the plateau rule (train.plateau, 2026-12-06).
    config = resolve_config("retrieval", "standard", "tiny", 0, {"train.plateau": 0.0})
    assert files_digest(()) == ""
    # The name these records have always had (results/ keeps runs under it): a setting added
    # later, at its original value, leaves a run's name as it was.
    assert run_dir_name(config) == "retrieval-standard-s0-2e38b661a4"


def test_a_modules_file_is_found_without_running_its_package(tmp_path, monkeypatch):
    package = tmp_path / "trap"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (package / "factory.py").write_text("def build(config): ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert module_file("trap.factory") == package / "factory.py"
    assert "trap" not in sys.modules
    assert module_file("trap.absent") is None and module_file("sys") is None
