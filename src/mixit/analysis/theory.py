"""Theorem 2.1: MixiT's token covariance at initialisation against its SDE (eq. 2.4).

Conventions (the paper leaves them open; ``docs/theorem21.md`` says why these):

- h is (n, m): width n, m tokens. One layer is eq. A.4 with the value weights,
  ``h <- W^v h (I + (W^M - mean W^M) / sqrt(n m))``, W^v_ij ~ N(0, 1/n) and W^M_ij ~ N(0, 1):
  the *standard deviation* of the mixing entries is 1/sqrt(nm) (eq. 2.3 prints it where a
  variance goes; only this reading gives an n-independent limit).
- ``mean W^M`` replaces each entry by its column mean, so every column of the mixing matrix
  sums to 1: token b's output is a weighted sum of input tokens with weights summing to 1.
  No causal mask (the theorem has none).
- Phi = h^T h / n. Depth d = tau n layers. The drift (Tr Phi / m - M(Phi)) acts on the
  diagonal only (eq. A.7 carries the identity that eq. 2.4 leaves implicit).

``W^v h`` is drawn as ``Z L^T`` with Z (n, m) standard normal and L L^T = Phi: for a fresh
Gaussian W^v this has exactly the distribution of ``W^v h`` given h, at O(nm) cost instead of
O(n^2 m), so widths up to 512 and thousands of seeds run in seconds.
"""

from __future__ import annotations

import math

import torch


