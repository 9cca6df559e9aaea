"""End to end: the spectrum separates a task that needs an induction circuit (retrieval)."""

from mixit import compare

RETRIEVAL = {
    "task.vocab_size": 24,
    "task.max_pairs": 4,
    "task.n_train": 4000,
    "task.n_test": 500,
    "model.n_embd": 32,
    "model.n_head": 2,
    "model.n_layer": 2,
    "train.steps": 500,
    "train.eval_every": 500,
    "train.batch_size": 64,
    "train.lr": 3e-3,
    "train.eval_examples": 500,
}


def test_learned_attention_solves_retrieval_and_fixed_mixing_does_not(tmp_path):
    result = compare("retrieval", ["standard", "mixit"], out=tmp_path, overrides=RETRIEVAL)
    accuracy = {row["model"]: row["mean"] for row in result["rows"]}
    assert accuracy["standard"] > 0.9
    assert accuracy["mixit"] < accuracy["standard"] - 0.3
