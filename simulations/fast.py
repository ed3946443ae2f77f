"""Fast path: draw the aggregated counts from their exact distributions.

Instead of encoding every user, each function takes the true number of users
per value (``true_counts``) and draws what the aggregator would hold after
collecting their reports: the support count of every value (frequency
oracles) or the per-cohort report and bit counts (RAPPOR). Cost is O(D) per
collection for frequency oracles and O(D·m + m·k) for RAPPOR, independent of
the number of users.

Exactness, mechanism by mechanism (docs/mechanisms.md#frequency-oracles,
docs/mechanisms.md#rappor):

GRR / BinaryRR
    Exact joint distribution. GRR is equivalently "keep the value with
    probability 1 − D·q, otherwise report a uniform value over all D" (the
    uniform draw lands on the true value with probability q, so the keep
    probability is 1 − D·q + q = p). Per value v, U_v ~ Bin(n_v, D·q) users
    are uniformized; their ΣU_v reports are one multinomial over D values.
SUE / OUE
    Exact joint distribution: bits are independent given the values, so
    C_v = Bin(n_v, p) + Bin(n − n_v, q), independently over v.
OLH / BLH
    Exact *marginals*: a report supports v with probability p* if the user
    holds v and q* otherwise (q* includes the hash family's exact collision
    probability), independently over users, so
    C_v = Bin(n_v, p*) + Bin(n − n_v, q*). The correlation between the
    support counts of different values (through shared hash seeds) is NOT
    reproduced: per-value errors, hence the expected MSE, MAE and every other
    per-value metric are exact, but metrics of the joint error (total
    variation, top-k sets, max error) are drawn with independent errors.
RAPPOR
    Exact joint distribution for one report per client (as google/rappor's
    tests/gen_counts.R): users of each value split multinomially over the m
    cohorts; T_ij is the number of cohort-j users whose Bloom bit i is set;
    c_ij = Bin(T_ij, P[S=1|B=1]) + Bin(N_j − T_ij, P[S=1|B=0]).

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha. "Locally Differentially Private
   Protocols for Frequency Estimation". USENIX Security 2017.
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014;
   google/rappor tests/gen_counts.R (GenerateCounts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.errors import InputError
from ldp.frequency_math import unbiased_frequency
from ldp.plugins import implementation
from ldp.specs import GRR, FrequencySpec, LocalHashing, Rappor, UnaryEncoding

__all__ = [
    "frequency_fast_estimate",
    "frequency_support_counts",
    "grr_support_counts",
    "pure_oracle_support_counts",
    "rappor_counts",
    "rappor_true_bits",
]


def _check_counts(true_counts: Any, size: int) -> np.ndarray:
    counts = np.asarray(true_counts, dtype=np.int64)
    if counts.shape != (size,):
        raise InputError(
            f"true_counts must hold one count per domain value ({size}), got shape {counts.shape}"
        )
    if counts.size and counts.min() < 0:
        raise InputError("true_counts must be >= 0")
    return counts


def frequency_support_counts(spec: FrequencySpec, true_counts: Any, rng: np.random.Generator) -> np.ndarray:
    """Support count C_v of every domain value after n = Σ true_counts reports.

    Parameters
    ----------
    spec : FrequencySpec
        GRR, BinaryRR, SUE, OUE, OLH or BLH.
    true_counts : array_like of int
        n_v, users holding each domain value (in ``spec.domain`` order).
    rng : numpy.random.Generator
        Seeded generator (simulation only).

    Returns
    -------
    numpy.ndarray of int64
        C_v, as an accumulator's ``support_counts`` would hold them.
    """
    counts = _check_counts(true_counts, spec.domain_size)
    return implementation(spec, "fast_simulator")(spec, counts, rng)


def frequency_fast_estimate(spec: FrequencySpec, true_counts: Any, rng: np.random.Generator) -> np.ndarray:
    """Estimated frequencies (``spec.domain`` order) from the mechanism's fast-simulated aggregate.

    A fast simulator gives support counts C_v, estimated by the spec's own
    ``unbiased_frequencies`` when it states one (LOLOHA's, conditioned on its
    pool), else the pure oracle's f̂_v = (C_v/n − q*)/(p* − q*); or, for an oracle whose estimator is not
    that one (dBitFlip's), the accumulator holding the simulated counts,
    whose own estimate is returned.
    """
    counts = _check_counts(true_counts, spec.domain_size)
    drawn = implementation(spec, "fast_simulator")(spec, counts, rng)
    if isinstance(drawn, np.ndarray):
        own = getattr(spec, "unbiased_frequencies", None)  # an oracle with its own estimator of C (LOLOHA's)
        if own is not None:
            return own(drawn, int(counts.sum()))
        return unbiased_frequency(drawn, int(counts.sum()), spec.p_star, spec.q_star)
    from ldp.simulations.faithful import frequency_estimates

    return frequency_estimates(spec, drawn)


def grr_support_counts(spec: GRR, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A user keeps its value with probability 1 − q·d, else reports a uniform one (its own included)."""
    d = spec.domain_size
    uniformize = float(spec.q * d)  # = 1 − (p − q) ≤ 1
    spread = rng.binomial(counts, uniformize)
    reported = counts - spread
    reported += rng.multinomial(int(spread.sum()), np.full(d, 1.0 / d))
    return reported.astype(np.int64)


def pure_oracle_support_counts(
    spec: UnaryEncoding | LocalHashing, counts: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A pure frequency oracle: holders support their value w.p. p*, every other user w.p. q*."""
    n = int(counts.sum())
    hits = rng.binomial(counts, spec.p_star)
    false_hits = rng.binomial(n - counts, spec.q_star)
    return (hits + false_hits).astype(np.int64)


def rappor_true_bits(spec: Rappor, values: Sequence[Any]) -> np.ndarray:
    """B[v, j, i] = 1 iff value v sets Bloom bit i in cohort j (uint8, read-only).

    Built from the aggregator's cached design matrix
    (:func:`ldp.aggregator.bloom_design.design_matrix`), so it depends on
    the spec's hashing parameters only: one build serves every ε of a sweep.
    """
    from ldp.aggregator.bloom_design import design_matrix

    m, k = spec.num_cohorts, spec.num_bits
    x = design_matrix(spec, list(values))  # (m·k, D), column v = value v
    bits = np.ascontiguousarray(x.T.toarray().astype(np.uint8).reshape(len(values), m, k))
    bits.setflags(write=False)
    return bits


def rappor_counts(
    spec: Rappor, values: Sequence[Any], true_counts: Any, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cohort report counts N_j and bit counts c_ij for one report per user.

    Parameters
    ----------
    spec : Rappor
    values : sequence
        The distinct true values.
    true_counts : array_like of int
        Users holding each of ``values``.
    rng : numpy.random.Generator

    Returns
    -------
    cohort_counts : numpy.ndarray, shape (m,)
    bit_counts : numpy.ndarray, shape (m, k)
    """
    counts = _check_counts(true_counts, len(values))
    m = spec.num_cohorts
    per_cohort = rng.multinomial(counts, np.full(m, 1.0 / m))  # (D, m)
    cohort_counts = per_cohort.sum(axis=0).astype(np.int64)
    from ldp.aggregator.bloom_design import design_matrix

    x = design_matrix(spec, list(values))  # (m·k, D), cached per hashing parameters and values
    k = spec.num_bits
    rows = x.indices.astype(np.int64)
    cols = np.repeat(np.arange(x.shape[1]), np.diff(x.indptr))
    # T_ij = Σ_v (users of v in cohort j)·B[v, j, i]: one weighted count per nonzero of the design
    weights = per_cohort[cols, rows // k].astype(np.float64)
    true_ones = np.rint(np.bincount(rows, weights=weights, minlength=m * k)).astype(np.int64).reshape(m, k)
    ones = rng.binomial(true_ones, float(spec.prob_one_given_one))
    ones += rng.binomial(cohort_counts[:, None] - true_ones, float(spec.prob_one_given_zero))
    return cohort_counts, ones.astype(np.int64)
