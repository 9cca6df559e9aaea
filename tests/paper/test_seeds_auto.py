"""``reproduce --seeds auto`` on planted claims: one more seed at a time while a claim is open
by its seeds alone, stopping once it is decided, at six seeds, or at once when what keeps it
open is a run still rising."""

import pytest

from mixit.cli import main
from mixit.cli import reproduce as command
from mixit.paper.seeds_auto import open_by_the_seeds, reproduce_until_decided
from mixit.study.claim import (
    INCONCLUSIVE,
    REPRODUCED,
    Claim,
)
from mixit.study.experiment import (
    Reproduction,
)


def _claim(verdict, undecided=(), unfinished=()):
    claim = Claim("C1", "statement", "rule", verdict=verdict)
    claim.undecided, claim.unfinished = list(undecided), list(unfinished)
    return claim


def _planted(decided_at, unfinished=()):
    """A reproduction whose claim is undecided by its seeds below ``decided_at`` seeds."""
    calls = []

    def reproduce(names, how, train):
        calls.append(how.seeds)
        if how.seeds >= decided_at:
            return [_claim(REPRODUCED)]
        return [_claim(INCONCLUSIVE, ["standard - mixit >= 0.20"], unfinished)]

    return reproduce, calls


@pytest.mark.parametrize("decided_at, seeds", [(3, [3]), (4, [3, 4]), (5, [3, 4, 5])])
def test_it_stops_once_the_planted_claim_is_decided(decided_at, seeds):
    reproduce, calls = _planted(decided_at)
    claims, used = reproduce_until_decided(["table1"], Reproduction(), reproduce)
    assert calls == seeds and used == seeds[-1] and claims[0].verdict == REPRODUCED


def test_it_stops_at_six_seeds_with_the_claim_still_open():
    reproduce, calls = _planted(decided_at=99)
    claims, used = reproduce_until_decided(["table1"], Reproduction(), reproduce)
    assert calls == [3, 4, 5, 6] and used == 6 and open_by_the_seeds(claims) == ["C1"]


def test_a_claim_open_by_a_rising_run_adds_no_seed():
    reproduce, calls = _planted(decided_at=99, unfinished=["mixit on addition: still rising"])
    reproduce_until_decided(["table1"], Reproduction(), reproduce)
    assert calls == [3]


def test_the_ablation_refuses_seeds_auto(capsys):
    assert main(["reproduce", "ablation", "--seeds", "auto", "--estimate"]) == 2
    assert "--seeds auto and --extend are for the experiments" in capsys.readouterr().err


def test_the_command_line_adds_seeds_and_says_where_it_stopped(tmp_path, monkeypatch, capsys):
    reproduce, calls = _planted(decided_at=4)
    monkeypatch.setattr(command, "reproduce", reproduce)
    assert main(["reproduce", "table1", "--seeds", "auto", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert calls == [3, 4] and "--seeds auto: 4 seeds; still undecided by the seeds: none" in err
    assert "seeds 100-103" in err
