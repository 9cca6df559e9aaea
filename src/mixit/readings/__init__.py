"""Layer 5: how results are read and printed. ``litmus`` turns a reference and a
variant's scores into a verdict (matches, falls short, inconclusive), ``results`` writes a
plan's ``results.csv``, ``plots`` and ``text`` draw figures and tables. It reads numbers, never
a model or a run: it imports ``common``, ``tasks`` and ``models`` (the variants' names) only."""
