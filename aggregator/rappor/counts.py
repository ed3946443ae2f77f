"""RAPPOR decoding, step 1: validated report counts and unbiased per-bit counts.

For cohort j and bit i, ``t_ij = (c_ij − p*·N_j)/(q* − p*)`` is unbiased for
the number of cohort-j reports whose true Bloom bit is 1, with
``Var(t_ij) = N_j·r(1−r)/(q*−p*)²`` (docs/mechanisms.md#rappor-decoding).

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response". ACM CCS 2014.
.. [2] google/rappor, analysis/R/decode.R (EstimateBloomCounts).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ldp.errors import InputError, SpecError
from ldp.specs.rappor import Rappor

__all__ = ["RapporShape", "check_counts", "known_size", "unbiased_bit_counts"]


@dataclasses.dataclass(frozen=True)
class RapporShape:
    """The numbers of a RAPPOR spec that decoding uses, as plain ints and floats.

    Attributes
    ----------
    num_cohorts, num_bits, num_hashes : int
        m, k and h.
    p_star, q_star : float
        ``P[S=1 | B=0]`` and ``P[S=1 | B=1]``, the rates at which a reported
        bit is 1 when the true bit is 0 and 1.
    """

    num_cohorts: int
    num_bits: int
    num_hashes: int
    p_star: float
    q_star: float

    @classmethod
    def of(cls, spec: Rappor) -> RapporShape:
        """The shape of ``spec`` (a validated :class:`ldp.Rappor`)."""
        return cls(
            num_cohorts=spec.num_cohorts,
            num_bits=known_size(spec.num_bits, "num_bits"),
            num_hashes=known_size(spec.num_hashes, "num_hashes"),
            p_star=float(spec.prob_one_given_zero),
            q_star=float(spec.prob_one_given_one),
        )

    @property
    def gap(self) -> float:
        """``q* − p*``, the signal a true 1 adds to a reported bit's rate."""
        return self.q_star - self.p_star

    @property
    def expected_distinct_bits(self) -> float:
        """E[number of distinct Bloom bits a value sets] = k(1 − (1 − 1/k)^h) for random hashing."""
        k, h = self.num_bits, self.num_hashes
        return k * (1.0 - (1.0 - 1.0 / k) ** h)


def known_size(value: int | None, name: str) -> int:
    """A size that :class:`ldp.Rappor` fills in for every encoding (``None`` only before validation)."""
    if value is None:
        raise SpecError(f"rappor needs {name}")
    return value


def check_counts(spec: Rappor, cohort_counts: Any, bit_counts: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate and return ``(cohort_counts (m,), bit_counts (m, k))`` as int64.

    Raises
    ------
    ParameterError
        Wrong shape, negative counts, or a bit count above its cohort's count.
    """
    if not isinstance(spec, Rappor):
        raise SpecError(f"RAPPOR decoding needs a Rappor spec, got {type(spec).__name__}")
    m, k = spec.num_cohorts, spec.num_bits
    cohorts = np.asarray(cohort_counts)
    bits = np.asarray(bit_counts)
    if cohorts.shape != (m,):
        raise InputError(f"cohort_counts must have shape ({m},) (num_cohorts), got {cohorts.shape}")
    if bits.shape != (m, k):
        raise InputError(f"bit_counts must have shape ({m}, {k}) (num_cohorts, num_bits), got {bits.shape}")
    for name, array in (("cohort_counts", cohorts), ("bit_counts", bits)):
        if array.size and not np.all(np.isfinite(array)):
            raise InputError(f"{name} must be finite counts")
        if array.size and not np.array_equal(array, np.round(array)):
            raise InputError(f"{name} must be whole numbers")
        if array.size and array.min() < 0:
            raise InputError(f"{name} must be non-negative, got minimum {array.min()}")
    cohorts = cohorts.astype(np.int64)
    bits = bits.astype(np.int64)
    over = bits > cohorts[:, None]
    if over.any():
        j, i = map(int, np.argwhere(over)[0])
        raise InputError(
            f"bit_counts[{j}, {i}] = {bits[j, i]} exceeds the {cohorts[j]} reports of cohort {j}"
        )
    return cohorts, bits


def unbiased_bit_counts(spec: Rappor, cohort_counts: Any, bit_counts: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-cohort, per-bit unbiased counts ``t_ij`` and their plug-in variances.

    ``t_ij = (c_ij − p*·N_j)/(q* − p*)`` and
    ``Var = N_j·r(1−r)/(q*−p*)²`` with ``r = p* + (q*−p*)·clip(t_ij/N_j, 0, 1)``
    (docs/mechanisms.md#rappor-decoding; the clamp is google/rappor's). This variance is that of
    N_j reports each carrying a true 1 with probability T_ij/N_j (i.i.d.
    convention); given T_ij it exceeds the fixed-data variance
    ``T q*(1−q*) + (N−T) p*(1−p*)`` by ``N_j π(1−π)(q*−p*)²``.

    Returns
    -------
    t, var : numpy.ndarray
        Both of shape (m, k), float64; 0 in cohorts without reports.

    References
    ----------
    .. [1] Erlingsson, Pihur, Korolova, ACM CCS 2014; google/rappor
       analysis/R/decode.R (EstimateBloomCounts).
    """
    n, c = check_counts(spec, cohort_counts, bit_counts)
    p0, p1 = float(spec.prob_one_given_zero), float(spec.prob_one_given_one)
    gap = p1 - p0
    n_col = n[:, None].astype(np.float64)
    t = (c - p0 * n_col) / gap
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n_col > 0, t / np.where(n_col > 0, n_col, 1.0), 0.0)
    r = p0 + gap * np.clip(share, 0.0, 1.0)
    var = n_col * r * (1.0 - r) / gap**2
    return t, var
