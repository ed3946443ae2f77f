"""Multiple-testing corrections of the RAPPOR decode's p-values, and the checks of its test options.

``detected`` is decided on p-values adjusted by Benjamini–Hochberg (the
default: the false discovery rate, which serves discovery), Bonferroni
(``min(1, M·p)``, the family-wise error) or not at all (``"none"``,
google/rappor's practice) over the M candidates
(docs/mechanisms.md#rappor-decoding).

References
----------
.. [1] Y. Benjamini, Y. Hochberg. "Controlling the false discovery rate".
   JRSS B 57(1), 1995.
"""

from __future__ import annotations

import numpy as np

from ldp.errors import ParameterError

__all__ = ["CORRECTIONS", "DEFAULT_CORRECTION", "adjust_p_values", "check_options"]

#: Multiple-testing corrections accepted by :func:`ldp.aggregator.rappor.decode.decode`.
CORRECTIONS = ("bonferroni", "bh", "none")
#: The decode's default: Benjamini–Hochberg at α = 0.05 (on Google's regression setups it keeps the
#: false positives among bogus candidates under 5 % and the total variation within 1.1× of Google's,
#: where Bonferroni doubles it on the uniform population; README, benchmarks/rappor_regtest.py).
DEFAULT_CORRECTION = "bh"


def adjust_p_values(p_values: np.ndarray, correction: str) -> np.ndarray:
    """Bonferroni (``min(1, M·p)``) or Benjamini–Hochberg adjusted p-values.

    References
    ----------
    .. [1] Y. Benjamini, Y. Hochberg. JRSS B 57(1), 1995.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if correction == "bonferroni":
        return np.minimum(1.0, p * p.size)
    if correction == "bh":
        import scipy.stats  # only here: importing the aggregator (as ``ldp encode`` does) must not load scipy

        return scipy.stats.false_discovery_control(p, method="bh") if p.size else p
    if correction == "none":
        return p
    raise ParameterError(f"correction must be one of {CORRECTIONS}, got {correction!r}")


def check_options(alpha: float, correction: str, confidence: float) -> str:
    """Check ``alpha`` and ``confidence`` (both in (0, 1)) and return the correction's canonical name.

    ``"benjamini-hochberg"`` and ``"fdr"`` (any case, ``-`` or ``_``) name ``"bh"``.

    Raises
    ------
    ParameterError
        A level outside (0, 1) or an unknown correction.
    """
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ParameterError(f"alpha must be in (0, 1), got {alpha!r}")
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    name = str(correction).lower().replace("-", "").replace("_", "")
    name = {"benjaminihochberg": "bh", "fdr": "bh"}.get(name, name)
    if name not in CORRECTIONS:
        raise ParameterError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    return name
