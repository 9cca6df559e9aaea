"""Layer 10, the top: the `mixit` command line, one module per subcommand (``add`` registers
its parser, ``run`` carries it out); parsing only. Here, the parser they share and the mapping of
errors to exit statuses."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable, Sequence

import torch

from mixit.cli import (
    analyze,
    bench,
    compare,
    export,
    generate,
    presets,
    records,
    reproduce,
    suite,
    sweep,
    train,
)
from mixit.cli.limits import check_out, command_lock_of
from mixit.cli.options import FORMATTER, OVERRIDE, catalogue
from mixit.cli.parser import OneLineParser
from mixit.common.errors import RunsFailed, RunsPending, Terminated, TrainingDiverged, UsageError

EXIT_USAGE = 2
EXIT_FAILED = 1  # a run diverged, or submitted runs ended without their summaries
EXIT_INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # 128 + SIGTERM

# The subcommands, in the order `mixit --help` lists them.
COMMANDS = (
    train,
    compare,
    reproduce,
    suite,
    sweep,
    bench,
    generate,
    export,
    analyze,
    records,
    presets,
)


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="mixit",
        description="Train the random-attention model spectrum (standard, frozen-qk, frozen-mlp, "
        "mixit, random) and compare what each task needs.",
        epilog=catalogue(),
        formatter_class=FORMATTER,
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for command in COMMANDS:
        command.add(commands)
    return parser


# Options whose value is itself written ``section.key=values`` (``--axis task.max_pairs=4,8``):
# that value stays beside its option.
DOTTED_VALUE_OPTIONS = ("--axis",)


def overrides_last(argv: Sequence[str]) -> list[str]:
    """``argv`` with every ``section.key=value`` moved to the end, in order: argparse fills a
    positional list only from one place, and an override is as valid before an option."""
    moved = [
        OVERRIDE.match(a) is not None and (i == 0 or argv[i - 1] not in DOTTED_VALUE_OPTIONS)
        for i, a in enumerate(argv)
    ]
    kept = [a for a, m in zip(argv, moved, strict=True) if not m]
    return kept + [a for a, m in zip(argv, moved, strict=True) if m]


def main(argv: Sequence[str] | None = None) -> int:
    command, resumable = None, False
    # SIGTERM unwinds like Ctrl-C: workers stop, finished runs stay, one line, exit 143.
    previous_handler = None
    if threading.current_thread() is threading.main_thread():
        previous_handler = signal.signal(signal.SIGTERM, _terminate)
    try:
        parser = build_parser()
        argv = overrides_last(sys.argv[1:] if argv is None else argv)
        args, extra = parser.parse_known_args(argv)
        command, resumable = args.command, getattr(args, "resumable", False)
        # argparse stops filling a positional list at the first option: overrides given
        # after `--seeds 3` arrive here, and belong to the list a command names for them.
        trailing = getattr(args, "trailing_overrides", None)
        if extra and (trailing is None or any(e.startswith("-") for e in extra)):
            parser.unknown(extra, command)
        if trailing is not None:
            getattr(args, trailing).extend(extra)
        if getattr(args, "target", None) and not args.estimate:
            raise UsageError("--target goes with --estimate: it predicts, it does not train")
        args.argv = argv
        if not hasattr(args, "force"):  # the commands that write into --out have --force
            return args.run(args)
        check_out(args)
        with command_lock_of(args):
            return args.run(args)
    except UsageError as error:
        print(f"mixit: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (TrainingDiverged, RunsFailed) as error:
        print(f"mixit: {error}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as error:  # a file the command could not read or write, wherever it was
        print(f"mixit: error: {os_error_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    except json.JSONDecodeError as error:  # a damaged file that no reader named already
        print(f"mixit: error: a JSON file is damaged ({error})", file=sys.stderr)
        return EXIT_USAGE
    except (MemoryError, RuntimeError) as error:  # past the memory check's lower bound
        if not out_of_memory(error):
            raise
        print(f"mixit: {command or 'mixit'} ran out of memory; {MEMORY_HINT}", file=sys.stderr)
        return EXIT_FAILED
    except RunsPending as pending:
        print(f"mixit: {pending}", file=sys.stderr)
        return 0
    except KeyboardInterrupt as stop:
        hint = "; the same command goes on from the finished runs" if resumable else ""
        terminated = isinstance(stop, Terminated)
        print(f"mixit: {'terminated' if terminated else 'interrupted'}{hint}", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)


# What torch's CPU allocator says when the host has no memory left for a tensor, in the
# RuntimeError it raises (CUDA's is a torch.OutOfMemoryError).
CPU_ALLOCATOR_FAILED = "DefaultCPUAllocator: can't allocate memory"


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` says the host or the GPU had no memory left: torch's CUDA allocator
    raises ``torch.OutOfMemoryError``, its CPU allocator a plain RuntimeError."""
    memory = (MemoryError, torch.OutOfMemoryError)
    return isinstance(error, memory) or CPU_ALLOCATOR_FAILED in str(error)


MEMORY_HINT = (
    "use smaller sizes, or more train.micro_batches to hold less of each batch at once "
    "(--estimate predicts a config's memory)"
)


def os_error_line(error: OSError) -> str:
    """One line naming the file and the system's reason (a permission, a full disk)."""
    reason = error.strerror or str(error) or type(error).__name__
    return f"{error.filename}: {reason}" if error.filename else reason


def run_tool(prog: str, run: Callable[[], int]) -> int:
    """A script of studies/ or docs/build/ under the command line's promise: bad input (a
    UsageError, a file that cannot be read or written, a damaged JSON file) is one line and
    exit 2, Ctrl-C one line and 130, never a traceback."""
    try:
        return run()
    except UsageError as error:  # the tool's own parser names it already
        print(f"{prog}: error: {str(error).removeprefix(f'{prog}: ')}", file=sys.stderr)
    except OSError as error:
        print(f"{prog}: error: {os_error_line(error)}", file=sys.stderr)
    except json.JSONDecodeError as error:  # a damaged file; its name is the caller's to add
        print(f"{prog}: error: a JSON file is damaged ({error})", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_USAGE


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def entry_point() -> None:
    sys.exit(main())
