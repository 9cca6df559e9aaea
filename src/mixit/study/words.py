"""The one vocabulary of verdicts, for litmus readings and the paper's claims alike, as the
files and reports spell them: a variant ``matches`` the reference, ``falls short`` of it or is
``inconclusive``; a claim is ``reproduced``, ``not reproduced`` or ``inconclusive``; and
either has ``no reference`` when the reference did not learn, or was ``not run``."""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    MATCHES = "matches"
    FALLS_SHORT = "falls short"
    INCONCLUSIVE = "inconclusive"
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    NO_REFERENCE = "no reference"
    NOT_RUN = "not run"


# A litmus reading's ``matches`` (True, False, or None: undecided) in words.
READINGS = {True: Verdict.MATCHES, False: Verdict.FALLS_SHORT, None: Verdict.INCONCLUSIVE}
# The verdicts of a claim that judged nothing, and so count for nothing.
UNJUDGED = (Verdict.NOT_RUN, Verdict.NO_REFERENCE, Verdict.INCONCLUSIVE)
