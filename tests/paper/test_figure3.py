"""C10 shows both previous-token columns: the one at value positions decides (since
2026-11-25), the one over every position, read before, is measured beside it."""

from mixit.paper.figure3 import judge


def _seed(at_values: float, everywhere: float, induction: float) -> dict:
    """Head scores of a 2-layer, 1-head model: a previous-token head in layer 0, an induction
    head in layer 1."""
    return {
        "previous_token_at_values": [[at_values], [0.0]],
        "previous_token": [[everywhere], [0.0]],
        "induction": [[0.0], [induction]],
    }


def test_c10_decides_on_value_positions_and_measures_the_every_position_score_beside():
    seeds = [_seed(0.8, 0.45, 0.7), _seed(0.9, 0.5, 0.8)]
    (claim,) = judge({"head_scores": {"frozen-qk": seeds}})
    assert claim.verdict == "reproduced"
    assert claim.measured == {
        "frozen_qk_circuit_per_seed": [True, True],
        "by_the_every_position_score": [False, True],
    }
    assert "decides since 2026-11-25" in claim.rule
