"""Worst-case pairs of output distributions: how a spec tells the accountant its privacy.

Every discrete mechanism describes the reports of the worst pair of inputs
x, x′ as a product of independent *pieces*: each piece is a pair of output
distributions (P under x, Q under x′) given as log-probabilities, used
``copies`` times. The accountant (:mod:`ldp.privacy.mechanisms`) composes the
pieces' privacy-loss distributions and needs no knowledge of the mechanism.

A spec provides them through ``privacy_pieces(reports)``. Mechanisms with
fresh randomness per report implement ``report_pieces()`` (one report) and
inherit ``privacy_pieces``, which repeats every piece once per report;
memoizing mechanisms (RAPPOR) override ``privacy_pieces`` because their
reports of one value are not independent. A mechanism with no exact pair says
so with a :class:`~ldp.errors.ParameterError`.

Only the accountant calls these, so the log-probability helpers (which use
SciPy) are imported when a piece is built, never when a spec is: the client,
which imports the specs, stays free of SciPy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

__all__ = ["PrivacyPiece", "piece"]


@dataclasses.dataclass(frozen=True)
class PrivacyPiece:
    """One independent part of a mechanism's reports under its worst pair of inputs.

    Attributes
    ----------
    log_p, log_q : numpy.ndarray
        Log-probabilities of the piece's outputs under x and under x′ (same order).
    copies : int
        How many independent copies of the piece the reports hold.
    """

    log_p: np.ndarray
    log_q: np.ndarray
    copies: int = 1

    def repeated(self, times: int) -> PrivacyPiece:
        """The piece held ``times`` times as often (k reports of fresh randomness)."""
        return dataclasses.replace(self, copies=self.copies * times)

    def swapped(self) -> PrivacyPiece:
        """The same piece with the roles of x and x′ exchanged."""
        return dataclasses.replace(self, log_p=self.log_q, log_q=self.log_p)


def piece(
    under_x: Sequence[Fraction | float], under_x_prime: Sequence[Fraction | float], copies: int = 1
) -> PrivacyPiece:
    """A :class:`PrivacyPiece` from exact output probabilities (logs taken without losing precision)."""
    from ldp.privacy._numeric import log_fraction

    return PrivacyPiece(
        np.array([log_fraction(x) for x in under_x]),
        np.array([log_fraction(y) for y in under_x_prime]),
        copies,
    )
