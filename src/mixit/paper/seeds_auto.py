"""``reproduce --seeds auto``: three seeds, then one more at a time while a claim is
inconclusive only because its seeds left a comparison undecided (``Claim.undecided``), up to
six (``study.litmus.AUTO_SEEDS``, as ``compare --seeds auto``). A claim left open by a run cut
off while still rising (``Claim.unfinished``) or by a reference that did not learn is not one
more seeds decide, and adds none.

Coverage: every look reads its 95 % interval as a fixed-size study would. Over the at most
four looks (3, 4, 5 and 6 seeds) the chance that some look calls a comparison decided that a
fixed design would not is at most four times a look's (Bonferroni): 20 % two-sided, 10 % for a
comparison read one way. Each look's verdicts stay in ``claims.json``'s ``by_seeds``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from mixit.study.claim import (
    INCONCLUSIVE,
    Claim,
)
from mixit.study.experiment import (
    Reproduction,
)
from mixit.study.litmus import AUTO_SEEDS

Reproduce = Callable[[Sequence[str], Reproduction, bool], list[Claim]]


def open_by_the_seeds(claims: Sequence[Claim]) -> list[str]:
    """The claims more seeds can decide: inconclusive with a comparison the seeds left
    undecided, and no run cut off while still rising."""
    return [
        claim.id
        for claim in claims
        if claim.verdict == INCONCLUSIVE and claim.undecided and not claim.unfinished
    ]


def reproduce_until_decided(
    names: Sequence[str], how: Reproduction, reproduce: Reproduce, train: bool = True
) -> tuple[list[Claim], int]:
    """``reproduce(names, how, train)`` at ``AUTO_SEEDS[0]`` seeds, then at one more while a
    claim is open by the seeds (``open_by_the_seeds``), up to ``AUTO_SEEDS[1]``; the last
    call's claims and the seeds it took. The runs of the seeds before are shared, never
    retrained."""
    seeds, most = AUTO_SEEDS
    while True:
        claims = reproduce(names, dataclasses.replace(how, seeds=seeds), train)
        if seeds >= most or not open_by_the_seeds(claims):
            return claims, seeds
        seeds += 1
