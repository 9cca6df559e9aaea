"""Training speed of a Hugging Face model converted by ``mixit.convert``: tokens per second of
one next-token AdamW step of the original model and of its Frozen-QK and MixiT conversions,
timed one after another per round on the same device (a benchmark, not a timed test).

Each model is a fresh ``ARCH`` (gpt2, llama) built from a config at the given sizes; the
optimiser holds only the parameters that train, as a user's loop would. Writes OUT as JSON.

    python studies/bench_convert.py --arch gpt2 --out results/convert-bench/gpt2.json
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from mixit.analysis.throughput import language_model_step, time_interleaved
from mixit.cli import run_tool
from mixit.cli.options import count
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.models.build import hf_settings
from mixit.models.convert import convert
from mixit.training.resolve import resolve_config

ARCHS = ("gpt2", "llama")
VARIANTS = ("standard", "frozen-qk", "mixit")  # "standard": the original, unconverted


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="bench_convert", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--arch", choices=ARCHS, default="gpt2", help="default: gpt2")
    parser.add_argument("--n-layer", type=count, default=4)
    parser.add_argument("--n-embd", type=count, default=256)
    parser.add_argument("--n-head", type=count, default=4)
    parser.add_argument("--seq-len", type=count, default=256)
    parser.add_argument("--batch", type=count, default=16)
    parser.add_argument("--vocab", type=count, default=1024)
    parser.add_argument("--rounds", type=count, default=10, help="timed steps (default 10)")
    args = parser.parse_args(argv)
    if args.n_embd % args.n_head:
        raise UsageError("--n-embd must be a multiple of --n-head")
    try:
        import transformers
    except ImportError:
        raise UsageError("bench_convert needs transformers: pip install 'mixit[hf]'") from None
    shape = (args.n_layer, args.n_embd, args.n_head, args.seq_len, args.vocab)
    sizes = dict(
        zip(("n_layer", "n_embd", "n_head", "block_size", "vocab_size"), shape, strict=True)
    )
    # The tiny retrieval config at these sizes: fp32 on the CPU, and the Hugging Face config
    # that `--arch hf:ARCH` would build (dropout off).
    config = resolve_config(
        "retrieval", "standard", "tiny", 0, {f"model.{k}": v for k, v in sizes.items()}
    )
    hf_config = transformers.AutoConfig.for_model(args.arch, **hf_settings(args.arch, config.model))
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq_len + 1))
    steps, trainable = {}, {}
    for variant in VARIANTS:
        torch.manual_seed(0)
        original = transformers.AutoModelForCausalLM.from_config(hf_config)
        model = convert(original, variant) if variant != "standard" else original
        params = [p for p in model.parameters() if p.requires_grad]
        trainable[variant] = sum(p.numel() for p in params)
        optimizer = torch.optim.AdamW(params, lr=1e-4)
        steps[variant] = language_model_step(
            lambda ids, m=model: m(ids).logits, optimizer, tokens, config
        )
    seconds = time_interleaved(steps, args.rounds, 3, "cpu")
    per_step = args.batch * args.seq_len
    rows = [
        {
            "variant": variant,
            "tokens_per_s": per_step / seconds[variant],
            "speed_up": seconds["standard"] / seconds[variant],
            "trainable_params": trainable[variant],
        }
        for variant in VARIANTS
    ]
    setting = {"arch": args.arch, "batch": args.batch, "rounds": args.rounds}
    setting |= dict(zip(("n_layer", "n_embd", "n_head", "seq_len", "vocab"), shape, strict=True))
    write_json(Path(args.out), {"setting": setting, "device": "cpu", "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("bench_convert", main))
