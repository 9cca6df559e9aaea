"""Layer 4: what a run costs before it trains. ``counts`` counts a model's weights and
FLOPs as built, ``memory`` its training memory, ``predict`` the seconds and bytes of a run on a
target device. It imports ``common``, ``config``, ``tasks`` and ``models``; it times nothing
(``analysis.speed`` measures)."""
