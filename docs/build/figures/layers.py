"""docs/architecture.md: the layers of ``src/mixit`` as the code imports them, drawn floor by
floor, with the loop every command runs through. The layer order and the import graph are the
house rules' own (tests/test_structure.py), read from that file, so the picture cannot drift
from what CI holds."""

from __future__ import annotations

import importlib.util
from functools import cache
from types import ModuleType

from figures.common import ROOT
from mixit.common.plots import PAGE, styled

PICTURE = ROOT / "docs" / "layers.png"
BOX = {"boxstyle": "round", "facecolor": "white", "edgecolor": "C0"}
# The stages every command runs through, each with the modules that do it (compare, suite and
# the axes share them; reproduce runs its own plan through the same stages).
LOOP = (
    ("plan", "study/compare, suite, axis;\npaper/runner (reproduce)"),
    ("tune", "tuning/halving"),
    ("train what is missing", "running/runs.train_missing"),
    ("judge", "study/litmus; paper/claims"),
    ("report", "study/results, text;\npaper/verdicts"),
)


@cache
def house_rules() -> ModuleType:
    path = ROOT / "tests" / "test_structure.py"
    spec = importlib.util.spec_from_file_location("house_rules", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def layer_floors() -> tuple[dict[str, set[str]], dict[str, int]]:
    """Each layer's imports of other layers, and its floor (1 + the highest floor it imports)."""
    rules = house_rules()
    graph = rules.layer_imports()
    return graph, rules.floors(graph)


def layers() -> str:
    """The table of floors and what each layer imports from the floor just below it (the
    imports that set its floor), under the picture ``draw_layers`` writes."""
    graph, floor = layer_floors()
    lines = [
        f"![the layers and the loop]({PICTURE.relative_to(ROOT / 'docs')})",
        "",
        f"{len(floor)} packages on {max(floor.values())} floors.",
        "",
        "| floor | package | stands on (the floor below) |",
        "|---:|---|---|",
    ]
    for layer in sorted(floor, key=lambda name: (-floor[name], name)):
        below = sorted(t for t in graph.get(layer, ()) if floor.get(t) == floor[layer] - 1)
        lines.append(f"| {floor[layer]} | `{layer}/` | {', '.join(below) or '-'} |")
    return "\n".join(lines)


def draw_layers() -> None:
    """``PICTURE``: packages as boxes on their floors, an arrow to each import from the floor
    below; the stages every command runs through beside them."""
    graph, floor = layer_floors()
    rows: dict[int, list[str]] = {}
    for layer in sorted(floor):
        rows.setdefault(floor[layer], []).append(layer)
    where = {
        layer: (1.6 * (i - (len(names) - 1) / 2), level)
        for level, names in rows.items()
        for i, layer in enumerate(names)
    }
    with styled() as plt:
        fig, (ax, loop) = plt.subplots(
            1, 2, figsize=(PAGE, 4.6), gridspec_kw={"width_ratios": [2.2, 1]}
        )
        for layer, (x, y) in where.items():
            for target in graph.get(layer, ()):
                if floor.get(target) == floor[layer] - 1:
                    tx, ty = where[target]
                    ax.annotate(
                        "",
                        (tx, ty + 0.25),
                        (x, y - 0.25),
                        arrowprops={"arrowstyle": "->", "lw": 0.6},
                    )
            ax.text(x, y, f"{layer}/", ha="center", va="center", bbox=BOX)
        ax.set_xlim(-2.6, 2.6)
        ax.set_ylim(0.4, max(floor.values()) + 0.6)
        ax.set_ylabel("floor")
        ax.set_xticks([])
        ax.set_title("src/mixit: each package imports only floors below it")
        for i, (stage, modules) in enumerate(LOOP):
            y = len(LOOP) - i
            loop.text(0.5, y, f"{stage}\n{modules}", ha="center", va="center", fontsize=7, bbox=BOX)
            if i:  # from the stage above to this one
                loop.annotate("", (0.5, y + 0.3), (0.5, y + 0.7), arrowprops={"arrowstyle": "->"})
        loop.set_xlim(0, 1)
        loop.set_ylim(0.4, len(LOOP) + 0.6)
        loop.axis("off")
        loop.set_title("the stages of every command")
        fig.tight_layout()
        fig.savefig(PICTURE, metadata={"Software": None})
        plt.close(fig)
