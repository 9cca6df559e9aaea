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
    parser.add_argument(
        "--prompt",
        default=None,
        help="text, for a run of a task that reads text (lm, sentiment, custom)",
    )
    parser.add_argument("--prompt-ids", default=None, help="token ids, e.g. 5,17,3")
    parser.add_argument(
        "--max-new-tokens", type=count, default=50, help="tokens to add (default 50)"
    )
    parser.epilog = f"The output marks where the prompt ends with {PROMPT_END!r}."
    parser.set_defaults(run=run)


PROMPT_END = " ‖ "  # between the prompt and what the model added: rare in text, and not a digit


def marked(result: dict[str, Any]) -> str:
    """The prompt and its continuation, as text (runs that saved a vocabulary) or token ids,
    with ``PROMPT_END`` between them."""
    if "text" in result:
        return f"{result['prompt_text']}{PROMPT_END}{result['new_text']}"
    ids = [str(i) for i in result["ids"]]
    cut = result["prompt_tokens"]
    return f"{' '.join(ids[:cut])}{PROMPT_END}{' '.join(ids[cut:])}"


def run(args: argparse.Namespace) -> int:
    result = generate_from_run(
        args.run_dir, args.prompt, args.prompt_ids, max_new_tokens=args.max_new_tokens
    )
    print(marked(result))
    if result["new_tokens"] < args.max_new_tokens:
        print(
            f"{result['new_tokens']} tokens added, not {args.max_new_tokens}: the prompt and "
            "they fill the model's positions (model.block_size, and one token past them)",
            file=sys.stderr,
        )
    print(f"{result['tokens_per_second']:.1f} tokens/s", file=sys.stderr)
    return 0
