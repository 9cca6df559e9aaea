"""What several subcommands share: argument types, option groups and their reading."""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.trust import trust
from mixit.config.overrides import parse_overrides
from mixit.models.build import trust_module
from mixit.models.variants import VARIANTS
from mixit.tasks import PRESET_NAMES, TASKS

FORMATTER = argparse.RawDescriptionHelpFormatter  # keeps the task and model catalogue's lines


def seed_count(text: str) -> int | str:
    """argparse type of ``--seeds``: a count, or ``auto`` (``mixit.study.litmus.AUTO_SEEDS``)."""
    if text == "auto":
        return text
    try:
        return count(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= 1 or auto, got '{text}'"
        ) from None


def count(text: str) -> int:
    """argparse type of a count option: a whole number >= 1 (bad input is one line, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def whole_number(text: str) -> int:
    """argparse type of a whole number >= 0 (a seed, a checkpoint interval where 0 is off)."""
    if text.strip() == "0":
        return 0
    return count(text)


def folder_name(text: str) -> str:
    """argparse type of one folder's name (no path: it cannot point outside its parent)."""
    if not text or text in (".", "..") or "/" in text or "\\" in text:
        raise argparse.ArgumentTypeError(f"'{text}' is not a folder name (no '/', not '..')")
    return text


def margin(text: str) -> float:
    """argparse type of a margin in a metric's units: a finite number >= 0 (NaN would make
    every comparison false, and so every verdict wrong)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def positive(text: str) -> float:
    """argparse type of a finite number > 0 (a budget in seconds: NaN would pass every check)."""
    value = margin(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def counts(text: str) -> list[int]:
    """argparse type of a comma-separated list of whole numbers >= 1 (widths, say)."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("names nothing; give whole numbers >= 1, e.g. 512,1024")
    return [count(item) for item in items]


def catalogue() -> str:
    tasks = "\n".join(f"  {name:<17} {spec.summary}" for name, spec in TASKS.items())
    models = "\n".join(
        f"  {name:<17} {v.description}{' (beyond the paper)' * v.beyond_paper}"
        for name, v in VARIANTS.items()
    )
    return f"tasks:\n{tasks}\n\nmodels:\n{models}"


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help="task name (listed below)")
    parser.add_argument(
        "--preset",
        default="tiny",
        help=f"one of {', '.join(PRESET_NAMES)}: tiny (one to four minutes per model on a laptop "
        "CPU; default), small (larger models, sized for a GPU: see --estimate), paper "
        "(appendix C and Table 9)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    add_arch_option(parser)
    add_estimate_options(parser)
    add_progress_option(parser)
    add_overrides_argument(
        parser, "dotted overrides, e.g. model.n_layer=4 train.steps=300 task.max_pairs=12"
    )


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress bars (default: bars when stderr is a terminal, else a line at "
        "least every 30 s; --no-progress: nothing)",
    )


def add_overrides_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """The trailing KEY=VALUE overrides; ``help_text`` says what they apply to."""
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help=help_text)


_TUNE_HELP = (
    "first tune each model (docs/tuning.md): its learning rate on a grid around the "
    "preset's that extends at its edges, by successive halving on 10%% of the training "
    "data held out (never the test split) and tuning seed 1000; its budget, doubled while "
    "still rising (up to 4x); for an --arch model, also its initialisation (its own or "
    "mixit's small-output). Then train every seed at the choice. Default with --arch"
)


def add_tune_options(
    parser: argparse.ArgumentParser,
    tune_help: str = _TUNE_HELP,
    no_tune_help: str = "train at the presets' settings, also with --arch",
) -> None:
    """``--tune lr`` / ``--no-tune``, one at most; read them back with ``tune_choice``."""
    tuning = parser.add_mutually_exclusive_group()
    tuning.add_argument("--tune", choices=["lr"], default=None, help=tune_help)
    tuning.add_argument("--no-tune", dest="tune", action="store_const", const="", help=no_tune_help)


def tune_choice(args: argparse.Namespace) -> list[str] | None:
    """``--tune lr``: ["lr"]; ``--no-tune``: []; neither: None (tune --arch models only)."""
    return None if args.tune is None else [args.tune] if args.tune else []


