"""`mixit bench` runs on a tiny shape and writes the documented JSON (not a timed test)."""

import json

from mixit.cli import main


def test_bench_writes_rows_for_each_variant_and_hf(tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["bench", "--seq-len", "8", "--batch", "2", "--rounds", "2", "--vs-hf", "--decode"]
    assert main([*argv, "--json", str(out), "model.n_embd=32", "model.n_layer=1"]) == 0
    result = json.loads(out.read_text())
    assert result["peak_gflops"] > 0
    keys = {"impl", "variant", "n_embd", "n_layer", "n_head", "seq_len", "batch"}
    keys |= {"tokens_per_s", "mfu", "peak_mem_mb"}
    assert all(keys <= set(row) for row in result["rows"])
    impls = [(row["impl"], row["variant"]) for row in result["rows"]]
    assert impls == [
        ("mixit", "standard"),
        ("mixit", "frozen-qk"),
        ("mixit", "mixit"),
        ("hf", "standard"),
    ]
    cache = {row["variant"]: row["cache_bytes_per_token"] for row in result["decode"]}
    assert cache["mixit"] * 2 == cache["standard"]
    assert "MFU" in capsys.readouterr().out
    assert main(["bench", "--batch", "0"]) == 2
