"""``mixit export-hf --as mixit``: any run of mixit's decoder as ``MixitForCausalLM``, which
loads with ``trust_remote_code=True`` where mixit is not installed, gives mixit's logits,
decodes with mixit's cache and keeps its frozen groups frozen under ``transformers.Trainer``."""

import math
import subprocess
import sys

import pytest
import torch

pytest.importorskip("transformers")

import transformers

from mixit.cli import main
from mixit.inference.generate import generate
from mixit.models.attention import SoftmaxAttention
from mixit.models.modeling_mixit import MixitForCausalLM
from mixit.training.rundir import load_run
from mixit.training.train import train

SHORT = {"train.steps": 3, "train.eval_every": 3, "model.n_embd": 32, "task.n_test": 200}

# Loads each folder with mixit's package hidden, and saves what its model gives: one process
# for every case, since starting one that imports transformers costs seconds.
WITHOUT_MIXIT = """
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "mixit":
            raise ImportError(f"{name} is not installed")
sys.meta_path.insert(0, Absent())
import torch
from transformers import AutoModelForCausalLM
for folder, ids, out in zip(*[iter(sys.argv[1:])] * 3):
    ids = torch.load(ids)
    model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
    with torch.no_grad():
        step = model(ids, use_cache=True)
        torch.save({
            "module": type(model).__module__,
            "logits": step.logits,
            "cached": [(c.k is not None, c.v is not None) for c in step.cache],
            "tokens": model.generate(ids[:, :4], max_new_tokens=4, do_sample=False),
            "buffers": dict(model.named_buffers()),
            "frozen": sorted(n for n, p in model.named_parameters() if not p.requires_grad),
            "mixit_loaded": "mixit" in sys.modules,
        }, out)
"""


def exported(tmp_path, variant, **extra):
    run_dir = tmp_path / "run"
    train("addition", variant, out=run_dir, overrides={**SHORT, **extra}, progress=False)
    assert main(["export-hf", str(run_dir), str(tmp_path / "hf"), "--as", "mixit"]) == 0
    return load_run(run_dir)[0], tmp_path / "hf"


CASES = [
    ("mixit", "equations"),
    ("mixit", "authors"),
    ("frozen-qk", "authors"),
    ("mixit-learned", "equations"),  # a trained matrix: a parameter, not a buffer
    ("mixit+standard@1", "equations"),
]


def test_an_exported_run_loads_without_mixit(tmp_path):
    ours, args = {}, []
    for variant, construction in CASES:
        case = tmp_path / f"{variant}-{construction}"
        model, folder = exported(case, variant, **{"model.construction": construction})
        ids = torch.randint(0, model.config.vocab_size, (2, model.config.block_size))
        torch.save(ids, case / "ids.pt")
        ours[variant, construction] = model, ids
        args += [str(folder), str(case / "ids.pt"), str(case / "out.pt")]
    env = {"HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_MIXIT, *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for (variant, construction), (model, ids) in ours.items():
        theirs = torch.load(tmp_path / f"{variant}-{construction}" / "out.pt")
        loads_as_exported(model, ids, theirs)


def loads_as_exported(ours, ids, theirs):
    """What the model loaded without mixit gave (``theirs``) is what mixit's (``ours``) gives."""
    assert not theirs["mixit_loaded"] and theirs["module"].startswith("transformers_modules")
    with torch.no_grad():
        torch.testing.assert_close(theirs["logits"], ours(ids), atol=1e-5, rtol=0)
    # Softmax attention caches keys and values, MixiT's family values only (a hybrid per layer).
    assert theirs["cached"] == [(isinstance(b.attn, SoftmaxAttention), True) for b in ours.blocks]
    frozen = sorted(n for n, p in ours.named_parameters() if not p.requires_grad)
    assert theirs["frozen"] == [f"decoder.{name}" for name in frozen]
    assert torch.equal(theirs["tokens"], generate(ours, ids[:, :4], 4))
    mixing = {k: v for k, v in theirs["buffers"].items() if k.endswith(".mixing")}
    # MixiT's and the causal mean's matrices are buffers, a trained one a parameter.
    buffered = [b for b in ours.blocks if isinstance(getattr(b.attn, "mixing", None), torch.Tensor)]
    assert len(mixing) == len(buffered)
    for name, matrix in mixing.items():
        assert torch.equal(matrix, ours.state_dict()[name.removeprefix("decoder.")])


def test_an_exported_frozen_qk_model_keeps_wq_and_wk_under_the_trainer(tmp_path):
    _, folder = exported(tmp_path, "frozen-qk")
    model = MixitForCausalLM.from_pretrained(folder)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ids = torch.randint(1, model.config.vocab_size, (8, model.config.block_size))
    data = [{"input_ids": row, "labels": row} for row in ids]
    arguments = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"),
        max_steps=2,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    trained = transformers.Trainer(model=model, args=arguments, train_dataset=data).train()
    assert math.isfinite(trained.training_loss) and trained.training_loss > 0
    moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    attention = {n for n in before if ".attn.w_" in n}
    assert {n for n in attention if ".w_q." in n or ".w_k." in n}.isdisjoint(moved)
    assert {n for n in attention if ".w_v." in n} <= moved