def upper_indices(m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Row and column indices of the m(m+1)/2 upper-triangular entries, row by row."""
    return torch.triu_indices(m, m)


def mixing_matrix(
    w: torch.Tensor, width: int, mean_over: str = "column", entry_scale: str = "std"
) -> torch.Tensor:
    """I + (W - mean W) * scale for standard normal ``w`` (P, m, m) (eq. A.4).

    ``mean_over="row"`` subtracts each row's mean instead of each column's;
    ``entry_scale="variance"`` reads eq. 2.3 literally, W^M entries with variance 1/sqrt(nm)
    (standard deviation (nm)^(-1/4)). Both exist to show that they break the limit.
    """
    m = w.shape[-1]
    centred = w - w.mean(dim=-2 if mean_over == "column" else -1, keepdim=True)  # (P, m, m)
    scale = (width * m) ** (-0.5 if entry_scale == "std" else -0.25)
    return torch.eye(m, dtype=w.dtype) + centred * scale


def simulate_recursion(
    phi0: torch.Tensor,
    width: int,
    tau: float,
    paths: int,
    generator: torch.Generator,
    mean_over: str = "column",
    entry_scale: str = "std",
) -> torch.Tensor:
    """Phi after d = round(tau * width) layers of the recursion, for ``paths`` seeds: (P, m, m).

    ``mean_over`` and ``entry_scale`` choose the conventions (``mixing_matrix``).
    """
    m = phi0.shape[0]
    depth = max(1, round(tau * width))
    phi = phi0.to(torch.float64).expand(paths, m, m).clone()  # (P, m, m)
    for _ in range(depth):
        chol = torch.linalg.cholesky(phi)  # (P, m, m)
        z = torch.randn(paths, width, m, generator=generator, dtype=torch.float64)  # (P, n, m)
        gram = z.transpose(1, 2) @ z / width  # (P, m, m): Z^T Z / n
        w = torch.randn(paths, m, m, generator=generator, dtype=torch.float64)  # (P, m, m)
        mixing = mixing_matrix(w, width, mean_over, entry_scale)  # (P, m, m)
        inner = chol @ gram @ chol.transpose(1, 2)  # (P, m, m): (W^v h)^T (W^v h) / n
        phi = mixing.transpose(1, 2) @ inner @ mixing  # (P, m, m)
        phi = (phi + phi.transpose(1, 2)) / 2  # exact symmetry against round-off
    return phi


def drift(phi: torch.Tensor) -> torch.Tensor:
    """(P, m, m): (Tr(Phi)/m - M(Phi)) I, eq. 2.4 with eq. A.7's identity."""
    m = phi.shape[-1]
    scale = phi.diagonal(dim1=-2, dim2=-1).mean(-1) - phi.mean((-2, -1))  # (P,)
    return scale[:, None, None] * torch.eye(m, dtype=phi.dtype)


def diffusion(phi: torch.Tensor) -> torch.Tensor:
    """(P, k, k) covariance of the upper-triangular entries: Sigma^v + Sigma^M (eq. 2.5)."""
    m = phi.shape[-1]
    rows, cols = upper_indices(m)
    a, b = rows[:, None], cols[:, None]  # (k, 1): entry (alpha, beta)
    c, d = rows[None, :], cols[None, :]  # (1, k): entry (gamma, delta)
    sigma_v = phi[:, a, c] * phi[:, b, d] + phi[:, a, d] * phi[:, b, c]  # (P, k, k)
    column_mean = phi.mean(dim=1)  # (P, m): mean of each column
    # C(Phi^.i, Phi^.j) = <Phi^.i, Phi^.j> / m - mean_i mean_j
    cov = phi.transpose(1, 2) @ phi / m - column_mean[:, :, None] * column_mean[:, None, :]
    delta = torch.eye(m, dtype=phi.dtype)
    sigma_m = (
        delta[a, c] * cov[:, b, d]
        + delta[a, d] * cov[:, b, c]
        + delta[c, b] * cov[:, d, a]
        + delta[b, d] * cov[:, a, c]
    )  # (P, k, k)
    return sigma_v + sigma_m


def _psd_sqrt(matrix: torch.Tensor) -> torch.Tensor:
    values, vectors = torch.linalg.eigh(matrix)  # (P, k), (P, k, k)
    return vectors @ torch.diag_embed(values.clamp(min=0).sqrt()) @ vectors.transpose(1, 2)


def solve_sde(
    phi0: torch.Tensor, tau: float, paths: int, steps: int, generator: torch.Generator
) -> torch.Tensor:
    """Euler-Maruyama for eq. 2.4 from phi0 up to tau: (P, m, m)."""
    m = phi0.shape[0]
    rows, cols = upper_indices(m)
    dt = tau / steps
    phi = phi0.to(torch.float64).expand(paths, m, m).clone()  # (P, m, m)
    for _ in range(steps):
        noise = torch.randn(paths, rows.numel(), 1, generator=generator, dtype=torch.float64)
        step = (_psd_sqrt(diffusion(phi)) @ noise).squeeze(-1) * math.sqrt(dt)  # (P, k)
        update = drift(phi) * dt  # (P, m, m)
        update[:, rows, cols] += step
        update[:, cols, rows] = update[:, rows, cols]  # mirror the upper triangle
        phi = phi + update
    return phi


def wasserstein_1d(x: torch.Tensor, y: torch.Tensor) -> float:
    """W1 between two empirical distributions with the same number of samples."""
    return (x.sort().values - y.sort().values).abs().mean().item()


def compare(simulated: torch.Tensor, sde: torch.Tensor) -> dict[str, list[float] | float]:
    """Per upper-triangular entry: mean, std of both, their W1; and the mean relative error
    of the means and standard deviations (the discrepancy)."""
    rows, cols = upper_indices(simulated.shape[-1])
    sim, ref = simulated[:, rows, cols], sde[:, rows, cols]  # (P, k)
    relative = torch.cat(
        [
            (sim.mean(0) - ref.mean(0)).abs() / ref.mean(0).abs().clamp(min=1e-3),
            (sim.std(0) - ref.std(0)).abs() / ref.std(0).clamp(min=1e-3),
        ]
    )
    return {
        "simulated_mean": sim.mean(0).tolist(),
        "sde_mean": ref.mean(0).tolist(),
        "simulated_std": sim.std(0).tolist(),
        "sde_std": ref.std(0).tolist(),
        "wasserstein": [wasserstein_1d(sim[:, i], ref[:, i]) for i in range(sim.shape[1])],
        "discrepancy": relative.mean().item(),
    }
