"""Train a converted GPT-2 (MixiT, Frozen-QK, ...) with ``transformers.Trainer`` on the JSONL
files of a mixit custom task, on the CPU.

    pip install -e '.[hf]'
    python examples/hf_trainer.py --variant mixit --steps 300

mixit encodes the examples (``task=custom``: one ``{"input": ..., "target": ...}`` per line,
characters as tokens) and ``mixit.convert`` turns a fresh GPT-2 into the variant; the rest is
plain Hugging Face. At the end it prints the held-out answer accuracy: the share of target
tokens the model predicts exactly.
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import torch

import mixit
from mixit.common.errors import UsageError
from mixit.models.adapters import MODELS
from mixit.tasks.base import IGNORE_INDEX, Split
from mixit.tasks.custom import CustomConfig, make_custom_data

DATA = "examples/custom/train.jsonl,examples/custom/test.jsonl"


def rows(split: Split) -> list[dict[str, torch.Tensor]]:
    """A mixit split as Hugging Face rows. mixit's targets are already the next tokens
    (``targets[t]`` follows ``inputs[t]``); a Hugging Face causal LM shifts its labels itself,
    so the rows hold the whole sequence, the last answer token included, and labels that are
    the targets one place on (-100 where nothing is scored)."""
    ids = torch.cat([split.inputs, split.targets[:, -1:]], dim=1)  # (N, T + 1)
    skipped = torch.full_like(split.targets[:, :1], IGNORE_INDEX)  # (N, 1)
    labels = torch.cat([skipped, split.targets], dim=1)  # (N, T + 1)
    return [{"input_ids": i, "labels": y} for i, y in zip(ids, labels, strict=True)]


@torch.no_grad()
def answer_accuracy(model: torch.nn.Module, split: Split) -> float:
    """The share of scored target tokens predicted exactly (greedy, teacher-forced)."""
    model.eval()
    scored = split.targets != IGNORE_INDEX  # (N, T)
    predicted = model(split.inputs).logits.argmax(-1)  # (N, T)
    return (predicted[scored] == split.targets[scored]).float().mean().item()


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", default=DATA, help="train.jsonl,test.jsonl (default: %(default)s)"
    )
    parser.add_argument("--variant", default="mixit", choices=MODELS, help="default: %(default)s")
    parser.add_argument("--steps", type=int, default=300, help="optimiser steps (default: 300)")
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("steps", "n_layer", "n_embd", "n_head", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.n_embd % args.n_head:
        parser.error("--n-embd must be a multiple of --n-head")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import transformers  # after parsing: --help needs no transformers

    torch.manual_seed(args.seed)
    data = make_custom_data(CustomConfig(data_files=args.data), args.seed)
    config = transformers.GPT2Config(
        vocab_size=data.vocab_size,
        n_positions=data.train.inputs.shape[1] + 1,
        n_embd=args.n_embd,
        n_layer=args.n_layer,
        n_head=args.n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=None,
        eos_token_id=None,
    )
    model = mixit.convert(transformers.GPT2LMHeadModel(config), args.variant, seed=args.seed)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"{args.variant} GPT-2: {trainable:,} trainable parameters")
    with tempfile.TemporaryDirectory(prefix="hf-trainer-") as scratch:
        arguments = transformers.TrainingArguments(
            output_dir=scratch,
            max_steps=args.steps,
            per_device_train_batch_size=args.batch_size,
            learning_rate=args.lr,
            warmup_steps=min(50, args.steps // 10),
            lr_scheduler_type="cosine",
            logging_steps=max(1, args.steps // 10),
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            seed=args.seed,
            disable_tqdm=True,
        )
        trainer = transformers.Trainer(model=model, args=arguments, train_dataset=rows(data.train))
        trained = trainer.train()
    print(f"final training loss {trained.training_loss:.4f}")
    print(f"held-out answer accuracy {answer_accuracy(model, data.test):.4f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as error:
        print(f"hf_trainer.py: {error}", file=sys.stderr)
        sys.exit(2)
