"""The figures that README.md and docs/ quote from the committed reproductions in results/.

Each figure sits in a block between ``<!-- figures:NAME -->`` and ``<!-- /figures:NAME -->``,
and its text is what ``BLOCKS[NAME]`` makes from the result files. Running this file rewrites
every block; ``--check`` rewrites nothing and exits 1 naming each block whose text differs
from its files (``tests/docs/test_doc_figures.py`` runs it in CI). A figure typed by hand inside a
block therefore fails the suite until it agrees with the file it names.

    python docs/build/doc_figures.py           # regenerate the blocks
    python docs/build/doc_figures.py --check   # what CI runs
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path

from mixit.cli import run_tool
from mixit.cli.parser import OneLineParser

# docs/build/ is not a package: its figures/ modules are found beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures.axes import AXES, axis_results, axis_values
from figures.common import ROOT
from figures.estimates import estimate_calibration, paper_h100, tuning_calibration
from figures.layers import draw_layers, layers
from figures.limits import by_size, by_task, frozen_draws, what_explains
from figures.reproduce import (
    c2_budget,
    c9_by_construction,
    c11_measured,
    claim_verdicts,
    demo,
    no_reference_changes,
    reading_rules_changes,
    rejudged,
    rejudged_changes,
    reproductions,
    timed_transcript,
    tuning_rules_changes,
)
from figures.rows import necessity_maps, rows_compared
from figures.sources import source_sizes
from figures.speed import (
    bench,
    compile_repay,
    convert_bench,
    cpu_presets,
    decode,
    fixed_costs,
    members_cpu,
    members_folded,
    time_breakdown,
    wait_policy,
    wait_policy_beside,
    wait_together,
)
from figures.suites import (
    TUNED_SUITES,
    _tuned_suite,
    modadd_depth,
    peer_tasks,
    retrieval_init_tuned,
    rules_moved,
    suites_rejudged,
    suites_retrained,
)
from figures.tuning import (
    fresh_seeds,
    init_finding,
    tuned_against_untuned,
    tuned_beside_untuned_seeds,
    tuned_presets,
    tuning_cost,
)
from figures.width import width_reading, width_timing, width_tuning

BLOCKS: dict[str, Callable[[], str]] = {
    "demo": demo,
    "custom-example": functools.partial(timed_transcript, "custom-reverse"),
    "reproductions": reproductions,
    "claim-verdicts": claim_verdicts,
    "rejudged": rejudged,
    "rejudged-changes": rejudged_changes,
    "c11-measured": c11_measured,
    "c9-constructions": c9_by_construction,
    "c2-budget": c2_budget,
    "no-reference": no_reference_changes,
    "reading-rules": reading_rules_changes,
    "tuning-rules": tuning_rules_changes,
    "bench": bench,
    "decode": decode,
    "wait-policy": wait_policy,
    "wait-policy-beside": wait_policy_beside,
    "wait-together": wait_together,
    "fixed-costs": fixed_costs,
    "time-breakdown": time_breakdown,
    "compile-repay": compile_repay,
    "estimate-calibration": estimate_calibration,
    "tuning-calibration": tuning_calibration,
    "convert-bench": convert_bench,
    "cpu-presets": cpu_presets,
    "members-cpu": members_cpu,
    "members-folded": members_folded,
    "axis-results": axis_results,
    "tuning-cost": tuning_cost,
    "init-finding": init_finding,
    "tuned-presets": tuned_presets,
    "tuned-against-untuned": tuned_against_untuned,
    "fresh-seeds": fresh_seeds,
    "small-tuned": tuned_beside_untuned_seeds,
    "width-reading": width_reading,
    "width-tuning": width_tuning,
    "width-timing": width_timing,
    "source-sizes": source_sizes,
    "paper-h100": paper_h100,
    "rows-compared": rows_compared,
    "necessity-maps": necessity_maps,
    "mixit-by-size": by_size,
    "mixit-by-task": by_task,
    "mixit-explained": what_explains,
    "frozen-draws": frozen_draws,
    "layers": layers,
    "peer-tasks": peer_tasks,
    "modadd-depth": modadd_depth,
    "retrieval-init-tuned": retrieval_init_tuned,
    "suites-rejudged": suites_rejudged,
    "rules-moved": rules_moved,
    "suites-retrained": suites_retrained,
    **{name: functools.partial(_tuned_suite, folder) for name, folder in TUNED_SUITES.items()},
    **{name: functools.partial(axis_values, folder) for name, folder in AXES.items()},
}
DOCUMENTS = (
    ROOT / "README.md",
    ROOT / "docs" / "reproducing.md",
    ROOT / "docs" / "speed.md",
    ROOT / "docs" / "suites.md",
    ROOT / "docs" / "your-task.md",
    ROOT / "docs" / "reproduce.md",
    ROOT / "docs" / "tuning.md",
    ROOT / "docs" / "architecture.md",
    ROOT / "docs" / "presets.md",
    ROOT / "docs" / "constructions.md",
    ROOT / "docs" / "width.md",
    ROOT / "docs" / "huggingface.md",
    ROOT / "docs" / "cost.md",
    ROOT / "docs" / "rows.md",
    ROOT / "docs" / "mixit-limits.md",
    ROOT / "docs" / "reviewers.md",
    *sorted(folder / "README.md" for folder in AXES.values()),
)
# Every page a reader opens: held to the rule on times (``undated_times``).
PROSE = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
BLOCK = re.compile(r"(<!-- figures:([a-z0-9-]+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.DOTALL)


def render(text: str) -> str:
    """``text`` with every block's body made anew from the result files."""

    def body(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in BLOCKS:
            raise KeyError(f"unknown figures block '{name}'; known: {', '.join(BLOCKS)}")
        return f"{match.group(1)}{BLOCKS[name]()}\n{match.group(4)}"

    return BLOCK.sub(body, text)


# Blocks counted from the source tree rather than read from results/ (its sizes; the cost
# model's own estimate, 20 s to make): regenerated with the others, but not held to the tree in
# CI, where every edit of src/ would stale them (the rules they describe are held by
# tests/test_structure.py and tests/cost/). The layers block is held: it changes only
# when a package's floor does, and the picture beside it (``draw_layers``) is drawn with it.
SNAPSHOTS = ("source-sizes", "paper-h100")


def stale(documents: tuple[Path, ...] | None = None) -> list[str]:
    """``FILE: block NAME`` for each block whose text differs from what its files give, in
    ``documents`` (default: ``DOCUMENTS``), snapshots of the source tree aside."""
    found = []
    for document in documents or DOCUMENTS:
        text = document.read_text()
        fresh = {m.group(2): m.group(3) for m in BLOCK.finditer(render(text))}
        for match in BLOCK.finditer(text):
            if match.group(2) not in SNAPSHOTS and match.group(3) != fresh[match.group(2)]:
                found.append(f"{document}: block {match.group(2)}")
    return found


# A duration of a minute or more ("76 s", "10.7 minutes", "2 h 36 min"): what a reader plans
# by. Outside a generated block it may only be a dated record of a past measurement: a section
# whose heading, or one above it, names the day (docs/README.md, "Times").
DURATION = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(s|seconds?|min|minutes?|h|hours?)\b")
UNITS = {"s": 1, "m": 60, "h": 3600}
DATE = re.compile(r"20\d\d-\d\d-\d\d")
HEADING = re.compile(r"(#+) ")


def undated_times(document: Path) -> list[str]:
    """``FILE:LINE: text`` for each duration of a minute or more typed in ``document`` outside
    its generated blocks, its fenced code and its dated sections."""
    text = BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), document.read_text())
    found, dated, fenced = [], [False] * 7, False
    for number, line in enumerate(text.splitlines(), 1):
        fenced ^= line.startswith("```")
        heading = None if fenced else HEADING.match(line)
        if heading:
            level = min(len(heading.group(1)), 6)
            dated[level:] = [dated[level - 1] or bool(DATE.search(line))] * (7 - level)
        durations = (
            float(value.replace(",", "")) * UNITS[unit[0]] for value, unit in DURATION.findall(line)
        )
        if not fenced and not dated[6] and any(seconds >= 60 for seconds in durations):
            found.append(f"{document.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="doc_figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for line in found:
            print(f"stale figures: {line} (run python docs/build/doc_figures.py)", file=sys.stderr)
        typed = [line for document in PROSE for line in undated_times(document)]
        for line in typed:
            print(f"typed by hand: {line} (generate it, or date its section)", file=sys.stderr)
        return 1 if found or typed else 0
    for document in DOCUMENTS:
        document.write_text(render(document.read_text()))
    draw_layers()
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("doc_figures", main))
