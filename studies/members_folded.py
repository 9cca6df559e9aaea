"""Whether members folded into plain batched matmuls would pay on the CPU (issue #102 item 4;
the rule is docs/cost.md's "Members folded into batched matmuls, on the CPU"). At a tiny
preset's standard model, model-steps per second of mixit's own training step (one run with
every thread: ``alone``; two runs at once, one thread each: ``jobs2``) against a folded
decoder of K members at the same shape (``folded``, ``folded+jobs2``). The folded decoder is
a timing probe, not a model mixit trains: the standard model's layers (RMSNorm, rotary
attention through SDPA, gated SiLU MLP, untied head) with every weight stacked along a leading
member dimension and one AdamW over the stacks; its loss reads every position, which costs it
more than a run alone pays. Run it with nothing else training.

    python studies/members_folded.py --task memorization --members 8 \\
        --out results/members-cpu/folded.json
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F

from mixit.cli import run_tool
from mixit.cli.parser import OneLineParser
from mixit.common.cores import usable_cores
from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.tasks import TASKS, get_task
from mixit.training.resolve import resolve_config
from mixit.training.setup import setup


class Shape(NamedTuple):
    """The standard model's shape at the preset, as its run resolves it from the data."""

    n_embd: int
    n_layer: int
    n_head: int
    mlp: int
    vocab: int
    seq_len: int
    batch: int


def own_training(task: str):
    """mixit's own training of the preset's standard model, and its shape."""
    config = resolve_config(task, "standard", "tiny", 0, {"train.device": "cpu"})
    training = setup(config, get_task(task).make_data(config.task, config.seed))
    model, inputs = training.config.model, training.data.train.inputs
    mlp, batch = model.mlp_ratio * model.n_embd, training.config.train.batch_size
    sizes = (model.n_embd, model.n_layer, model.n_head, mlp, model.vocab_size)
    return training, Shape(*sizes, inputs.shape[1], batch)


def stacked(k: int, *dims: int) -> torch.nn.Parameter:
    """A weight for ``k`` members, (k, *dims), scaled like a fan-in init."""
    return torch.nn.Parameter(torch.randn(k, *dims) / dims[0] ** 0.5)


def folded_weights(k: int, s: Shape) -> dict[str, torch.nn.Parameter]:
    """Every weight of the standard decoder for ``k`` members, stacked on dim 0."""
    weights = {"emb": stacked(k, s.vocab, s.n_embd), "head": stacked(k, s.n_embd, s.vocab)}
    weights["norm"] = torch.nn.Parameter(torch.ones(k, 1, s.n_embd))
    for layer in range(s.n_layer):
        weights |= {
            f"{layer}.qkv": stacked(k, s.n_embd, 3 * s.n_embd),
            f"{layer}.o": stacked(k, s.n_embd, s.n_embd),
            f"{layer}.gu": stacked(k, s.n_embd, 2 * s.mlp),
            f"{layer}.d": stacked(k, s.mlp, s.n_embd),
            f"{layer}.n1": torch.nn.Parameter(torch.ones(k, 1, s.n_embd)),
            f"{layer}.n2": torch.nn.Parameter(torch.ones(k, 1, s.n_embd)),
        }
    return weights


