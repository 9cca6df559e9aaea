"""One rank of a run that ``mixit.running.runs`` trains with several processes (``--gpus-per-run``):
``torchrun --standalone --nproc_per_node=K -m mixit.running.rank CONFIG_JSON RUN_DIR``. The ranks
form the data-parallel group of ``mixit.training.distributed``; rank 0 writes the run directory."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from mixit.training.resolve import stored_config
from mixit.training.train import run


def main(argv: Sequence[str]) -> None:
    config_file, run_dir = argv
    stored = json.loads(Path(config_file).read_text())
    config = stored_config(stored)
    run(config, Path(run_dir), progress=False)


if __name__ == "__main__":
    main(sys.argv[1:])
