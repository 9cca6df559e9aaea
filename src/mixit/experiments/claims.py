"""The paper's findings and the rule that judges each, written down before any result.

Margins are absolute differences of means over seeds. A rule names the models and the numbers
it compares, so a reader can check a verdict against ``results.json`` by hand.
"""

from __future__ import annotations

from mixit.experiments.base import Claim

CLAIMS: list[Claim] = [
    Claim(
        "C1",
        "Retrieval: standard, Frozen-MLP and Frozen-QK are far more accurate than MixiT "
        "(Table 1: 100 / 100 / 97.0 vs 11.2 %).",
        "each of standard, frozen-mlp, frozen-qk has mean test accuracy >= mixit's + 0.20",
    ),
    Claim(
        "C2",
        "k-hop induction heads: standard, Frozen-MLP and Frozen-QK beat MixiT "
        "(Table 1: 99.99 / 99.89 / 96.73 vs 48.58 %).",
        "each of standard, frozen-mlp, frozen-qk has mean test accuracy >= mixit's + 0.10",
    ),
    Claim(
        "C3",
        "Retrieval accuracy falls fastest with the number of pairs for MixiT (Figure 2).",
        "mixit's drop in mean accuracy from the fewest to the most pairs is larger than the "
        "drop of each of standard, frozen-mlp, frozen-qk",
    ),
    Claim(
        "C4",
        "Language modeling: standard < Frozen-QK < MixiT in log perplexity (Table 2).",
        "mean test log_ppl: standard < frozen-qk < mixit",
    ),
    Claim(
        "C5",
        "MixiT is competitive with the standard transformer on decimal addition, Dyck-1, "
        "modular addition and sentiment (Table 3).",
        "on each of the four tasks mixit's mean test accuracy >= standard's - 0.03",
    ),
    Claim(
        "C6",
        "Memorization capacity: standard > Frozen-QK ~ MixiT > Frozen-MLP in bits per "
        "parameter (Table 4: 2.98, 2.25, 2.18, 1.13).",
        "mean bits/param: standard > max(frozen-qk, mixit); |frozen-qk - mixit| <= 0.1 x "
        "standard; min(frozen-qk, mixit) > frozen-mlp",
    ),
    Claim(
        "C7",
        "More MixiT heads help decimal addition and Dyck-1 (Table 5).",
        "on addition and on dyck, mixit's mean accuracy with the most heads >= with the fewest "
        "+ 0.02",
    ),
    Claim(
        "C8",
        "At depth 16 MixiT keeps its accuracy on decimal addition while the random transformer "
        "collapses (Table 6: 100 vs 22.9 %).",
        "at the largest depth mixit's mean accuracy (with its shaped residual, as the paper "
        "builds it) >= its depth-2 accuracy - 0.10 and the random transformer's <= its depth-2 "
        "accuracy - 0.20",
    ),
    Claim(
        "C9",
        "Token covariance grows with depth for the random transformer and stays flat for MixiT "
        "(Table 7).",
        "at initialisation, mean token correlation at the largest depth minus at depth 2: "
        "random >= +0.10, and |mixit| <= 0.05",
    ),
    Claim(
        "C10",
        "Frozen-QK trained on retrieval forms a previous-token head and an induction head "
        "(Figure 3).",
        "in every seed's Frozen-QK retrieval model some head has previous-token score at "
        "value positions (where retrieval needs it) >= 0.5 and some later-layer head has "
        "induction score >= 0.5",
    ),
    Claim(
        "C11",
        "Training throughput: MixiT > Frozen-QK > standard (appendix D: +32.0 % and +23.9 %).",
        "median samples/s at the language-model shape: mixit > frozen-qk > standard",
    ),
    Claim(
        "C12",
        "Theorem 2.1: at initialisation MixiT's token covariance converges to the SDE (2.4) "
        "as width and depth grow with depth / width = tau.",
        "the discrepancy between the simulated recursion and the SDE at tau falls from the "
        "smallest to the largest width and is <= 0.10 at the largest",
    ),
]


def claim(claim_id: str) -> Claim:
    """A fresh, unjudged copy of one claim."""
    template = next(c for c in CLAIMS if c.id == claim_id)
    return Claim(template.id, template.statement, template.rule)
