"""`mixit export-hf`: a run as a Hugging Face model directory."""

from __future__ import annotations

import argparse
from typing import Any

from mixit.inference.export_hf import export_hf


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "export-hf", help="write a run as a Hugging Face LlamaForCausalLM directory"
    )
    parser.add_argument("run_dir", help="a finished run directory")
    parser.add_argument("out_dir", help="where to write the Hugging Face model")
    parser.add_argument(
        "--overwrite", action="store_true", help="write into a folder that is not empty"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print(f"written: {export_hf(args.run_dir, args.out_dir, overwrite=args.overwrite)}")
    return 0
