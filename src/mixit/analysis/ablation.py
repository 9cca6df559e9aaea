"""Mean ablation: which heads and MLPs a trained run's metric rests on (a causal check behind a
verdict, beside the head scores that describe the circuit).

One component at a time is replaced by its mean over the evaluated rows, at each position, and
the run's headline metric is scored again on its own test split:

- head h of layer l: its slice of the mixer's output before W_O (the values it gathered),
  ``blocks.l.attn.w_o``'s input columns h * hs .. (h + 1) * hs;
- the MLP of layer l: its whole output (``blocks.l.hook_mlp_out``).

The drop is the unablated metric minus the ablated one, in the metric's direction (positive:
the component helped). On retrieval a standard model whose L1.H0 is an induction head falls
from 0.99 towards chance when that head is ablated, and barely moves when a head scoring 0
on both circuits is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from mixit.config.schema import RunConfig
from mixit.models.build import RunModel
from mixit.models.decoder import Decoder
from mixit.models.heads import PAD, decoder_of, head_scores
from mixit.tasks.base import Split, TaskData
from mixit.training.scoring import evaluate_run


@dataclass(frozen=True)
class Ablated:
    """One component mean-ablated: its name (``L1.H0``, ``L0.MLP``), the metric then, the
    drop from the unablated metric (positive: it helped), and for a head its previous-token
    and induction scores on the same rows."""

    component: str
    metric: float
    drop: float
    previous_token: float | None = None
    induction: float | None = None


@dataclass(frozen=True)
class Ablation:
    """A run's metric (``metric``, its name) unablated, and each component ablated, largest
    drop first."""

    metric: str
    unablated: float
    components: list[Ablated]


def _head_slice(decoder: Decoder, head: int) -> slice:
    """Head ``head``'s columns of W_O's input: its gathered values, side by side with the others."""
    size = decoder.config.n_embd // decoder.config.n_head
    return slice(head * size, (head + 1) * size)


class _Means:
    """Per-position means over the rows seen, of each head's gathered values and each MLP's
    output, read with forward hooks while the model scores its rows."""

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.rows: dict[str, int] = {}

    def add(self, name: str, value: torch.Tensor) -> None:
        """``value`` (B, T, n): its sum over rows joins the others of ``name``."""
        total = value.detach().sum(0)  # (T, n)
        self.sums[name] = self.sums.get(name, 0) + total
        self.rows[name] = self.rows.get(name, 0) + value.shape[0]

    def mean(self, name: str) -> torch.Tensor:
        return self.sums[name] / self.rows[name]  # (T, n)


@contextmanager
def _hooked(model: nn.Module, hooks: list[tuple[nn.Module, str, Callable]]) -> Iterator[None]:
    """``model`` with each (module, "pre" or "post", hook) registered while the block runs."""
    handles = [
        module.register_forward_pre_hook(hook)
        if kind == "pre"
        else module.register_forward_hook(hook)
        for module, kind, hook in hooks
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def ablate(model: RunModel, config: RunConfig, sequences: int) -> Ablation:
    """Mean-ablate each head and each MLP of ``model`` (a finished run's, ``config`` its
    config) on the first ``sequences`` rows of its test split, one at a time."""
    spec = config.task_spec
    data = spec.make_data(config.task, config.seed)
    rows = Split(data.test.inputs[:sequences], data.test.targets[:sequences])  # (S, T) each
    # Only these rows are scored: marked as the training set too, the summary's train accuracy
    # is read from the same pass instead of a second one.
    data = dataclasses.replace(data, train=rows, test=rows, test_is_train=True)
    decoder = decoder_of(model)
    better = 1.0 if spec.higher_is_better else -1.0
    means = _Means()
    record = []
    for layer, block in enumerate(decoder.blocks):
        record.append((block.attn.w_o, "pre", _recorder(means, f"L{layer}.attn")))
        record.append((block.hook_mlp_out, "post", _recorder(means, f"L{layer}.MLP")))
    with _hooked(model, record), torch.no_grad():
        unablated = evaluate_run(model, data, config)[spec.metric]
    inputs = data.test.inputs  # (S, T)
    scores = head_scores(decoder, inputs, mask=inputs != PAD)
    components = []
    for layer, block in enumerate(decoder.blocks):
        for head in range(decoder.config.n_head):
            columns = _head_slice(decoder, head)
            hook = _mean_head(means.mean(f"L{layer}.attn"), columns)
            metric = _scored(model, data, config, spec.metric, [(block.attn.w_o, "pre", hook)])
            components.append(
                Ablated(
                    f"L{layer}.H{head}",
                    metric,
                    better * (unablated - metric),
                    scores["previous_token"][layer][head],
                    scores["induction"][layer][head],
                )
            )
        hook = _mean_output(means.mean(f"L{layer}.MLP"))
        metric = _scored(model, data, config, spec.metric, [(block.hook_mlp_out, "post", hook)])
        components.append(Ablated(f"L{layer}.MLP", metric, better * (unablated - metric)))
    ranked = sorted(components, key=lambda c: -c.drop)
    return Ablation(spec.metric, unablated, ranked)


def _scored(
    model: RunModel,
    data: TaskData,
    config: RunConfig,
    metric: str,
    hooks: list[tuple[nn.Module, str, Callable]],
) -> float:
    """``metric`` of ``model`` on ``data`` with ``hooks`` in place."""
    with _hooked(model, hooks), torch.no_grad():
        return evaluate_run(model, data, config)[metric]


def _recorder(means: _Means, name: str) -> Callable:
    def pre(_module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        means.add(name, inputs[0])  # (B, T, n): the heads' gathered values, side by side

    def post(_module: nn.Module, _inputs: tuple, output: torch.Tensor) -> None:
        means.add(name, output)  # (B, T, n)

    return post if name.endswith("MLP") else pre


def _mean_head(mean: torch.Tensor, columns: slice) -> Callable:
    """A pre-hook giving W_O its input with one head's columns at their mean (T, n)."""

    def hook(_module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        y = inputs[0].clone()  # (B, T, n)
        T = y.shape[1]
        y[..., columns] = mean[:T, columns]
        return (y, *inputs[1:])

    return hook


def _mean_output(mean: torch.Tensor) -> Callable:
    """A hook replacing a module's output (B, T, n) by its mean (T, n) at each position."""

    def hook(_module: nn.Module, _inputs: tuple, output: torch.Tensor) -> torch.Tensor:
        return mean[: output.shape[1]].expand_as(output).clone()

    return hook


def format_ablation(found: Ablation, top: int | None = None) -> str:
    """The ablation as a table, largest drop first (the first ``top`` rows)."""
    lines = [
        f"{found.metric} unablated: {found.unablated:.4f}",
        "component  ablated    drop   previous-token  induction",
    ]
    for c in found.components[:top]:
        scores = (
            f"{c.previous_token:>14.3f} {c.induction:>10.3f}"
            if c.previous_token is not None
            else ""
        )
        lines.append(f"{c.component:<10} {c.metric:>7.4f} {c.drop:>+7.4f} {scores}")
    return "\n".join(lines)
