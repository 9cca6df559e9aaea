"""The real-data tasks: lm, sentiment and custom, on small files the tests write."""

import dataclasses
import doctest
import json

import pytest

from mixit import train
from mixit.cli import main
from mixit.tasks import custom, get_task, lm, sentiment
from mixit.training.resolve import resolve_config
from mixit.training.rundir import load_run, new_model

PROSE = "\n\n".join(
    f"Paragraph {i}: the committee met on day {i % 7} and voted {i % 3} times on the budget."
    for i in range(300)
)


@pytest.mark.parametrize("module", [lm, sentiment, custom], ids=lambda m: m.__name__)
def test_docstring_examples_hold(module):
    result = doctest.testmod(module)
    assert result.attempted >= 2 and result.failed == 0


def micro_lm(tmp_path, **extra):
    (tmp_path / "train.txt").write_text(PROSE)
    (tmp_path / "test.txt").write_text(PROSE[:3000])
    return {
        "task.dataset": "files",
        "task.data_files": f"{tmp_path / 'train.txt'},{tmp_path / 'test.txt'}",
        "task.cache_dir": str(tmp_path / "cache"),
        "task.seq_len": 32,
        "task.vocab_size": 300,
        "model.n_embd": 32,
        "model.n_layer": 1,
        "train.batch_size": 16,
        "train.eval_examples": 16,
    } | extra


def test_lm_windows_predict_the_next_token(tmp_path):
    config = resolve_config("lm", "standard", "tiny", 0, micro_lm(tmp_path))
    data = get_task("lm").make_data(config.task, 0)
    assert data.train.inputs.shape[1] == 32
    assert (data.train.inputs[0, 1:] == data.train.targets[0, :-1]).all()
    assert (data.train.inputs[1, 0] == data.train.targets[0, -1]).all()
    assert int(data.train.inputs.max()) < data.vocab_size <= 300


def test_lm_reports_log_ppl_that_falls_with_training(tmp_path):
    steps = {"train.steps": 1, "train.eval_every": 1}
    before = train("lm", "standard", "tiny", 0, None, micro_lm(tmp_path, **steps))
    steps = {"train.steps": 40, "train.eval_every": 40}
    after = train("lm", "standard", "tiny", 0, None, micro_lm(tmp_path, **steps))
    assert "test_accuracy" not in after["metrics"]
    assert after["metrics"]["log_ppl"] == after["metrics"]["test_loss"]
    assert after["metrics"]["log_ppl"] < before["metrics"]["log_ppl"] - 0.5


def test_lm_cache_is_reused(tmp_path):
    overrides = micro_lm(tmp_path)
    config = resolve_config("lm", "standard", "tiny", 0, overrides)
    get_task("lm").make_data(config.task, 0)
    cached = sorted((tmp_path / "cache").iterdir())
    stamps = [p.stat().st_mtime_ns for p in cached]
    get_task("lm").make_data(config.task, 0)
    assert [p.stat().st_mtime_ns for p in sorted((tmp_path / "cache").iterdir())] == stamps
    assert any(p.name.startswith("bpe-") for p in cached)


def test_sentiment_from_files_scores_the_label_at_the_separator(tmp_path):
    # Same lengths for both labels, so only the sentiment word tells them apart.
    fillers = {"train": ["the plot", "this cast", "its score"], "test": ["the film", "its cast"]}
    for name, words in fillers.items():
        with (tmp_path / f"{name}.jsonl").open("w") as f:
            for filler in words * 20:
                for text, label in ((f"{filler} is great", 1), (f"{filler} is awful", 0)):
                    f.write(json.dumps({"text": text, "label": label}) + "\n")
    overrides = {
        "task.dataset": "files",
        "task.data_files": f"{tmp_path / 'train.jsonl'},{tmp_path / 'test.jsonl'}",
        "task.cache_dir": str(tmp_path / "cache"),
        "task.seq_len": 8,
        "task.vocab_size": 300,
        "train.steps": 60,
        "train.eval_every": 60,
        "train.warmup_steps": 5,
    }
    summary = train("sentiment", "mixit", "tiny", 0, None, overrides)
    assert summary["metrics"]["test_accuracy"] > 0.9


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_custom_task_scores_only_the_target(tmp_path):
    records = [{"input": w, "target": w[::-1]} for w in ("abc", "bca", "cab", "acb")]
    train_file = write_jsonl(tmp_path / "train.jsonl", records)
    test_file = write_jsonl(tmp_path / "test.jsonl", records[:2])
    config = resolve_config(
        "custom", "standard", "tiny", 0, {"task.data_files": f"{train_file},{test_file}"}
    )
    data = get_task("custom").make_data(config.task, 0)
    scored = (data.train.targets != -100).sum(1)
    assert scored.tolist() == [3, 3, 3, 3]
    assert data.vocab_size == 3 + 3


def test_custom_task_accepts_lists_of_integer_tokens(tmp_path):
    records = [{"input": [5, 1, 9], "target": [9, 1, 5]}, {"input": [2, 2], "target": [2, 2]}]
    files = (
        f"{write_jsonl(tmp_path / 'a.jsonl', records)},{write_jsonl(tmp_path / 'b.jsonl', records)}"
    )
    config = resolve_config("custom", "mixit", "tiny", 0, {"task.data_files": files})
    data = get_task("custom").make_data(config.task, 0)
    assert data.train.targets[0, -3:].tolist() == [12, 4, 8]


