"""docs/architecture.md: the source tree's sizes."""

from __future__ import annotations

import ast

from figures.common import ROOT


def source_sizes() -> str:
    """docs/architecture.md: how many modules src/mixit has, those over 300 lines, and its
    longest functions (tests/test_structure.py holds them to 400 and 60)."""
    source = ROOT / "src" / "mixit"
    modules = sorted(source.rglob("*.py"))
    lengths = {path: len(path.read_text().splitlines()) for path in modules}
    functions = []
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                functions.append((size, f"{path.relative_to(source)}:{node.name}"))
    longest = ", ".join(f"`{name}` ({size})" for size, name in sorted(functions)[::-1][:3])
    lines = [
        f"{len(modules)} modules, {sum(lengths.values()):,} lines in all. Longest functions: "
        f"{longest}. Modules over 300 lines:",
        "",
        "| module | lines |",
        "|---|---:|",
    ]
    for path, size in sorted(lengths.items(), key=lambda item: -item[1]):
        if size > 300:
            lines.append(f"| `{path.relative_to(source)}` | {size} |")
    return "\n".join(lines)


# The suites that measured MAD's and Zoology's tasks as their peers define them, and the
# earlier versions of the same tasks they supersede, all at tiny on seeds 0-2.
