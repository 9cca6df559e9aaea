"""The width question on a GPU (docs/width.md): ``reproduce width`` at the paper's widths, 512
and 1024, under the budget rule of ``mixit.paper.width`` (each question's tiny-scale run
with only ``model.n_embd`` changed), sized to the device minutes a session is lent.

It first predicts the training time on one H100 (``--estimate --target h100``) and refuses,
writing nothing, when that exceeds ``--budget-seconds``; then it trains and reports into OUT,
as ``reproduce`` would. Runs that share the one GPU (``--jobs``) are predicted as if trained one
after another: ``--estimate`` divides by the jobs, which holds for one GPU per job only. On an
H100 (2026-11-27) the 20 runs of one seed at 512 and 1024, predicted 715 s one after another
and 115 s divided over 8 jobs, took about 593 s of wall time at ``--jobs 8``
(results/width-h100/README.md).

    python studies/width_device.py --out results/width-h100           # on the device
    python studies/width_device.py --experiment width-depth --seeds 3 --out OUT  # C8 alone
    python studies/width_device.py --experiment width-depth --tune --widths 512 --out OUT  # tuned
    python studies/width_device.py --toy --out /tmp/width-toy         # widths 16, 32, two steps
                                                                     # a run, on the CPU (CI)
"""

from __future__ import annotations

import sys
from pathlib import Path

from mixit.cli import run_tool
from mixit.cli.options import count, counts, positive
from mixit.cli.parser import OneLineParser
from mixit.paper import estimate_reproduction, reproduce, width
from mixit.running.launchers import Launch
from mixit.study.experiment import Reproduction

TOY = {
    "widths": (16, 32),
    "overrides": {"train.steps": 2, "train.eval_every": 2, "train.eval_examples": 64},
}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="width_device", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument(
        "--experiment",
        choices=("width", "width-depth"),
        default="width",
        help="every question (default) or the depth question (C8) alone",
    )
    parser.add_argument("--widths", type=counts, default=[512, 1024], help="comma-separated widths")
    parser.add_argument("--seeds", type=count, default=1, help="seeds per run (default 1)")
    parser.add_argument("--jobs", type=count, default=4, help="runs trained at once (default 4)")
    parser.add_argument(
        "--budget-seconds",
        type=positive,
        default=480.0,
        help="refuse when the training predicted on one GPU exceeds this (default 480: 8 minutes)",
    )
    parser.add_argument(
        "--tune",
        action="store_true",
        help="tune each group first, as `reproduce --tune lr` (docs/tuning.md); default: untuned",
    )
    parser.add_argument("--toy", action="store_true", help="widths 16, 32, two steps a run")
    args = parser.parse_args(argv)
    widths = TOY["widths"] if args.toy else tuple(args.widths)
    width.WIDTHS["tiny"] = widths  # the rule's runs at these widths (the scale's budgets)
    how = Reproduction(
        "tiny",
        seeds=args.seeds,
        out=Path(args.out),
        overrides=TOY["overrides"] if args.toy else {},
        presets=False,  # no width has a tuned preset: every run at the task preset's rate
        tune=args.tune,
        launch=Launch(jobs=1 if args.toy else args.jobs),
    )
    if not args.toy:
        predicted = estimate_reproduction([args.experiment], how, "h100")["train_seconds"]
        print(f"predicted: {predicted:.0f} s of training on one H100 ({args.jobs} jobs share it)")
        if predicted > args.budget_seconds:
            print(f"over the budget of {args.budget_seconds:.0f} s: fewer widths or seeds")
            return 2
    reproduce([args.experiment], how)
    print(f"report: {Path(args.out) / args.experiment / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("width_device", main))