def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs of ``x``'s last dimension by the positions' angles."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def folded_loss(w: dict, tokens: torch.Tensor, targets: torch.Tensor, s: Shape) -> torch.Tensor:
    """The K members' summed mean losses on their own batches: tokens (K, B, T)."""
    k, b, t = tokens.shape
    hs = s.n_embd // s.n_head
    angles = torch.arange(t)[:, None] / 10000 ** (torch.arange(hs // 2) / (hs // 2))
    cos, sin = angles.cos(), angles.sin()
    members = torch.arange(k)[:, None, None]
    h = w["emb"][members, tokens].reshape(k, b * t, s.n_embd)  # (K, B*T, n)
    for layer in range(s.n_layer):
        x = F.rms_norm(h, (s.n_embd,)) * w[f"{layer}.n1"]
        qkv = torch.bmm(x, w[f"{layer}.qkv"]).reshape(k * b, t, 3, s.n_head, hs)
        q, key, v = qkv.permute(2, 0, 3, 1, 4)  # each (K*B, H, T, hs)
        y = F.scaled_dot_product_attention(
            rotary(q, cos, sin), rotary(key, cos, sin), v, is_causal=True
        )
        y = y.transpose(1, 2).reshape(k, b * t, s.n_embd)  # (K, B*T, n)
        h = h + torch.bmm(y, w[f"{layer}.o"])
        x = F.rms_norm(h, (s.n_embd,)) * w[f"{layer}.n2"]
        gate, up = torch.bmm(x, w[f"{layer}.gu"]).chunk(2, dim=-1)
        h = h + torch.bmm(F.silu(gate) * up, w[f"{layer}.d"])
    logits = torch.bmm(F.rms_norm(h, (s.n_embd,)) * w["norm"], w["head"])  # (K, B*T, V)
    return F.cross_entropy(logits.reshape(-1, s.vocab), targets.reshape(-1)) * k


def folded_stepper(k: int, s: Shape) -> Callable[[], None]:
    """One training step of ``k`` folded members on fresh random tokens, as a callable."""
    torch.manual_seed(0)
    weights = folded_weights(k, s)
    optimizer = torch.optim.AdamW(weights.values(), lr=1e-3, foreach=True)

    def step() -> None:
        tokens = torch.randint(1, s.vocab, (k, s.batch, s.seq_len))
        loss = folded_loss(weights, tokens, tokens.roll(-1, dims=-1), s)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(weights.values(), 1.0)
        optimizer.step()

    return step


def own_stepper(task: str) -> Callable[[], None]:
    """One step of mixit's own training of the preset's standard model, as a callable."""
    training, _ = own_training(task)
    return training.step


class Mode(NamedTuple):
    """One way to train: mixit's own step or ``members`` folded, on ``processes`` at once."""

    name: str
    members: int
    processes: int


def _timed(mode: Mode, task: str, shape: Shape, steps: int, threads: int, start, out) -> None:
    torch.set_num_threads(threads)
    step = own_stepper(task) if mode.members == 0 else folded_stepper(mode.members, shape)
    for _ in range(5):  # warm-up, before the processes start timing together
        step()
    start.wait()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    out.put((time.perf_counter() - started) / steps)


def model_steps_per_second(mode: Mode, task: str, shape: Shape, steps: int) -> float:
    """Model-steps per second of ``mode``'s processes, started together (each a fresh process
    with its share of the cores' threads)."""
    context = multiprocessing.get_context("spawn")
    start, out = context.Barrier(mode.processes), context.Queue()
    threads = max(1, usable_cores() // mode.processes)
    workers = [
        context.Process(target=_timed, args=(mode, task, shape, steps, threads, start, out))
        for _ in range(mode.processes)
    ]
    for worker in workers:
        worker.start()
    seconds = [out.get() for _ in workers]
    for worker in workers:
        worker.join()
    return sum(max(mode.members, 1) / s for s in seconds)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="members_folded", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="memorization", help="a task with a tiny preset")
    parser.add_argument("--members", type=int, default=8, help="members folded (default 8)")
    parser.add_argument("--steps", type=int, default=60, help="timed steps per process")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    if args.task not in TASKS:
        raise UsageError(f"--task {args.task}: not a task; name one of {', '.join(TASKS)}")
    if args.members < 2 or args.steps < 1:
        raise UsageError("--members: give 2 or more; --steps: give 1 or more")
    _, shape = own_training(args.task)
    modes = [Mode("alone", 0, 1), Mode("jobs2", 0, 2), Mode("folded", args.members, 1)]
    modes.append(Mode("folded+jobs2", args.members, 2))
    # One member of the folded decoder: how much of the gain is the folding, and how much the
    # probe's leaner step (added after the first measurement, which the rule read, showed a gain).
    modes += [Mode("folded1", 1, 1), Mode("folded1+jobs2", 1, 2)]
    rates = {}
    for mode in modes:
        rates[mode.name] = model_steps_per_second(mode, args.task, shape, args.steps)
        print(f"{mode.name}: {rates[mode.name]:.1f} model-steps/s", file=sys.stderr)
    best_own = max(rates["alone"], rates["jobs2"])
    best_folded = max(rates["folded"], rates["folded+jobs2"])
    write_json(
        Path(args.out),
        {
            "task": args.task,
            "shape": shape._asdict(),
            "members": args.members,
            "steps": args.steps,
            "cores": usable_cores(),
            "model_steps_per_second": rates,
            "gain": best_folded / best_own,
            "folding_gain": best_folded / max(rates["folded1"], rates["folded1+jobs2"]),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("members_folded", main))
