"""Every file a command reads back, damaged anywhere: the command either gives its result or
exits 2 with one line, never a traceback, and a refusal changes no file. Hypothesis damages one
place of a real file (a committed output's, copied): a value swapped for any JSON value, a key
or an item dropped, or the whole file replaced by bytes or JSON of any shape. The exported
config's reader, ``mixit.freeze``, is held to the same: the model, or one UsageError."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_input import CONTENTS, JSON_VALUES

from mixit.cli import main
from mixit.common.errors import UsageError
from mixit.running.archive import unpack

RESULTS = Path(__file__).resolve().parents[2] / "results"


@dataclass(frozen=True)
class Stored:
    """A stored file (``name``, under the copy of ``output``) and the call that reads it
    (``command``, its ``{out}`` the copy's folder)."""

    output: str
    name: str
    command: str

    def argv(self, out: Path) -> list[str]:
        return shlex.split(self.command.format(out=shlex.quote(str(out))))


SUITE_GPT2 = "--arch hf:gpt2 --seeds 3 model.n_layer=2"
REREAD = "reproduce theorem21 --no-train --no-progress --out {out}"
STORED = {
    "compare.json": Stored(
        "suite-gpt2-tuned-modadd-2layer",
        "modular-addition/compare.json",
        f"suite --tasks modular-addition {SUITE_GPT2} --out {{out}} --report",
    ),
    "tuning.json": Stored(
        "suite-gpt2-tuned-modadd-2layer",
        "modular-addition/tuning.json",
        # Predicted for a named device, so each damaged file costs no timing of GPT-2 steps.
        f"compare --task modular-addition --tune lr {SUITE_GPT2} --out {{out}}/modular-addition "
        "--estimate --target h100",
    ),
    # The axis is read as a suite's task: its axis.json under SUITE/mqar.
    "axis.json": Stored(
        "axis-mqar",
        "suite/mqar/axis.json",
        "suite --tasks mqar --axis default --report --out {out}/suite",
    ),
    "claims.json": Stored(
        "theorem21-small-seed400",
        "claims.json",
        f"{REREAD} --scale small --seeds 4 --seed 400",
    ),
    "extension.json": Stored(
        "tiny-plateau-seed400", "extension.json", f"{REREAD} --scale tiny --seeds 3 --seed 400"
    ),
}


@st.composite
def damaged(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` (a JSON file) with one place damaged, or replaced whole."""
    document = json.loads(original)
    places = [()]
    for place in places:  # every value's path, breadth first (the list grows as it is read)
        value = _at(document, place)
        keys = (
            value
            if isinstance(value, dict)
            else range(len(value))
            if isinstance(value, list)
            else []
        )
        places += [(*place, key) for key in keys]
    place = draw(st.sampled_from(places))
    how = draw(st.sampled_from(["swap", "drop", "whole"] if place else ["whole"]))
    if how == "whole":
        return draw(CONTENTS)
    parent = _at(document, place[:-1])
    if how == "drop":
        del parent[place[-1]]
    else:
        parent[place[-1]] = draw(JSON_VALUES)
    return json.dumps(document).encode()


def _at(document: object, place: tuple) -> object:
    for key in place:
        document = document[key]
    return document


def _files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> dict[str, Path]:
    """Each output ``STORED`` names, copied with its runs unpacked, once for the module."""
    made = {}
    for output in {stored.output for stored in STORED.values()}:
        copy = tmp_path_factory.mktemp("stored") / output
        shutil.copytree(RESULTS / output, copy)
        unpack(RESULTS / output, copy)
        made[output] = copy
    axis = made["axis-mqar"]
    (axis / "suite" / "mqar").mkdir(parents=True)
    shutil.copy(axis / "axis.json", axis / "suite" / "mqar" / "axis.json")
    return made


@pytest.mark.parametrize("kind", sorted(STORED))
def test_the_stored_file_is_read_as_committed(kind, copies, tmp_path):
    stored = STORED[kind]
    copy = tmp_path / stored.output
    shutil.copytree(copies[stored.output], copy)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(stored.argv(copy)) == 0


@pytest.mark.parametrize("kind", sorted(STORED))
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_damaged_stored_file_is_a_result_or_one_line_and_nothing_changed(
    kind, data, copies, tmp_path_factory
):
    stored = STORED[kind]
    copy = tmp_path_factory.mktemp("damaged") / stored.output
    shutil.copytree(copies[stored.output], copy)
    target = copy / stored.name
    target.write_bytes(data.draw(damaged(target.read_bytes()), label=kind))
    before = _files(copy)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(stored.argv(copy))
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    assert "Traceback" not in err.getvalue() and status in (0, 2), err.getvalue()
    if status == 2:
        assert len(lines) == 1, lines
        assert _files(copy) == before


def test_an_axis_value_that_lacks_a_models_reading_is_one_line(copies, tmp_path):
    """Damage hypothesis found once: a model named in the axis's break points and missing
    from one value's litmus rows."""
    stored = STORED["axis.json"]
    copy = tmp_path / stored.output
    shutil.copytree(copies[stored.output], copy)
    target = copy / stored.name
    result = json.loads(target.read_text())
    point = result["points"][1]["compare"]["litmus"]
    point["rows"] = [row for row in point["rows"] if row["model"] != "mixit"]
    target.write_text(json.dumps(result))
    before, err = _files(copy), io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(stored.argv(copy)) == 2
    assert "Traceback" not in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
    assert _files(copy) == before


@settings(max_examples=8, deadline=None)
@given(frozen=JSON_VALUES)
def test_an_exported_configs_frozen_groups_give_the_model_or_one_usage_error(frozen):
    transformers = pytest.importorskip("transformers")
    import mixit

    config = transformers.GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=20, n_positions=8)
    model = transformers.GPT2LMHeadModel(config)
    model.config.mixit_frozen = frozen
    with contextlib.suppress(UsageError):
        mixit.freeze(model)
