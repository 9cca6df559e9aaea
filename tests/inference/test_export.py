"""`mixit export-hf`: the softmax variants load in transformers' LlamaForCausalLM with the
same logits; MixiT is refused."""

import json
import os

import pytest
import torch

from mixit.cli import main
from mixit.training.rundir import load_run
from mixit.training.train import train

transformers = pytest.importorskip("transformers")

SHORT = {"train.steps": 3, "train.eval_every": 3, "model.n_embd": 32, "task.n_test": 200}


@pytest.mark.parametrize("variant", ["standard", "frozen-qk", "frozen-mlp", "random"])
def test_exported_llama_gives_the_same_logits(variant, tmp_path):
    run_dir = tmp_path / "run"
    train("addition", variant, out=run_dir, overrides=SHORT, progress=False)
    mask = os.umask(0o022)
    try:
        assert main(["export-hf", str(run_dir), str(tmp_path / "hf")]) == 0
    finally:
        os.umask(mask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "hf").iterdir()}
    assert modes["model.safetensors"] == 0o644 and set(modes.values()) == {0o644}  # the umask's
    ours, _ = load_run(run_dir)
    theirs = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "hf").eval()
    ids = torch.randint(0, ours.config.vocab_size, (3, ours.config.block_size))
    with torch.no_grad():
        torch.testing.assert_close(theirs(ids).logits, ours(ids), atol=1e-4, rtol=0)


def test_mixit_exports_as_its_own_class_and_a_llama_is_refused(tmp_path, capsys):
    run_dir = tmp_path / "run"
    train("addition", "mixit", out=run_dir, overrides=SHORT, progress=False)
    assert main(["export-hf", str(run_dir), str(tmp_path / "hf"), "--as", "llama"]) == 2
    assert "not a Llama" in capsys.readouterr().err
    assert not (tmp_path / "hf").exists()
    assert main(["export-hf", str(run_dir), str(tmp_path / "hf")]) == 0
    stored = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert stored["model_type"] == "mixit" and stored["attention"] == "mixing"
    assert stored["auto_map"]["AutoModelForCausalLM"] == "modeling_mixit.MixitForCausalLM"


def test_an_unknown_export_form_is_refused(tmp_path, capsys):
    assert main(["export-hf", str(tmp_path / "run"), str(tmp_path / "hf"), "--as", "gguf"]) == 2
    assert "invalid choice: 'gguf'" in capsys.readouterr().err
    assert not (tmp_path / "hf").exists()


def test_a_full_disk_while_exporting_is_one_line_and_leaves_no_folder(
    tmp_path, capsys, monkeypatch
):
    """safetensors raises its own error, no OSError, when the disk is full: one line, and the
    folder the export made is gone again (it was left empty, with a traceback; #103)."""
    from safetensors import SafetensorError

    run_dir = tmp_path / "run"
    train("addition", "standard", out=run_dir, overrides=SHORT, progress=False)

    def full(self, *args, **kwargs):
        raise SafetensorError("Error while serializing: No space left on device (os error 28)")

    monkeypatch.setattr(transformers.LlamaForCausalLM, "save_pretrained", full)
    assert main(["export-hf", str(run_dir), str(tmp_path / "hf")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "nothing of it" in err
    assert not (tmp_path / "hf").exists()
