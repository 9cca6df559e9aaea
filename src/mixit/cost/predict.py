"""What a run costs on a device it has not run on: FLOPs, time and accelerator memory from its
config alone (``--estimate --target DEVICE``).

Time is the run's training and evaluation FLOPs over the device's peak at the run's precision
times an efficiency (the share of peak its steps reach), plus a launch cost per step that
grows with the layers: measured on this project's CPU machine and on one H100, assumed for
the A100 (``TARGETS`` says which; docs/cost.md has the calibration and its held-out tests).
The weights are counted on the run's model as ``build_model`` builds it (on the meta device),
so any ``model.arch`` and readout is priced as it runs. Memory adds up what a training step
holds: the fp32 weights, the trainable weights' gradients and AdamW's two moments, MixiT's
fixed (H, T, T) mixing matrices or the RoPE tables, the activations kept for the backward
pass, and the loss's tensors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from mixit.common.errors import UsageError
from mixit.config.schema import RunConfig
from mixit.cost.counts import counted
from mixit.cost.memory import step_memory
from mixit.models.mixers import mixer_traits
from mixit.tasks import IGNORE_INDEX

GIB = 2**30
# Of a device's memory, the share a run's tensors may fill: the rest is the CUDA context, the
# math libraries' workspaces and the allocator's fragmentation (on the H100 one config that the
# counted tensors put at 98 % of the card ran out of memory: docs/cost.md).
USABLE_MEMORY = 0.9


@dataclass(frozen=True)
class Target:
    """A device to estimate for: its peak dense matmul throughput per precision (TFLOP/s, fp32
    as training runs it: TF32 tensor cores on a GPU), its memory, the share of that peak
    mixit's steps reach on it per precision, the launch cost of a step (``launch_ms``: a + b x
    layers milliseconds per micro-batch, the kernel launches and Python that make small steps
    slower than their FLOPs), and the factor autograd's saved tensors take over the
    activations ``memory_parts`` counts (``measured``: on this project's machines; else
    assumed)."""

    name: str
    peak_tflops: Mapping[str, float]
    memory_gib: float
    efficiency: Mapping[str, float]
    launch_ms: tuple[float, float]
    activation_factor: float
    measured: bool

    def describe(self) -> str:
        shares = ", ".join(f"{share:.0%} at {name}" for name, share in self.efficiency.items())
        return f"{self.name} ({shares} of peak, {'measured' if self.measured else 'assumed'})"

    def step_seconds(self, config: RunConfig, step_flops: float) -> float:
        """A training step's seconds: its FLOPs at the reached rate, plus the launch cost of
        each micro-batch."""
        precision = config.train.precision
        rate = self.peak_tflops[precision] * 1e12 * self.efficiency[precision]
        a, b = self.launch_ms
        return step_flops / rate + (a + b * config.model.n_layer) / 1e3 * config.train.micro_batches


# Peaks: the vendors' dense figures; fp32 is TF32, which mixit turns on for CUDA. Measured on one
# H100 and on this project's 2-core machine (`mixit bench --cost-check`, docs/cost.md): the
# shares that make a calibration set's steps-weighted total time exact with the launch cost
# that best fits each config (H100: the paper configs in fp32 and bf16; CPU: the tiny ones),
# confirmed on held-out configs; the activation factor that brings bf16's median measured /
# predicted memory on the H100 to about 1 (fp32's is 1.0), and the CPU's tiny configs' to 1.
H100 = Target(
    "h100",
    {"bf16": 989.0, "fp32": 494.7},
    80.0,
    {"bf16": 0.191, "fp32": 0.236},
    (3.70, 1.30),
    1.3,
    measured=True,
)
TARGETS = {
    "h100": H100,
    # Assumed: the H100's shares, launch cost and factor, at the A100's peaks.
    "a100": dataclasses.replace(
        H100, name="a100", peak_tflops={"bf16": 312.0, "fp32": 156.0}, measured=False
    ),
    # CPU bf16 autocast is no faster than fp32 here.
    "cpu": Target(
        "cpu",
        {"bf16": 0.180, "fp32": 0.180},
        24.0,
        {"bf16": 0.537, "fp32": 0.537},
        (7.40, 0.0),
        1.8,
        measured=True,
    ),
}


def get_target(name: str) -> Target:
    if name not in TARGETS:
        raise UsageError(f"--target '{name}' is not one of: {', '.join(TARGETS)}")
    return TARGETS[name]


def _mixing_flops(config: RunConfig, seq_len: int, training: bool) -> float:
    """FLOPs per token of the token mixing, layer by layer (a hybrid's layers differ): softmax
    attention's two (T x T) products, 4 T n forward and 8 more backward; a mixing matrix's one
    product, 2 T n forward and 2 backward, and 2 more for its own gradient when it trains."""
    m = config.model
    total = 0
    for kind, layers in config.variant_spec.mixers(m.n_layer).items():
        traits = mixer_traits(kind, m)
        if "k" in traits.cached:
            total += layers * (12 if training else 4)
        else:
            total += layers * ((6 if traits.matrices == "trained" else 4) if training else 2)
    return total * seq_len * m.n_embd


def _matrix_weights(config: RunConfig, scored_share: float) -> tuple[float, float]:
    """(all, trainable) matrix weights a token passes through: the head's at the scored share."""
    c = counted(config)
    head, head_trainable = c.head * scored_share, c.head_trainable * scored_share
    return c.matrices + head, c.matrices_trainable + head_trainable


def flops_per_token(config: RunConfig, seq_len: int, scored_share: float = 1.0) -> float:
    """Training FLOPs of one token for ``config``'s model (a multiply-add counts 2), where
    ``scored_share`` of the tokens are scored (the output head runs at those alone).

    Every matrix costs 2 FLOPs per weight forward and 2 backward for the gradient of its input;
    only a trainable matrix costs 2 more for its own gradient (so the standard model gets the
    usual 6 N). Softmax attention adds 4 T n per layer forward (scores and the weighted sum,
    counted unmasked) and twice that backward: 12 L T n. MixiT's fixed mixing is one
    weighted sum forward and the gradient for V backward: 4 L T n; a trained mixing matrix 2
    more for its own gradient. A hybrid counts each layer by its own mixer.
    """
    weights, trained = _matrix_weights(config, scored_share)
    return 4 * weights + 2 * trained + _mixing_flops(config, seq_len, training=True)


def forward_flops_per_token(config: RunConfig, seq_len: int, scored_share: float = 1.0) -> float:
    """An evaluation's FLOPs per token: the forward pass alone."""
    weights, _ = _matrix_weights(config, scored_share)
    return 2 * weights + _mixing_flops(config, seq_len, training=False)


def run_flops(config: RunConfig, shape: Shape) -> float:
    """A whole run's FLOPs: every training step, and every evaluation."""
    train = config.train
    evaluations = -(-train.steps // train.eval_every)
    per_token = flops_per_token(config, shape.seq_len, shape.scored_share)
    steps = train.steps * train.batch_size * shape.seq_len * per_token
    forward = forward_flops_per_token(config, shape.seq_len, shape.scored_share)
    return steps + evaluations * shape.eval_tokens * forward


def memory_parts(
    config: RunConfig, seq_len: int, scored_share: float, target: Target
) -> dict[str, int]:
    """Bytes a training step holds on ``target``, by part: the memory model
    (``memory.memory_parts``) at the model as built and the target's activation factor."""
    return step_memory(config, counted(config), seq_len, scored_share, target.activation_factor)


class Timing(TypedDict, total=False):
    """A run's cost: its seconds a step and whole (timed here, ``time_training``, or predicted
    for a target), and where predicted its FLOPs and memory: in all, by part, whether it fits
    the target and the fewest ``train.micro_batches`` with which it would (None: none)."""

    step_seconds: float
    run_seconds: float
    flops: float
    memory_bytes: int
    memory_parts: dict[str, int]
    fits: bool
    micro_batches_to_fit: int | None


def predict(config: RunConfig, shape: Shape, target: Target) -> Timing:
    """Seconds and memory of one run of ``config`` (filled in from its data: ``shape``) on
    ``target``."""
    precision = config.train.precision
    rate = target.peak_tflops[precision] * 1e12 * target.efficiency[precision]
    flops = run_flops(config, shape)
    per_token = flops_per_token(config, shape.seq_len, shape.scored_share)
    step_flops = config.train.batch_size * shape.seq_len * per_token
    step_seconds = target.step_seconds(config, step_flops)
    evaluation_flops = flops - config.train.steps * step_flops
    parts = memory_parts(config, shape.seq_len, shape.scored_share, target)
    memory = sum(parts.values())
    return {
        "flops": flops,
        "step_seconds": step_seconds,
        "run_seconds": config.train.steps * step_seconds + evaluation_flops / rate,
        "memory_bytes": memory,
        "memory_parts": parts,
        "fits": memory <= usable_bytes(target),
        "micro_batches_to_fit": micro_batches_to_fit(config, shape, target),
    }


def usable_bytes(target: Target) -> int:
    """The memory a run's counted tensors may fill on ``target`` (``USABLE_MEMORY``)."""
    return int(USABLE_MEMORY * target.memory_gib * GIB)


def micro_batches_to_fit(config: RunConfig, shape: Shape, target: Target) -> int | None:
    """The fewest ``train.micro_batches`` (a power of two, at least the config's) with which
    a step of ``config`` fits ``target``'s memory; None when even one row at a time does
    not (the weights and optimizer alone are too large)."""
    pieces = config.train.micro_batches
    while True:
        train = dataclasses.replace(config.train, micro_batches=pieces)
        split = dataclasses.replace(config, train=train)
        memory = sum(memory_parts(split, shape.seq_len, shape.scored_share, target).values())
        if memory <= usable_bytes(target):
            return pieces
        if pieces >= config.train.batch_size:
            return None
        pieces = min(2 * pieces, config.train.batch_size)


def fewest_pieces(needed: Iterable[int | None]) -> int | None:
    """The micro-batches that fit every run: the most any one needs (None: some run fits at
    none)."""
    needed = list(needed)
    return None if None in needed else max(needed, default=1)


@dataclass(frozen=True)
class Shape:
    """What a run's data add to its config for the cost: the sequence length, the share of
    tokens scored (the output head runs at those), the tokens one evaluation reads."""

    seq_len: int
    scored_share: float
    eval_tokens: int


@dataclass(frozen=True)
class DataShape:
    """What a prediction reads of a task config's data: the row length, the vocabulary, the
    share of positions scored, the rows of each split, and whether the test split is the
    training set."""

    seq_len: int
    vocab_size: int
    scored: float
    test_rows: int
    train_rows: int
    test_is_train: bool


# The data of a task config are built once per process to read their shape (the seed does
# not change it); estimating a plan again (another --jobs, another precision) reads it here.
_DATA_SHAPES: dict[str, DataShape] = {}


def data_shape(config: RunConfig) -> DataShape:
    """``DataShape`` of ``config``'s task data, built once per task config."""
    import json

    task = dataclasses.asdict(config.task)
    task_key = json.dumps([config.task_name, task], sort_keys=True, default=str)
    if task_key not in _DATA_SHAPES:
        data = config.task_spec.make_data(config.task, 0)
        _DATA_SHAPES[task_key] = DataShape(
            seq_len=data.train.inputs.shape[1],
            vocab_size=data.vocab_size,
            scored=float((data.train.targets != IGNORE_INDEX).float().mean()),
            test_rows=len(data.test.inputs),
            train_rows=len(data.train.inputs),
            test_is_train=data.test_is_train,
        )
    return _DATA_SHAPES[task_key]


def shapes(configs: Mapping[Any, RunConfig]) -> dict[Any, tuple[RunConfig, Shape]]:
    """Per key, the config filled in from its task's data (vocabulary, block size) and its
    ``Shape``. The data are built once per task config (``data_shape``)."""
    out = {}
    for key, config in configs.items():
        spec = config.task_spec
        declared = spec.declared_shape(config.task) if spec.declared_shape else None
        if declared is not None:
            seq_len, vocab_size, scored = declared
            eval_rows = config.train.eval_examples * (1 + spec.exact_match)
            out[key] = (
                _filled(config, vocab_size, seq_len),
                Shape(seq_len, scored, eval_rows * seq_len),
            )
            continue
        data = data_shape(config)
        filled = _filled(config, data.vocab_size, data.seq_len)
        limit = config.train.eval_examples
        rows = min(limit, data.test_rows)
        if spec.exact_match and not data.test_is_train:
            rows += min(limit, data.train_rows)
        out[key] = (filled, Shape(data.seq_len, data.scored, rows * data.seq_len))
    return out


def _filled(config: RunConfig, vocab_size: int, seq_len: int) -> RunConfig:
    """A copy of ``config`` with its vocabulary and block size filled in as
    ``fit_model_to_data`` fills them, without its checks against this machine."""
    return config.with_model(
        vocab_size=config.model.vocab_size or vocab_size,
        block_size=config.model.block_size or seq_len,
    )


def predicted_timings(configs: Mapping[str, RunConfig], target: str) -> dict[str, Timing]:
    """``predict``'s seconds and memory on ``target`` for each config, by its key (a run
    directory's name): nothing is timed."""
    device = get_target(target)
    return {key: predict(filled, shape, device) for key, (filled, shape) in shapes(configs).items()}
