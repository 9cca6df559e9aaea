"""`mixit export-hf`: a run as a Hugging Face model directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mixit.common.io import command_lock
from mixit.inference.export_hf import FORMS, export_hf


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "export-hf",
        help="write a run as a Hugging Face model folder (LlamaForCausalLM or MixitForCausalLM)",
    )
    parser.add_argument("run_dir", help="a finished run directory")
    parser.add_argument("out_dir", help="where to write the Hugging Face model")
    parser.add_argument(
        "--overwrite", action="store_true", help="write into a folder that is not empty"
    )
    parser.add_argument(
        "--as",
        dest="form",
        choices=FORMS,
        default="auto",
        help="llama: a stock LlamaForCausalLM (softmax variants, plain residual, SiLU MLP); "
        "mixit: MixitForCausalLM, any run of mixit's decoder, loaded with "
        "trust_remote_code=True without mixit installed; auto (default): llama where it can",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # A second export into the same folder meanwhile is refused, naming this one.
    with command_lock(Path(args.out_dir), "export-hf"):
        written = export_hf(args.run_dir, args.out_dir, args.overwrite, args.form)
    print(f"written: {written}")
    return 0
