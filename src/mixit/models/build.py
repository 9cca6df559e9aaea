"""What a run trains: ``model.arch``, mixit's own decoder or any causal language model.

- ``mixit`` (default): mixit's decoder (``mixit.models.decoder``).
- ``hf:NAME``: a Hugging Face architecture with an adapter in ``mixit.models.adapters.ADAPTERS``
  (gpt2, llama, qwen2, mistral), built from a config with no weights to load.
- ``module:PACKAGE.MODULE:FACTORY``: ``FACTORY(model_config)`` (a
``mixit.config.schema.ModelConfig``)
  returns a causal LM, a module whose ``forward(input_ids)`` gives logits (B, T, V) or an
  object with ``.logits``. Its parts come from the module's ``PARTS`` (a
  ``mixit.Parts``), else from the adapter of the model's ``config.model_type``.
  Its module is imported only when asked (``trust_module``): a run folder someone shares
  cannot make mixit run the code its ``config.json`` names.

The run's variant is built by ``mixit.spectrum`` (the same freezing and fixed mixing as the
Python API) and wrapped in ``ArchModel``, which speaks the decoder's interface to training and
scoring. Such a model keeps its own norms and residual stream, and its own initialisation
unless ``model.arch_init`` says otherwise: from mixit's model config it takes only the sizes
(``n_layer``, ``n_embd``, ``n_head``, ``mlp_ratio``, the task's vocabulary and length),
MixiT's ``mixing_scale`` and, where ``model.arch_init`` asks for it, mixit's ``small-output``
initialisation (with ``output_init_std``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from mixit.common.digest import source_files
from mixit.common.errors import UsageError
from mixit.common.trust import no_hard_exit, said, trust, trusted_function
from mixit.config.schema import ModelConfig, RunConfig
from mixit.models.adapters import ADAPTERS, Parts, spectrum
from mixit.models.decoder import Decoder, Trainable
from mixit.models.readout import AnswerReadout, BottleneckReadout

BUILT_IN = "mixit"
ARCH_FORMS = "mixit, hf:NAME (NAME one of: " + ", ".join(ADAPTERS) + ") or module:MODULE:FACTORY"


class ArchModel(Trainable):
    """A causal LM behind the decoder's interface: ``model(input_ids)`` with a LongTensor
    (B, T) returns logits (B, T, V); with a boolean mask ``scored`` (B, T), the logits at the
    S scored positions (S, V)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: torch.Tensor, scored: torch.Tensor | None = None) -> torch.Tensor:
        output = self.inner(input_ids)
        logits = getattr(output, "logits", output)  # (B, T, V)
        return logits if scored is None else logits[scored]

    def features(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The last layer's hidden states (B, T, n), after the final norm (Hugging Face)."""
        output = self.inner(input_ids, output_hidden_states=True)
        if getattr(output, "hidden_states", None) is None:
            raise UsageError("this task's readout needs the model's hidden states")
        return output.hidden_states[-1]  # (B, T, n)


# What a run trains: mixit's decoder, a model.arch behind the same interface, or either under
# a task's bottleneck or answer readout.
RunModel = Decoder | ArchModel | BottleneckReadout | AnswerReadout


def hf_settings(name: str, m: ModelConfig) -> dict[str, Any]:
    """The Hugging Face config of architecture ``name`` at mixit's sizes. Dropout is off, as in
    mixit's decoder, so that a run is a deterministic function of its seed."""
    if name == "gpt2":
        return {
            "n_layer": m.n_layer,
            "n_embd": m.n_embd,
            "n_head": m.n_head,
            "n_inner": m.mlp_ratio * m.n_embd,
            "n_positions": m.block_size,
            "vocab_size": m.vocab_size,
            "resid_pdrop": 0.0,
            "embd_pdrop": 0.0,
            "attn_pdrop": 0.0,
            "bos_token_id": None,  # GPT-2's 50256 lies outside a task's vocabulary
            "eos_token_id": None,
        }
    return {  # the Llama family (llama, qwen2, mistral) shares these names
        "num_hidden_layers": m.n_layer,
        "hidden_size": m.n_embd,
        "num_attention_heads": m.n_head,
        "num_key_value_heads": m.n_head,
        "intermediate_size": m.mlp_ratio * m.n_embd,
        "max_position_embeddings": m.block_size,
        "vocab_size": m.vocab_size,
        "tie_word_embeddings": False,
    }


def trust_module(arch: str) -> None:
    """Let this process and those it starts import ``arch``'s module (``module:MODULE:...``;
    any other arch is left alone): the user named it, on the command line or in the Python
    API. ``MIXIT_TRUST_MODULES=MODULE`` does the same for a run folder's stored config."""
    if arch.startswith("module:"):
        trust(arch.removeprefix("module:").partition(":")[0])


def arch_files(arch: str) -> tuple[Path, ...]:
    """The source file a ``module:`` arch's factory is read from (a run's name covers its
    contents); none for the built-in ones."""
    if not arch.startswith("module:"):
        return ()
    return source_files(arch.removeprefix("module:").partition(":")[0])


def _factory(spec: str) -> tuple[Callable[[ModelConfig], nn.Module], Parts | None]:
    """``module:PACKAGE.MODULE:FACTORY`` -> (the factory, the module's ``PARTS`` or None), for
    a trusted module (``trust_module``) whose FACTORY is a function or class defined there."""
    module_name, _, factory_name = spec.removeprefix("module:").partition(":")
    if not module_name or not factory_name:
        raise UsageError(f"model.arch='{spec}' is not of the form module:PACKAGE.MODULE:FACTORY")
    setting = f"model.arch='{spec}'"
    factory, module = trusted_function(setting, spec.removeprefix("module:"), "--arch")
    parts = getattr(module, "PARTS", None)
    if parts is not None and not isinstance(parts, Parts):
        raise UsageError(f"model.arch='{spec}': {module_name}.PARTS is not a mixit.Parts")
    return factory, parts


def check_arch(arch: str) -> None:
    """Refuse (UsageError, one line) an ``arch`` that names nothing buildable."""
    if arch == BUILT_IN:
        return
    if arch.startswith("hf:"):
        if arch.removeprefix("hf:") not in ADAPTERS:
            raise UsageError(f"model.arch='{arch}' is not one of: {ARCH_FORMS}")
        try:
            import transformers  # noqa: F401
        except ImportError:
            raise UsageError(
                f"model.arch='{arch}' needs transformers: pip install -e '.[hf]'"
            ) from None
        return
    if arch.startswith("module:"):
        _factory(arch)
        return
    raise UsageError(f"model.arch='{arch}' is not one of: {ARCH_FORMS}")


def build_arch_model(config: ModelConfig, variant: str, seed: int) -> ArchModel:
    """The ``variant`` of ``config.arch`` (not ``mixit``; checked by ``check_arch`` when the
    run's config was validated), built from ``seed``."""
    if config.arch.startswith("hf:"):
        name = config.arch.removeprefix("hf:")
        source: Any = name
        parts, settings = None, hf_settings(name, config)
    else:
        factory, parts = _factory(config.arch)
        source, settings = (lambda: _built(factory, config)), None
    models = spectrum(
        source,
        parts,
        (variant,),
        seed=seed,
        mixing_scale=config.mixing_scale,
        settings=settings,
        init=config.arch_init,
        output_std=config.output_init_std,
    )
    return ArchModel(models[variant])


def _built(factory: Callable[[ModelConfig], nn.Module], config: ModelConfig) -> nn.Module:
    """``factory(config)``, where whatever it raises or returns other than a module is one
    line naming the arch."""
    try:
        with no_hard_exit():
            model = factory(config)
    except (Exception, SystemExit) as error:  # the user's code: any failure is their input's
        raise UsageError(f"model.arch='{config.arch}' failed: {said(error)}") from None
    if not isinstance(model, nn.Module):
        raise UsageError(
            f"model.arch='{config.arch}' returned a {type(model).__name__}, not a torch "
            "nn.Module (a causal LM)"
        )
    return model


class TaskReadout(Protocol):
    """What a model's top takes from its task (``mixit.tasks.TaskSpec`` has both): whether it
    reads out through a bottleneck, and which answer tokens it scores among. A protocol, so that
    models know no task."""

    bottleneck_readout: bool
    answer_ids: Callable[[Any, int], tuple[int, ...] | None] | None


def build_model(config: RunConfig) -> RunModel:
    """The run's model from its seed: mixit's decoder or the ``model.arch`` it names, under
    the bottleneck readout where its task (``config.task_spec``, a ``TaskReadout``) asks for
    one, or scored among its answer tokens where it names them; what its variant freezes drawn
    from ``model.frozen_seed`` where set."""
    task: TaskReadout = config.task_spec
    model = _drawn(config, task, config.seed)
    if config.model.frozen_seed is not None:
        with torch.random.fork_rng(devices=[]):  # the run's own draws go on from its seed
            redraw_frozen(model, _drawn(config, task, config.model.frozen_seed))
    return model


def _drawn(config: RunConfig, task: TaskReadout, seed: int) -> RunModel:
    """The run's model with every weight drawn from ``seed``."""
    torch.manual_seed(seed)
    m = config.model
    if m.arch == BUILT_IN:
        body: Decoder | ArchModel = Decoder(m, config.variant_spec)
    else:
        body = build_arch_model(m, config.variant, seed)
    if task.bottleneck_readout:
        wide = config.task.wide_readout  # the only bottleneck task, compression, says which
        return BottleneckReadout(body, m.n_embd, m.block_size, m.vocab_size, wide)
    answers = task.answer_ids(config.task, m.vocab_size) if task.answer_ids else None
    return body if answers is None else AnswerReadout(body, answers, m.vocab_size)


@torch.no_grad()
def redraw_frozen(model: nn.Module, donor: nn.Module) -> None:
    """Give ``model`` the frozen draw of ``donor``, a model of the same build from another
    seed: every parameter that does not train, and every buffer (fixed mixing matrices; the
    deterministic ones, such as RoPE's tables, are equal in both)."""
    given = dict(donor.named_parameters())
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            parameter.copy_(given[name])
    buffers = dict(donor.named_buffers())
    for name, buffer in model.named_buffers():
        buffer.copy_(buffers[name])
