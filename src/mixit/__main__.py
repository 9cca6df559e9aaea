"""``python -m mixit`` and the ``mixit`` command: the wait policy of OpenMP's threads is chosen
(``mixit.common.cores.settle_wait_policy``) before the command line loads torch, which reads
it once. The line that says so is printed only where the command is about to train."""

import sys
from collections.abc import Sequence

from mixit.common.cores import settle_wait_policy

# The commands that train or time training, and the options with which they do neither (or,
# with --estimate, say themselves that the machine is shared).
TRAINING = frozenset({"train", "compare", "suite", "reproduce", "sweep", "presets", "bench"})
NOT_TRAINING = frozenset({"-h", "--help", "--estimate", "--no-train", "--report", "--best"})


def trains(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` (without the program) is about to train."""
    return bool(argv) and argv[0] in TRAINING and not NOT_TRAINING & set(argv)


def entry_point() -> None:
    line = settle_wait_policy()
    if line and trains(sys.argv[1:]):
        print(line, file=sys.stderr)
    # Imported only now: torch, which the commands load, must start after the policy is set.
    from mixit.cli import entry_point as run_command

    run_command()


if __name__ == "__main__":
    entry_point()
