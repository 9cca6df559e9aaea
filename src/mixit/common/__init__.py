"""Layer 1, the floor: what every other layer shares and that knows nothing of models or
runs: the errors that map to exit statuses (``errors``), files written whole or not at all
(``io``) and the reports' figure style (``plots``). It imports no other part of mixit."""
