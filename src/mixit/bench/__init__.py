"""Layer 10: measuring this machine. ``speed`` times training and generation,
``cost_check`` holds ``cost``'s predictions against measured step times and memory, over the
configs of a reproduction (so it sits above ``experiments``)."""
