"""Layer 5: one run. The resolved config (``resolve``), the loop and its steps
(``train``, ``step``), scoring, early stopping on held-out rows (``stopping``), checkpoints and
the run directory (``checkpoint``, ``rundir``), the device and the data-parallel ranks of one
run (``devices``, ``distributed``). It imports the layers below it, never ``running``."""
