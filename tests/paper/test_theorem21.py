"""C12 read seed by seed (rule of 2026-12-06): the discrepancy must fall with width on every
seed and on the interval over them, not on their mean alone."""

import pytest

from mixit.paper.theorem21 import judge

WIDTHS = [8, 16, 32, 64]


def _results(*by_seed):
    means = [sum(column) / len(column) for column in zip(*by_seed, strict=True)]
    return {
        "widths": WIDTHS,
        "discrepancy": means,
        "discrepancy_by_seed": {str(seed): list(values) for seed, values in enumerate(by_seed)},
    }


@pytest.mark.parametrize(
    "by_seed, verdict",
    [
        # falls on every seed, far beyond the seeds' spread
        ([[0.08, 0.05, 0.03, 0.01], [0.08, 0.05, 0.03, 0.012], [0.081, 0.05, 0.03, 0.011]], True),
        # one seed, rising with width: it decides alone
        ([[0.017, 0.02, 0.022, 0.025]], False),
        # the mean falls (0.025 -> 0.0237), but two seeds of three rise with width
        (
            [[0.037, 0.03, 0.02, 0.015], [0.017, 0.02, 0.02, 0.025], [0.021, 0.02, 0.03, 0.031]],
            None,
        ),
        # falls on every seed but ends beyond the limit of 0.10
        ([[0.5, 0.4, 0.3, 0.2], [0.5, 0.4, 0.3, 0.2]], False),
    ],
)
def test_c12_reads_each_seed(by_seed, verdict):
    (claim,) = judge(_results(*by_seed))
    expected = {True: "reproduced", False: "not reproduced", None: "inconclusive"}[verdict]
    assert claim.verdict == expected
    if verdict is None:
        assert claim.undecided == ["falls from the smallest width to the largest"]
    assert claim.measured["by_seed"]["0"]["8"] == by_seed[0][0]