BAD_CUSTOM = {
    "one file only": lambda d: str(write_jsonl(d / "a.jsonl", [{"input": "a", "target": "b"}])),
    "missing file": lambda d: f"{d / 'nope.jsonl'},{d / 'nope.jsonl'}",
    "line without target": lambda d: ",".join(
        [str(write_jsonl(d / "a.jsonl", [{"input": "a", "target": "b"}, {"input": "c"}]))] * 2
    ),
    "mixed kinds": lambda d: ",".join(
        [str(write_jsonl(d / "a.jsonl", [{"input": "a", "target": [1]}]))] * 2
    ),
    "empty file": lambda d: ",".join([str(write_jsonl(d / "a.jsonl", []))] * 2),
}


@pytest.mark.parametrize("case", list(BAD_CUSTOM))
def test_bad_custom_data_exits_2_with_one_line(case, tmp_path, capsys):
    files = BAD_CUSTOM[case](tmp_path)
    out = tmp_path / "run"
    code = main(
        [
            "train",
            "--task",
            "custom",
            "--model",
            "mixit",
            "--out",
            str(out),
            f"task.data_files={files}",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert not (out / "summary.json").exists()
    if case == "line without target":
        assert "a.jsonl:2" in err


def test_hub_dataset_offline_exits_2_with_one_line(tmp_path, capsys):
    args = ["train", "--task", "lm", "--model", "standard", "--out", str(tmp_path / "r")]
    code = main([*args, "task.dataset=wikitext-103", f"task.cache_dir={tmp_path}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "sotu" in err


def test_custom_task_with_a_bpe_tokenizer(tmp_path):
    records = [{"input": f"say {w}", "target": w} for w in ("yes", "no", "maybe")] * 30
    files = (
        f"{write_jsonl(tmp_path / 'a.jsonl', records)},{write_jsonl(tmp_path / 'b.jsonl', records)}"
    )
    overrides = {"task.data_files": files, "task.tokenizer": "bpe", "task.vocab_size": 280}
    config = resolve_config("custom", "standard", "tiny", 0, overrides)
    data = get_task("custom").make_data(config.task, 0)
    assert 3 + 259 <= data.vocab_size <= 3 + 280
    assert (data.train.targets != -100).any(1).all()


def test_custom_classifier_reads_its_answer_among_the_labels(tmp_path):
    # Word -> category, one-token labels: the classifier set-up (label readout, non-causal
    # MixiT) trains on it, and the answer can only be a label the files use.
    words = {"cat": "a", "dog": "a", "oak": "p", "elm": "p", "fir": "p", "cow": "a"}
    records = [{"input": word, "target": label} for word, label in words.items()]
    files = (
        f"{write_jsonl(tmp_path / 'a.jsonl', records)},{write_jsonl(tmp_path / 'b.jsonl', records)}"
    )
    overrides = {"task.data_files": files, "task.readout": "targets", "model.mixing_causal": False}
    overrides |= {"train.steps": 3, "train.eval_every": 3, "train.batch_size": 6}
    config = resolve_config("custom", "mixit", "tiny", 0, overrides)
    data = get_task("custom").make_data(config.task, 0)
    labels = data.train.targets[data.train.targets != -100].unique().tolist()
    assert get_task("custom").answer_ids(config.task, data.vocab_size) == tuple(sorted(labels))
    summary = train("custom", "mixit", "tiny", 0, tmp_path / "run", overrides)
    assert summary["metrics"]["test_loss"] < 10  # finite: no test label is ruled out
    _, trained = load_run(tmp_path / "run")
    logits = new_model(trained)(data.test.inputs)[:, -1]  # (N, V) at the separator
    assert set(logits.isfinite().any(0).nonzero().flatten().tolist()) == set(labels)


def test_custom_files_are_read_once_for_data_and_label_set(tmp_path, monkeypatch):
    # Training's data and the label readout share one reading; an edited file is read anew.
    original, reads = custom.read_pairs, []
    monkeypatch.setattr(custom, "read_pairs", lambda path: reads.append(path) or original(path))
    records = [{"input": word, "target": word[0]} for word in ("ab", "ba", "aa", "bb")]
    files = (
        f"{write_jsonl(tmp_path / 'a.jsonl', records)},{write_jsonl(tmp_path / 'b.jsonl', records)}"
    )
    config = resolve_config("custom", "mixit", "tiny", 0, {"task.data_files": files})
    config = dataclasses.replace(config, task=dataclasses.replace(config.task, readout="targets"))
    spec = get_task("custom")
    data = spec.make_data(config.task, 0)
    labels = spec.answer_ids(config.task, data.vocab_size)
    assert len(reads) == 2  # each file once
    write_jsonl(tmp_path / "a.jsonl", [*records, {"input": "abc", "target": "c"}])
    assert len(spec.answer_ids(config.task, data.vocab_size)) == len(labels) + 1
    assert len(reads) == 4
