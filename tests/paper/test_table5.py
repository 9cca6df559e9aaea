"""C7 at the ceiling: a task whose fewest heads leave less room below accuracy 1.0 than the
gain C7 asks for, on every seed, does not discriminate at this scale."""

from mixit.paper.table5 import judge


def _results(dyck_fewest, dyck_most=(1.0, 1.0, 1.0)):
    return {
        "accuracy": {
            "addition": [[0.1, 0.1, 0.1], [0.9, 0.9, 0.9]],
            "dyck": [list(dyck_fewest), list(dyck_most)],
        },
        "gain": {"addition": 0.8, "dyck": 0.01},
    }


def test_a_task_at_its_ceiling_does_not_discriminate_and_names_its_knob():
    (claim,) = judge(_results([0.99, 0.985, 0.995]))
    assert claim.verdict == "inconclusive"
    assert claim.undecided == ["dyck: most heads - fewest >= 0.02"]
    assert claim.measured["at_the_ceiling"]["dyck"].startswith(
        "does not discriminate at this scale; make it harder:"
    )


def test_room_on_one_seed_is_read_as_the_rule_reads_it():
    (claim,) = judge(_results([0.99, 0.95, 0.995], [0.99, 0.96, 0.995]))
    assert "at_the_ceiling" not in claim.measured
    assert claim.verdict == "not reproduced"  # no seed gains 0.02 on Dyck