class GivenOnce(argparse.Action):
    """An option that may be given once: a second would silently replace the first."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        if getattr(namespace, self.dest) is not None:
            raise argparse.ArgumentError(
                self, f"given twice ('{getattr(namespace, self.dest)}' and '{values}'); give one"
            )
        setattr(namespace, self.dest, values)


def add_arch_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--arch",
        default=None,
        help="the model to take apart (model.arch): mixit (its own decoder; default), hf:NAME "
        "(a Hugging Face gpt2, llama, qwen2 or mistral built from config at the run's sizes) "
        "or module:MODULE:FACTORY (FACTORY(model_config) returns your causal LM)",
    )


def dotted_overrides(args: argparse.Namespace) -> dict[str, str]:
    """The dotted overrides, with ``--arch`` as ``model.arch`` (``command_line_overrides``)."""
    overrides = parse_overrides(args.overrides)
    given = overrides.get("model.arch")
    if args.arch is not None and given is not None and given != args.arch:
        raise UsageError(f"--arch {args.arch} and model.arch={given} disagree; give one")
    if args.arch is not None:
        overrides["model.arch"] = args.arch
    return checked_overrides(overrides)


# The model settings an ``--arch`` model takes from mixit's config (mixit.models.build): its sizes,
# MixiT's mixing scale and the initialisation it may choose. Every other ``model.*`` key is an
# option of mixit's own decoder, which such a model would record and never apply.
ARCH_SETTINGS = (
    "arch",
    "arch_init",
    "n_layer",
    "n_embd",
    "n_head",
    "mlp_ratio",
    "vocab_size",
    "block_size",
    "mixing_scale",
    "output_init_std",
)


def command_line_overrides(items: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` items of the command line as a dict; a module its ``model.arch`` names is
    trusted (``arch.trust_module``): the user named it here. An option of mixit's decoder
    given to another architecture is refused: it would be recorded and never applied."""
    return checked_overrides(parse_overrides(items))


def checked_overrides(overrides: dict[str, str]) -> dict[str, str]:
    """``command_line_overrides`` of items already parsed."""
    arch = str(overrides.get("model.arch", "mixit"))
    trust_module(arch)
    if overrides.get("task.generator"):  # a custom task's data generator, named here
        trust(str(overrides["task.generator"]).partition(":")[0])
    if arch != "mixit":
        unused = [k for k in overrides if k.startswith("model.") and k[6:] not in ARCH_SETTINGS]
        if unused:
            raise UsageError(
                f"{unused[0]} is an option of mixit's own decoder, which model.arch={arch} does "
                f"not apply; it takes only model.{', model.'.join(ARCH_SETTINGS[1:])}"
            )
    return overrides


def add_axis_option(parser: argparse.ArgumentParser, where: str) -> None:
    """``--axis``: the litmus test along a difficulty axis (mixit.study.axis); ``where``
    names the folder its files go to in this command ("" for OUT itself)."""
    parser.add_argument(
        "--axis",
        default=None,
        action=GivenOnce,
        help="KEY=v1,v2,..., default or auto: one comparison per value, read for where each "
        f"model breaks ({where}axis.json, axis.csv, axis.png); default: the task's own knob "
        "(retrieval: Figure 2's pair counts; MQAR at tiny: 2-16 pairs; others: 0.5, 1, 2 "
        "and 4 times the preset's value); auto: that knob doubled from the preset's value "
        "until a model that matched falls short (at most 4 doublings, and no further than "
        "the task accepts)",
    )


def add_estimate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="train and write nothing; time a few steps of each run's config on this machine "
        "and print how long the training would take (with --jobs processes)",
    )
    parser.add_argument(
        "--target",
        default=None,
        help="with --estimate: predict instead for this device from each run's FLOPs and "
        "memory, without timing anything: h100, a100 or cpu (docs/cost.md)",
    )


def add_ablation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--claims",
        default=None,
        help="ablation only: the claims to measure, e.g. C1,C5 (default C1,C2,C5,C6,C7,C8)",
    )
    parser.add_argument(
        "--differences",
        default=None,
        help="ablation only: the differences to flip, e.g. sink,biases (default all, then the "
        "whole authors construction)",
    )


def model_names(text: str) -> list[str]:
    models = [m.strip() for m in text.split(",") if m.strip()]
    if not models:
        raise UsageError(f"--models names no model; choose from: {', '.join(VARIANTS)}")
    twice = [m for i, m in enumerate(models) if m in models[:i]]
    if twice:  # it would be planned, priced and read as two models
        raise UsageError(f"--models names {twice[0]} twice; name each model once")
    return models


def names(text: str | None, option: str) -> list[str] | None:
    """A comma-separated ``option`` as a list; None when it was not given (its default). A
    given list that names nothing (``""``, ``","``) is a usage error, never "everything"."""
    if text is None:
        return None
    listed = [name.strip() for name in text.split(",") if name.strip()]
    if not listed:
        raise UsageError(f"{option} names nothing; leave it out for its default, or name some")
    return listed


# A dotted override, which may stand anywhere on the command line.
OVERRIDE = re.compile(r"^(model|task|train)\.[A-Za-z0-9_]+=")
