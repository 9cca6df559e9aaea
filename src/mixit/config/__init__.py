"""Layer 2: what a run is, as data. ``schema`` holds the typed model, training and run
configs and the hash that names a run directory; ``overrides`` parses the dotted
``section.key=value`` settings. It imports only ``common``."""
