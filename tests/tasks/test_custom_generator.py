"""The custom task's data from a generator (``task.generator=MODULE:FUNCTION``): the lookup
example of examples/lookup, trusted only when named, its splits disjoint, its axis."""

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from mixit.cli import main
from mixit.common.errors import UsageError
from mixit.common.trust import TRUST_ENV, trust
from mixit.study.axis import parse_axis
from mixit.tasks import get_task
from mixit.training.resolve import resolve_config

LOOKUP = str(Path(__file__).resolve().parents[2] / "examples" / "lookup" / "lookup.py")
GENERATOR = f"{LOOKUP}:examples"
SMALL = {"task.generator": GENERATOR, "task.size": 6, "task.n_train": 300, "task.n_test": 60}


def data(overrides, seed=0):
    config = resolve_config("custom", "standard", "tiny", seed, overrides)
    return get_task("custom").make_data(config.task, seed)


@pytest.fixture
def trusted(monkeypatch):
    monkeypatch.setenv(TRUST_ENV, "")
    trust(LOOKUP)


def test_a_generator_gives_disjoint_splits_the_same_for_every_seed(trusted):
    first = data(SMALL)
    rows = {tuple(r) for r in first.train.inputs.tolist()}
    assert len(first.train.inputs) == 300 and len(first.test.inputs) == 60
    # Each test row's input (up to the separator) was never a training input.
    assert not rows & {tuple(r) for r in first.test.inputs.tolist()}
    assert np.array_equal(data(SMALL, seed=1).train.inputs, first.train.inputs)
    longer = data({**SMALL, "task.size": 12})
    assert longer.train.inputs.shape[1] > first.train.inputs.shape[1]


def test_a_generator_no_one_named_is_never_imported(monkeypatch):
    monkeypatch.setenv(TRUST_ENV, "")
    with pytest.raises(UsageError, match=TRUST_ENV):
        data(SMALL)


def test_a_generators_refusal_and_too_few_examples_are_usage_errors(trusted):
    with pytest.raises(UsageError, match=r"failed at task\.size=1: ValueError"):
        data({**SMALL, "task.size": 1})
    with pytest.raises(UsageError, match="distinct inputs"):
        data({**SMALL, "task.size": 3, "task.n_train": 4000})
    with pytest.raises(UsageError, match="not both"):
        data({**SMALL, "task.data_files": "a.jsonl,b.jsonl"})


def test_the_axis_of_a_generated_task_is_its_size(trusted):
    axis = parse_axis("auto", "custom", "tiny", {**SMALL, "task.size": 10})
    assert axis.key == "task.size" and axis.values == (10, 20, 40, 80, 160)
    with pytest.raises(UsageError, match=r"task\.size"):
        parse_axis("auto", "custom", "tiny", {"task.data_files": "a.jsonl,b.jsonl"})


def test_the_command_line_trusts_the_generator_it_names(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(TRUST_ENV, "")
    argv = ["compare", "--task", "custom", "--models", "standard,mixit", "--axis", "auto"]
    argv += [f"task.generator={GENERATOR}", "task.size=6", "task.n_train=200", "task.n_test=40"]
    argv += ["train.steps=4", "train.eval_every=4", "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    assert "axis task.size: 6" in capsys.readouterr().out


def test_jsonl_data_walks_an_axis_of_file_pairs(tmp_path, capsys):
    files = []
    for length in (3, 6):
        folder = tmp_path / f"length-{length}"
        folder.mkdir()
        for name, count in (("train", 120), ("test", 30)):
            rows = [
                {"input": s, "target": s[::-1]}
                for s in (f"{k + (name == 'test') * 500:0{length}d}" for k in range(count))
            ]
            path = folder / f"{name}.jsonl"
            path.write_text("".join(json.dumps(row) + "\n" for row in rows))
            files.append(str(path))
    out = tmp_path / "axis"
    argv = ["compare", "--task", "custom", "--models", "standard,mixit", "--axis"]
    argv += [f"task.data_files={','.join(files)}", "train.steps=4", "train.eval_every=4"]
    argv += ["--out", str(out), "--no-progress"]
    assert main(argv) == 0
    assert (out / "task.data_files=1" / "compare.json").is_file()
    assert (out / "axis.png").is_file()
    capsys.readouterr()
    assert main([*argv[:5], f"task.data_files={','.join(files[:3])}", *argv[6:]]) == 2
    assert "task.data_files" in capsys.readouterr().err  # an odd number of files


HOSTILE = {
    "endless": "def examples(size, n, seed):\n    while True:\n        yield ([1, 2], [3])\n",
    "exits": "import sys\n\ndef examples(size, n, seed):\n    sys.exit(0)\n",
    "exits-on-import": "import sys\nsys.exit(0)\n\ndef examples(size, n, seed):\n    return []\n",
    "broken": "def examples(size, n, seed)\n    return []\n",
    "hangs": "import time\n\ndef examples(size, n, seed):\n    try:\n        time.sleep(60)\n"
    "    except Exception:\n        pass\n    return []\n",
    "raises": "def examples(size, n, seed):\n    pairs = []\n    return pairs[size]\n",
    "hard-exits": "import os\n\ndef examples(size, n, seed):\n    os._exit(0)\n",
    "hard-exits-on-import": "import os\nos._exit(3)\n",
}


@pytest.mark.parametrize(
    "kind, fragment",
    [
        ("endless", "gave 1 distinct inputs at task.size=6 (in the first 3,600 examples"),
        ("exits", "failed at task.size=6: it called sys.exit(0)"),
        ("exits-on-import", "failed while loading: it called sys.exit(0)"),
        ("broken", "failed while loading: SyntaxError"),
        ("hangs", "was still running after 0.5 s giving examples at task.size=6"),
        # The user's file and line, not mixit's frame that called it.
        (
            "raises",
            "failed at task.size=6: IndexError: list index out of range (raises.py, line 3)",
        ),
    ],
)
def test_hostile_generators_are_one_line_usage_errors(tmp_path, monkeypatch, kind, fragment):
    """A generator that never stops is read no further than it needs, and one that hangs (its
    own ``except Exception`` aside) no longer than the time limit; one that exits, or will not
    load, is named in one line instead of ending the command with its status."""
    monkeypatch.setattr("mixit.common.trust.USER_CODE_SECONDS", 0.5)
    source = tmp_path / f"{kind.replace('-', '_')}.py"
    source.write_text(HOSTILE[kind])
    monkeypatch.setenv(TRUST_ENV, "")
    trust(str(source))
    hard_exit = os._exit
    with pytest.raises(UsageError, match=re.escape(fragment)):
        data({**SMALL, "task.generator": f"{source}:examples"})
    assert os._exit is hard_exit  # held only while the user's code ran


def test_vocab_size_without_bpe_is_refused_not_ignored(trusted):
    """With character or integer tokens the vocabulary is the data's own: task.vocab_size
    would change nothing, so it is refused in one line (#104)."""
    with pytest.raises(UsageError, match=r"task\.vocab_size sets the size of the BPE tokenizer"):
        data({**SMALL, "task.vocab_size": 64})
