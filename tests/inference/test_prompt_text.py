"""A run of a task that reads text saves its vocabulary, and `generate --prompt TEXT` encodes a
prompt with it exactly as the task encoded its inputs."""

import doctest
import json

import pytest

from mixit import train
from mixit.cli import main
from mixit.data import vocabulary as vocabulary_module
from mixit.data.vocabulary import load_vocabulary
from mixit.tasks import get_task
from mixit.training.resolve import resolve_config

WORDS = ("abc", "bca", "cab", "acb", "bac", "cba")
QUICK = {"train.steps": 2, "train.eval_every": 2, "train.batch_size": 4, "model.n_embd": 32}


def test_docstring_example_holds():
    result = doctest.testmod(vocabulary_module)
    assert result.attempted >= 2 and result.failed == 0


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def custom_files(tmp_path, records):
    return (
        f"{write_jsonl(tmp_path / 'a.jsonl', records)},{write_jsonl(tmp_path / 'b.jsonl', records)}"
    )


def unpadded(row):
    return [int(t) for t in row if t != 0]


@pytest.mark.parametrize("tokenizer", ["chars", "bpe"])
def test_a_custom_run_saves_the_vocabulary_its_inputs_were_encoded_with(tmp_path, tokenizer):
    records = [{"input": f"say {w}", "target": w[::-1]} for w in WORDS] * 10
    overrides = {"task.data_files": custom_files(tmp_path, records), "task.tokenizer": tokenizer}
    overrides |= {"task.cache_dir": str(tmp_path / "cache")} | QUICK
    if tokenizer == "bpe":  # the only tokenizer with a vocabulary size to set
        overrides["task.vocab_size"] = 280
    train("custom", "standard", "tiny", 0, tmp_path / "run", overrides)
    vocabulary = load_vocabulary(tmp_path / "run")
    config = resolve_config("custom", "standard", "tiny", 0, overrides)
    data = get_task("custom").make_data(config.task, 0)
    rows = zip(data.train.inputs[:6], data.train.targets[:6, -1], records, strict=False)
    for row, last, record in rows:
        target = len(vocabulary.encode(record["target"]))
        # The row holds the input, the separator, then the target but its last token.
        tokens = unpadded(row)
        assert tokens[: len(tokens) - (target - 1)] == vocabulary.prompt(record["input"])
        text = f"{record['input']}<sep>{record['target']}"
        assert vocabulary.decode([*tokens, int(last)]) == text


def test_generate_takes_text_for_a_custom_run_and_marks_the_prompt(tmp_path, capsys):
    records = [{"input": w, "target": w[::-1]} for w in WORDS]
    overrides = {"task.data_files": custom_files(tmp_path, records)} | QUICK
    train("custom", "mixit", "tiny", 0, tmp_path / "run", overrides)
    assert (
        main(["generate", str(tmp_path / "run"), "--prompt", "cab", "--max-new-tokens", "3"]) == 0
    )
    prompt, added = capsys.readouterr().out.rstrip("\n").split(" ‖ ")
    assert prompt == "cab<sep>"  # framed as the task frames an input: the separator follows
    vocabulary = load_vocabulary(tmp_path / "run")
    ids = ",".join(str(i) for i in vocabulary.prompt("cab"))
    assert (
        main(["generate", str(tmp_path / "run"), "--prompt-ids", ids, "--max-new-tokens", "3"]) == 0
    )
    assert capsys.readouterr().out.rstrip("\n") == f"{prompt} ‖ {added}"  # the same ids
    # A character the training text never used is the task's unknown token, as in training.
    assert vocabulary.prompt("z") == [vocabulary.unknown, 1]
    # The whole target fits: the last token is read off the positions before it, so a row of
    # the task's own length (its positions plus one) can be generated to its end.
    assert main(["generate", str(tmp_path / "run"), "--prompt", "cab"]) == 0
    assert "3 tokens added, not 50" in capsys.readouterr().err


def test_a_run_of_token_ids_saves_no_vocabulary_and_refuses_text(tmp_path, capsys):
    records = [{"input": [5, 1, 9], "target": [9, 1, 5]}, {"input": [2, 2], "target": [2, 2]}]
    overrides = {"task.data_files": custom_files(tmp_path, records)} | QUICK
    train("custom", "mixit", "tiny", 0, tmp_path / "run", overrides)
    assert load_vocabulary(tmp_path / "run") is None
    assert main(["generate", str(tmp_path / "run"), "--prompt", "hello"]) == 2
    assert "--prompt-ids" in capsys.readouterr().err


def sentiment_overrides(tmp_path, **extra):
    with (tmp_path / "reviews.jsonl").open("w") as f:
        for filler in ["the plot", "this cast", "its score"] * 5:
            for text, label in ((f"{filler} is great", 1), (f"{filler} is awful", 0)):
                f.write(json.dumps({"text": text, "label": label}) + "\n")
    reviews = str(tmp_path / "reviews.jsonl")
    return (
        {
            "task.dataset": "files",
            "task.data_files": f"{reviews},{reviews}",
            "task.cache_dir": str(tmp_path / "cache"),
            "task.seq_len": 8,
        }
        | QUICK
        | extra
    )


@pytest.mark.parametrize("bos", [False, True])
def test_a_sentiment_run_frames_a_review_as_its_rows_do(tmp_path, bos):
    overrides = sentiment_overrides(tmp_path, **{"task.bos_token": bos})
    train("sentiment", "standard", "tiny", 0, tmp_path / "run", overrides)
    vocabulary = load_vocabulary(tmp_path / "run")
    config = resolve_config("sentiment", "standard", "tiny", 0, overrides)
    data = get_task("sentiment").make_data(config.task, 0)
    assert vocabulary.size == data.vocab_size
    row, answer = data.train.inputs[0], data.train.targets[0]
    assert unpadded(row) == vocabulary.prompt("the plot is great")
    assert vocabulary.decode([int(answer[answer != -100])]) == "<positive>"


def test_an_lm_run_continues_text_without_its_tokenizer_cache(tmp_path, capsys):
    (tmp_path / "train.txt").write_text("the cat sat on the mat. " * 400)
    overrides = {
        "task.dataset": "files",
        "task.data_files": f"{tmp_path / 'train.txt'},{tmp_path / 'train.txt'}",
        "task.cache_dir": str(tmp_path / "cache"),
        "task.seq_len": 16,
        "task.vocab_size": 280,
        "model.n_layer": 1,
    } | QUICK
    train("lm", "standard", "tiny", 0, tmp_path / "run", overrides)
    for cached in (tmp_path / "cache").iterdir():
        cached.unlink()
    assert (
        main(["generate", str(tmp_path / "run"), "--prompt", "the cat", "--max-new-tokens", "4"])
        == 0
    )
    prompt, _ = capsys.readouterr().out.split(" ‖ ")
    assert prompt == "the cat"
    assert not any((tmp_path / "cache").iterdir())  # read from the run, not trained again
