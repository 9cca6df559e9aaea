"""Theorem 2.1's ingredients: the recursion's one-layer moments match the drift and the
diffusion of eq. 2.4/2.5, and the experiment reports a falling discrepancy."""

import json

import torch

from mixit.analysis.theory import (
    compare,
    diffusion,
    drift,
    mixing_matrix,
    simulate_recursion,
    solve_sde,
    upper_indices,
)
from mixit.paper import reproduce, theorem21
from mixit.study.experiment import Reproduction

PHI = torch.tensor([[1.0, 0.3, -0.2], [0.3, 0.8, 0.1], [-0.2, 0.1, 1.2]], dtype=torch.float64)


def test_mixing_drift_matches_eq_a7():
    """n * E[A^T Phi A - Phi] = (Tr Phi / m - M(Phi)) I. Antithetic pairs (W, -W) cancel the
    zero-mean linear term exactly, so the O(1/n) drift shows with few samples."""
    n, paths = 100, 20_000
    w = torch.randn(paths, 3, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    plus, minus = mixing_matrix(w, n), mixing_matrix(-w, n)
    change = (plus.mT @ PHI @ plus + minus.mT @ PHI @ minus) / 2 - PHI  # (P, m, m)
    torch.testing.assert_close(n * change.mean(0), drift(PHI[None])[0], atol=0.02, rtol=0)


def test_one_layer_covariance_matches_the_diffusion():
    """n * (covariance of one layer's change) -> Sigma^v + Sigma^M (eq. 2.5)."""
    n, paths = 400, 20_000
    generator = torch.Generator().manual_seed(0)
    after = simulate_recursion(PHI, n, 1 / n, paths, generator)  # one layer
    rows, cols = upper_indices(3)
    change = (after - PHI)[:, rows, cols]  # (P, k)
    covariance = n * torch.cov(change.T)
    expected = diffusion(PHI[None])[0]
    assert (covariance - expected).abs().max() < 0.05 * expected.abs().max()


def test_diffusion_is_a_symmetric_psd_matrix():
    sigma = diffusion(PHI[None])[0]
    torch.testing.assert_close(sigma, sigma.T)
    assert torch.linalg.eigvalsh(sigma).min() > -1e-12


def test_recursion_approaches_the_sde_and_the_wrong_scale_does_not():
    generator = torch.Generator().manual_seed(1)
    sde = solve_sde(PHI, 0.1, 3000, 40, generator)
    right = compare(simulate_recursion(PHI, 128, 0.1, 3000, generator), sde)["discrepancy"]
    wrong = simulate_recursion(PHI, 128, 0.1, 3000, generator, entry_scale="variance")
    assert right < 0.06 < compare(wrong, sde)["discrepancy"]


def test_theorem21_experiment_writes_its_results(tmp_path, monkeypatch):
    monkeypatch.setitem(theorem21.WIDTHS, "tiny", (16, 64))
    monkeypatch.setitem(theorem21.PATHS, "tiny", 400)
    monkeypatch.setattr(theorem21, "DEPTHS", (2, 8))
    claims = reproduce(["theorem21"], Reproduction("tiny", seeds=1, out=tmp_path))
    results = json.loads((tmp_path / "theorem21" / "results.json").read_text())
    assert results["widths"] == [16, 64] and len(results["discrepancy"]) == 2
    correlation = results["model_correlation"]
    assert correlation["random"][-1][0] > correlation["mixit"][-1][0]
    for png in ("discrepancy.png", "sample_paths.png", "rank_collapse.png"):
        assert (tmp_path / "theorem21" / png).stat().st_size > 10_000
    assert next(c for c in claims if c.id == "C12").verdict != "not run"
