"""``examples/hf_trainer.py``: a converted GPT-2 trains with ``transformers.Trainer`` on the
custom task's JSONL files, and the example's bad input is one line with exit status 2."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from mixit.tasks.base import Split

EXAMPLE = Path(__file__).parents[2] / "examples" / "hf_trainer.py"


def example():
    spec = importlib.util.spec_from_file_location("hf_trainer", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_rows_label_each_answer_token_where_hugging_face_looks_for_it():
    # pad, a b c, separator, c b -> predicts c b a from the separator on
    split = Split(torch.tensor([[0, 3, 4, 5, 1, 5, 4]]), torch.tensor([[-100] * 4 + [5, 4, 3]]))
    (row,) = example().rows(split)
    assert row["input_ids"].tolist() == [0, 3, 4, 5, 1, 5, 4, 3]
    # Hugging Face scores labels[t + 1] from position t: the token after each input.
    assert row["labels"].tolist() == [-100] * 5 + [5, 4, 3]


def test_a_converted_mixit_gpt2_trains_through_the_example(capsys):
    module = example()
    argv = ["--variant", "mixit", "--steps", "4", "--n-embd", "16", "--n-head", "2"]
    assert (
        module.main(
            [
                "--data",
                str(EXAMPLE.parent / "custom/train.jsonl")
                + ","
                + str(EXAMPLE.parent / "custom/test.jsonl"),
                *argv,
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "mixit GPT-2:" in printed and "held-out answer accuracy" in printed
    loss = float(printed.split("final training loss ")[1].split()[0])
    assert 0 < loss < 10


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--data", "missing.jsonl,other.jsonl"], "missing.jsonl does not exist"),
        (["--variant", "frozen-q"], "invalid choice: 'frozen-q'"),
        (["--n-embd", "10", "--n-head", "4"], "--n-embd must be a multiple of --n-head"),
    ],
)
def test_bad_input_to_the_example_is_one_line(argv, fragment, tmp_path):
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *argv], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2 and fragment in done.stderr
    assert "Traceback" not in done.stderr
