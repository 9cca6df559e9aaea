"""The runs of an output named as today's mixit looks them up, after run names came to cover
the files a run reads (``mixit records rename``).

A run's directory name is a hash of its config and, since commit c9d86cf, of the contents of
the files it reads besides (a custom task's data files or generator, a ``module:`` arch's
factory). A run of such a task trained before then is named by its config alone, so the same
command no longer finds it and trains it again. ``renames`` finds every run under an output
(its runs/, each task's or axis value's runs/) whose name is its stored config's config-only
name, with today's name, which hashes the files as they are now. Runs of the built-in tasks
keep their names. Today's name says the run read today's files, which its records cannot show,
so the command renames nothing without ``--apply``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import NamedTuple

from mixit.common.errors import UsageError
from mixit.config.overrides import with_settings
from mixit.config.schema import RunConfig
from mixit.running.runs import hashed_name, run_dir_name
from mixit.training.resolve import stored_config

FILLED_FROM_DATA = ("vocab_size", "block_size")  # 0 when named, filled in before config.json


class Rename(NamedTuple):
    run: Path
    name: str  # today's name


def todays_name(run_name: str, config: RunConfig) -> str | None:
    """Today's name for a run called ``run_name`` whose config.json stores ``config``, if that
    name is the config-only one it had before names covered a run's files; else None. The
    name hashed the config before the data filled in its sizes: each was either given (as
    stored) or left at 0."""
    stored = [getattr(config.model, key) for key in FILLED_FROM_DATA]
    for sizes in itertools.product(*((size, 0) for size in stored)):
        filled = dict(zip(FILLED_FROM_DATA, sizes, strict=True))
        named = with_settings(config, {f"model.{key}": size for key, size in filled.items()})
        if run_name == hashed_name(named):
            return run_dir_name(named)
    return None


def renames(out: Path) -> list[Rename]:
    """The runs under ``out`` named by their config alone whose name today differs."""
    found = []
    for path in sorted(out.rglob("runs/*/config.json")):
        run = path.parent
        try:
            config = stored_config(json.loads(path.read_text()))
        except (ValueError, UsageError) as error:  # not JSON, not UTF-8, or not mixit's
            raise UsageError(f"{path} is not a readable config ({error})") from None
        name = todays_name(run.name, config)
        if name is not None and name != run.name:
            found.append(Rename(run, name))
    return found
