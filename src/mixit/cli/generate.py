"""`mixit generate`: continue a prompt with a trained run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mixit.cli.options import count
from mixit.inference.generate import generate_from_run


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "generate", help="continue a prompt with a trained run (cached greedy decoding)"
    )
    parser.add_argument("run_dir", help="a finished run directory")
    parser.add_argument("--prompt", default=None, help="text (lm runs)")
    parser.add_argument("--prompt-ids", default=None, help="token ids, e.g. 5,17,3")
    parser.add_argument(
        "--max-new-tokens", type=count, default=50, help="tokens to add (default 50)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    result = generate_from_run(
        args.run_dir, args.prompt, args.prompt_ids, max_new_tokens=args.max_new_tokens
    )
    print(result.get("text", " ".join(map(str, result["ids"]))))
    if result["new_tokens"] < args.max_new_tokens:
        print(
            f"{result['new_tokens']} tokens added, not {args.max_new_tokens}: the prompt and "
            "they fill the model's positions (model.block_size)",
            file=sys.stderr,
        )
    print(f"{result['tokens_per_second']:.1f} tokens/s", file=sys.stderr)
    return 0
