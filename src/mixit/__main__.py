"""``python -m mixit`` and the ``mixit`` command: the wait policy of OpenMP's threads is chosen
(``mixit.common.cores.settle_wait_policy``) before the command line loads torch, which reads
it once."""

import sys

from mixit.common.cores import settle_wait_policy


def entry_point() -> None:
    line = settle_wait_policy()
    if line:
        print(line, file=sys.stderr)
    # Imported only now: torch, which the commands load, must start after the policy is set.
    from mixit.cli import entry_point as run_command

    run_command()


if __name__ == "__main__":
    entry_point()
