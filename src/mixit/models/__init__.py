"""Layer 3: the networks. The attention modules and the decoder read top to bottom
(``attention``, ``decoder``), the spectrum's one definition (``variants``), the adapters that
find the same parts in a Hugging Face or user model (``adapters``, behind ``mixit.spectrum``),
the authors' constructions, the readouts, and ``build``, the one place a run's model is made.
It imports ``common`` and ``config``; what it takes from a task comes in as an argument
(``build.TaskReadout``), so models and tasks stand on one floor."""
