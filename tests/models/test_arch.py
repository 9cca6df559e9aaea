"""``model.arch``: training, freezing, saving and refusing a model other than mixit's decoder."""

import json
import textwrap

import pytest
import torch

pytest.importorskip("transformers")

from mixit.cli import main
from mixit.common.errors import UsageError
from mixit.common.trust import TRUST_ENV, trust
from mixit.models.build import trust_module
from mixit.training.resolve import resolve_config
from mixit.training.rundir import load_run, new_model, stored_config
from mixit.training.train import train

SHORT = {
    "model.n_layer": "1",
    "model.n_embd": "16",
    "model.n_head": "2",
    "train.steps": "4",
    "train.eval_every": "4",
}


def gpt2_run(tmp_path, variant, **extra):
    overrides = {**SHORT, "model.arch": "hf:gpt2", **extra}
    out = tmp_path / variant
    return train("retrieval", variant, "tiny", seed=3, out=out, overrides=overrides), out


@pytest.mark.parametrize(
    "variant, frozen_per_block",
    [("standard", 0), ("frozen-qk", 2 * (16 * 16 + 16)), ("frozen-mlp", 2 * (16 * 64) + 64 + 16)],
)
def test_a_gpt2_run_freezes_what_its_variant_names(tmp_path, variant, frozen_per_block):
    summary, out = gpt2_run(tmp_path, variant)
    assert summary["params_total"] - summary["params_trainable"] == frozen_per_block
    assert json.loads((out / "config.json").read_text())["model"]["arch"] == "hf:gpt2"
    assert (out / "model.safetensors").is_file()  # its tied head and embedding both stored


def test_a_gpt2_mixit_run_mixes_with_fixed_matrices(tmp_path):
    """Training moves its weights but not its mixing matrices, which are buffers, and it has
    no query-key projection at all."""
    from safetensors.torch import load_file

    summary, out = gpt2_run(tmp_path, "mixit")
    config = stored_config(json.loads((out / "config.json").read_text()))
    initial = new_model(config)  # the same config and seed: the matrices it started from
    before = initial.state_dict()
    trained = load_file(out / "model.safetensors")
    mixing = [name for name in before if name.endswith("mixing")]
    assert summary["steps_run"] == 4 and mixing
    assert all(torch.equal(trained[name], before[name]) for name in mixing)
    weights = [name for name, _ in initial.named_parameters() if name in trained]
    assert any(not torch.equal(trained[name], before[name]) for name in weights)
    assert not any("c_attn" in name for name in before)


def _arch(arch):
    return {**SHORT, "model.arch": arch, "model.vocab_size": "20", "model.block_size": "16"}


