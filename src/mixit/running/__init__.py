"""Layer 6: many runs. The plan's missing runs and their schedule (``runs``), the
local worker pool with its GPUs (``workers``), a torchrun rank (``rank``) and the job arrays of
a cluster (``launchers``). It trains through ``training`` and prices through ``cost``."""
