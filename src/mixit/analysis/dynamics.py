"""``mixit analyze dynamics RUN``: when a run's circuits formed, from the head scores it tracked
at every evaluation (``train.track_heads``), beside its task metric.

Each head's previous-token and induction score is drawn against the step; the step at which
a score first reaches ``HEAD_THRESHOLD`` (claim C10's) marks when that head became such a
head, and the first evaluation at which the metric reaches halfway from its first value to its
best marks when the task was learned (a midpoint: a run that first rises to chance, then learns
the task, is not read at its first rise). A head that crosses by then is a candidate for what
the learning rests on (``mixit analyze ablate`` checks it causally).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mixit.common.errors import UsageError
from mixit.common.plots import legend_below, metric_label, save, series_style, styled
from mixit.config.schema import RunConfig
from mixit.models.heads import HEAD_THRESHOLD, TRACKED
from mixit.training.rundir import read_records


@dataclass(frozen=True)
class Series:
    """One head's score of one kind over the evaluations, and the first step it reached the
    threshold (None: never)."""

    head: str  # L1.H0
    kind: str  # previous_token or induction
    values: list[float]
    crossed_at: int | None


@dataclass(frozen=True)
class Dynamics:
    """A tracked run over its evaluations: the steps, the headline metric (its name and values),
    the first step at which it reached halfway from its first value to its best (``learned_at``),
    and every head's series."""

    metric: str
    steps: list[int]
    values: list[float]
    learned_at: int | None
    series: list[Series]


def read_dynamics(run_dir: str | Path, config: RunConfig) -> Dynamics:
    """The tracked head scores and the metric of the finished run in ``run_dir`` (``config``:
    its config, as ``load_run`` gives it)."""
    records = read_records(Path(run_dir) / "metrics.jsonl")
    spec = config.task_spec
    tracked = [r for r in records if spec.metric in r and any(k.startswith("heads.") for k in r)]
    if not tracked:
        raise UsageError(
            f"{run_dir} tracked no head scores: train it with train.track_heads=true (in "
            "another folder: the setting does not rename a run)"
        )
    steps = [r["step"] for r in tracked]
    values = [r[spec.metric] for r in tracked]
    learned_at = halfway(steps, values, spec.higher_is_better)
    heads = sorted({k.split(".", 2)[2] for k in tracked[0] if k.startswith("heads.")})
    series = []
    for kind in TRACKED:
        for head in heads:
            scores = [r[f"heads.{kind}.{head}"] for r in tracked]
            crossed = next(
                (s for s, v in zip(steps, scores, strict=True) if v >= HEAD_THRESHOLD), None
            )
            series.append(Series(head, kind, scores, crossed))
    return Dynamics(spec.metric, steps, values, learned_at, series)


def halfway(steps: list[int], values: list[float], higher_is_better: bool) -> int | None:
    """The first step at which ``values`` reach halfway from the first to the best (None when
    they never move past the first)."""
    sign = 1.0 if higher_is_better else -1.0
    best = max(sign * v for v in values)
    middle = (sign * values[0] + best) / 2
    if best <= sign * values[0]:
        return None
    return next(step for step, v in zip(steps, values, strict=True) if sign * v >= middle)


def format_dynamics(found: Dynamics) -> str:
    """Each head's crossing steps, and when the metric was halfway learned."""
    learned = "never" if found.learned_at is None else f"step {found.learned_at:,}"
    lines = [
        f"{metric_label(found.metric)}: halfway from its first value to its best at {learned}",
        "head   kind            crossed",
    ]
    for s in found.series:
        crossed = "never" if s.crossed_at is None else f"step {s.crossed_at:,}"
        lines.append(f"{s.head:<6} {s.kind:<15} {crossed}")
    lines.append(f"(crossed: the first evaluation with a score >= {HEAD_THRESHOLD:g})")
    return "\n".join(lines)


def plot_dynamics(found: Dynamics, path: Path, title: str) -> None:
    """A panel per kind of score: each head's score against the step, the threshold (dotted),
    the metric's halfway point (dashed), and the metric itself on the right axis (grey)."""
    with styled() as plt:
        fig, axes = plt.subplots(1, len(TRACKED), figsize=(7.0, 3.0), sharey=True)
        for ax, kind in zip(axes, TRACKED, strict=True):
            drawn = [s for s in found.series if s.kind == kind]
            for index, s in enumerate(drawn):
                ax.plot(
                    found.steps, s.values, label=s.head, markersize=3, **series_style(s.head, index)
                )
            ax.axhline(HEAD_THRESHOLD, color="#999999", linewidth=0.8, linestyle=":")
            if found.learned_at is not None:
                ax.axvline(found.learned_at, color="#000000", linewidth=0.8, linestyle="--")
            ax.set_title(f"{kind.replace('_', '-')} score", fontsize=8)
            ax.set_xlabel("step")
            ax.set_ylim(-0.02, 1.02)
            metric = ax.twinx()
            # The metric in a wide grey line of its own, apart from the heads' colours.
            metric.plot(found.steps, found.values, color="#999999", linewidth=2.4, alpha=0.5)
            metric.set_ylabel(f"{metric_label(found.metric)} (grey)", fontsize=7)
            legend_below(ax, len(drawn))
        axes[0].set_ylabel("head score")
        fig.suptitle(title)
        save(fig, path)
