"""The pre-registered rule of studies/init_finding.py, on planted rows."""

import importlib.util
from pathlib import Path

TOOL = Path(__file__).parents[2] / "studies" / "init_finding.py"
spec = importlib.util.spec_from_file_location("init_finding", TOOL)
init_finding = importlib.util.module_from_spec(spec)
spec.loader.exec_module(init_finding)


def row(*values: float) -> dict:
    return {"values": list(values), "chance": 0.27}


def test_the_rule_confirms_refutes_or_calls_mixed():
    verdict = init_finding.verdict
    assert verdict(row(0.99, 0.95, 0.91), row(0.28, 0.30, 0.36)) == "confirmed"
    assert verdict(row(0.99, 0.95, 0.91), row(0.99, 0.93, 0.97)) == "refuted"  # both solve
    assert verdict(row(0.30, 0.29, 0.31), row(0.28, 0.30, 0.29)) == "refuted"  # neither
    assert verdict(row(0.99, 0.95, 0.50), row(0.28, 0.30, 0.29)) == "mixed"
    assert verdict(row(0.99, 0.95, 0.91), row(0.28, 0.30, 0.38)) == "mixed"  # one over the bar


def test_every_architecture_is_measured_under_both_initialisations():
    for arch in init_finding.PREDICTED:
        inits = {init for a, init in init_finding.SETTINGS if a == arch}
        assert "small-output" in inits and len(inits) == 2
