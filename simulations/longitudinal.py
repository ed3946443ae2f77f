"""Fast simulators of the longitudinal chains: the support counts of one round without encoding anyone.

Every user reports once per round and each report's law given the user's
value is the composite channel (A, B) of :func:`ldp.chain_math.chain_support`
(the memo is drawn once per value, so over users of one round it is as fresh
as round 2). Exact draws:

- L-GRR: one report is randomized response with keep A and every other value
  B, i.e. the value itself with probability 1 − kB, else a uniform value (its
  own included), as GRR's simulator;
- the unary chains: bit v is 1 with A for holders of v and B for the others,
  independently, so C_v = Bin(n_v, A) + Bin(n − n_v, B).

A panel of rounds in which a user keeps a value re-uses that user's memo;
per round the counts are still distributed as here (the memo and the round
are independent of the other users'), which is what a per-round estimate
needs. ``ldp simulate --mode faithful`` runs the real client instead.
"""

from __future__ import annotations

import numpy as np

from ldp.specs.longitudinal import LGRR, LongitudinalChain

__all__ = ["chain_support_counts"]


def chain_support_counts(spec: LongitudinalChain, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Support count C_v of every value after n = Σ counts reports of ``spec`` (exact joint for L-GRR, margins otherwise).

    Parameters
    ----------
    spec : LongitudinalChain
    counts : numpy.ndarray of int
        n_v, users holding each value (in ``spec.domain`` order).
    rng : numpy.random.Generator
        Seeded generator (simulation only).
    """
    counts = np.asarray(counts, dtype=np.int64)
    a, b = spec.p_star, spec.q_star
    if isinstance(spec, LGRR):
        k = spec.domain_size
        spread = rng.binomial(counts, min(1.0, k * b))  # k·B = 1 − (A − B): the uniform part
        reported = counts - spread
        reported += rng.multinomial(int(spread.sum()), np.full(k, 1.0 / k))
        return reported.astype(np.int64)
    n = int(counts.sum())
    return (rng.binomial(counts, a) + rng.binomial(n - counts, b)).astype(np.int64)