def test_the_same_seed_builds_the_same_gpt2():
    config = resolve_config("retrieval", "frozen-qk", "tiny", 3, _arch("hf:gpt2"))
    first, second = new_model(config), new_model(config)
    for (name, a), b in zip(first.state_dict().items(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_a_model_from_the_users_module(tmp_path, monkeypatch):
    (tmp_path / "my_models.py").write_text(
        textwrap.dedent(
            """
            from transformers import LlamaConfig, LlamaForCausalLM

            def tiny_llama(config):
                return LlamaForCausalLM(LlamaConfig(
                    num_hidden_layers=config.n_layer, hidden_size=config.n_embd,
                    num_attention_heads=config.n_head, intermediate_size=2 * config.n_embd,
                    vocab_size=config.vocab_size,
                    max_position_embeddings=config.block_size))
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(TRUST_ENV, "")
    arch = "module:my_models:tiny_llama"
    with pytest.raises(UsageError, match="names code to run"):
        resolve_config("retrieval", "frozen-mlp", "tiny", 0, _arch(arch))  # not asked for
    trust_module(arch)
    model = new_model(resolve_config("retrieval", "frozen-mlp", "tiny", 0, _arch(arch)))
    frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
    assert frozen == {f"inner.model.layers.0.mlp.{m}_proj.weight" for m in ("gate", "up", "down")}


@pytest.mark.parametrize(
    "arch, fragment",
    [
        ("hf:bert", "is not one of"),
        ("gpt2", "is not one of"),
        ("module:no_such_module_here:f", "cannot import"),
        ("module:json:no_such_function", "has no function"),
        ("module:json", "is not of the form"),
    ],
)
def test_an_unknown_arch_is_refused_in_one_line(arch, fragment, tmp_path, capsys):
    argv = ["train", "--task", "retrieval", "--model", "standard", "--arch", arch]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err.strip()
    assert fragment in error and "\n" not in error
    assert not (tmp_path / "run").exists()


def test_reading_a_gpt2_run_as_mixits_decoder_is_refused(tmp_path):
    _, out = gpt2_run(tmp_path, "standard")
    with pytest.raises(UsageError, match=r"model\.arch=hf:gpt2"):
        load_run(out)


@pytest.mark.parametrize(
    "arch, outputs",
    [
        ("hf:llama", ("self_attn.o_proj", "mlp.down_proj")),
        ("hf:gpt2", ("attn.c_proj", "mlp.c_proj")),
    ],
)
def test_the_small_output_init_shrinks_each_branch_output_and_scales_the_rest_by_fan_in(
    arch, outputs
):
    wide = {**SHORT, "model.n_embd": "64", "model.arch": arch, "model.arch_init": "small-output"}
    config = resolve_config("retrieval", "standard", "tiny", 3, wide)
    config = config.with_model(vocab_size=32, block_size=16)
    blocks = new_model(config).inner.get_submodule(
        "model.layers" if arch == "hf:llama" else "transformer.h"
    )
    for name, parameter in blocks.named_parameters():
        if parameter.dim() < 2:
            continue
        if name.removeprefix("0.").removesuffix(".weight") in outputs:
            assert parameter.std().item() == pytest.approx(0.02, rel=0.15), name
        else:  # every other matrix reads the 64-wide residual stream
            assert parameter.std().item() == pytest.approx(64**-0.5, rel=0.15), name


def test_arch_init_is_refused_for_mixits_decoder():
    with pytest.raises(UsageError, match=r"model\.arch_init"):
        resolve_config("retrieval", "standard", "tiny", 0, {"model.arch_init": "small-output"})


PLANTED = """
import pathlib

def build(config):
    pathlib.Path("planted-ran").write_text("yes")
    raise SystemExit(0)
"""


def test_a_run_folder_cannot_make_mixit_run_the_code_it_names(tmp_path, monkeypatch, capsys):
    # A shared folder carries its own module beside a run whose config names it; run from
    # that folder (python -m puts it on the import path), every command that reads the stored
    # config refuses, and the planted code never runs.
    monkeypatch.setenv(TRUST_ENV, "")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "evilmod.py").write_text(PLANTED)
    run = tmp_path / "run"
    argv = ["train", "--task", "retrieval", "--model", "standard", "--out", str(run)]
    assert main([*argv, "train.steps=2", "train.eval_every=2", "task.n_train=64"]) == 0
    config = json.loads((run / "config.json").read_text())
    config["model"]["arch"] = "module:evilmod:build"
    (run / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    for command in (["generate", str(run), "--prompt-ids", "1,2"],
                    ["analyze", "covariance", str(run)]):  # fmt: skip
        assert main(command) == 2, command
        error = capsys.readouterr().err.strip()
        assert f"{TRUST_ENV}=evilmod" in error and "\n" not in error
    assert not (tmp_path / "planted-ran").exists()


@pytest.mark.parametrize(
    "factory, fragment",
    [
        ("module:os:system", "not a function or class defined in os"),
        ("module:json:loads", "failed: TypeError"),  # defined there, called, one line
        ("module:badfactory:raises", "failed: ValueError: no model today"),
        ("module:badfactory:not_a_model", "returned a dict, not a torch nn.Module"),
    ],
)
def test_a_factory_is_called_only_when_defined_there_and_its_failures_are_one_line(
    factory, fragment, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(TRUST_ENV, "")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "badfactory.py").write_text(
        "def raises(config):\n    raise ValueError('no model today')\n\n"
        "def not_a_model(config):\n    return {}\n"
    )
    argv = ["train", "--task", "retrieval", "--model", "standard", "--arch", factory]
    assert main([*argv, "--out", str(tmp_path / "run"), "train.steps=2"]) == 2
    error = capsys.readouterr().err.strip()
    assert fragment in error and "\n" not in error


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["model.construction=authors"], "model.construction is an option of mixit's own decoder"),
        (["model.attention_sink=true"], "model.attention_sink is an option"),
        (["model.mixing_causal=false"], "model.mixing_causal is an option"),
        (["--arch", "mixit"], "--arch mixit and model.arch=hf:gpt2 disagree"),
    ],
)
def test_an_option_an_arch_model_would_not_apply_is_refused(extra, fragment, tmp_path, capsys):
    argv = ["train", "--task", "retrieval", "--model", "mixit", "model.arch=hf:gpt2", *extra]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err.strip()
    assert fragment in error and "\n" not in error
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("trusted_how", ["by the command line", "by name in the environment"])
def test_a_trusted_module_shadowed_by_a_planted_file_is_refused(
    trusted_how, tmp_path, monkeypatch, capsys
):
    # The user trusts their own module; a shared folder they run from plants a file of the
    # same name, which `python -m` imports first, and a run whose stored config names it.
    own, shared, run = tmp_path / "own", tmp_path / "shared", tmp_path / "run"
    own.mkdir(), shared.mkdir()
    (own / "mymodels.py").write_text("def build(config):\n    raise ValueError('own ran')\n")
    (shared / "mymodels.py").write_text(PLANTED)
    monkeypatch.syspath_prepend(str(own))
    monkeypatch.setenv(TRUST_ENV, "")
    argv = ["train", "--task", "retrieval", "--model", "standard", "--out", str(run)]
    assert main([*argv, "train.steps=2", "train.eval_every=2", "task.n_train=64"]) == 0
    config = json.loads((run / "config.json").read_text())
    config["model"]["arch"] = "module:mymodels:build"
    (run / "config.json").write_text(json.dumps(config))
    if trusted_how == "by the command line":
        trust("mymodels")
    else:
        monkeypatch.setenv(TRUST_ENV, "mymodels")
    monkeypatch.chdir(shared)
    monkeypatch.syspath_prepend(str(shared))
    capsys.readouterr()
    assert main(["analyze", "covariance", str(run)]) == 2
    error = capsys.readouterr().err.strip()
    assert f"resolves to {shared / 'mymodels.py'}" in error and "\n" not in error, error
    assert not (shared / "planted-ran").exists()
