"""Layer 7: the one place that chooses a learning rate, a budget and an
initialisation. ``rules`` writes the protocol of docs/tuning.md down (grid, rungs, budget,
what counts as learned, and the litmus tolerance), ``halving`` trains it by successive
halving, ``sweep`` runs a user's grid. It runs its trials through ``running`` and reads
them itself."""
