"""dBitFlip's fast simulator: the accumulator's counts N_v, O_v without encoding anyone.

Exact joint distribution (docs/longitudinal/dbitflip.md#simulation). A
user's d sampled buckets are a uniform d-subset of [0, b), independent of
its value, revealed bucket by bucket: after buckets 0, …, j − 1, a user with
r buckets still to sample takes bucket j with probability r/(b − j), and the
rest stays uniform. The users are counted in cells by r only:

- ``done[r]``: users whose value x < j;
- ``pending[r]``: users with x ≥ j (their choices so far never depended on
  which x ≥ j they hold).

At bucket j the n_j users of value j are a uniform draw without replacement
from ``pending`` (multivariate hypergeometric over its cells); in every cell
the users taking j are binomial. Of those, H_j hold j and G_j do not:
N_j = H_j + G_j and O_j = Bin(H_j, p′) + Bin(G_j, q′) (one report per user,
its memoized bits flipped with γ, as the batch encoder). The cost is b NumPy
steps over d + 1 cells, whatever the number of users; above b·(d + 1) =
:data:`JOINT_LIMIT` the exact margins N_v = Bin(n_v, d/b) + Bin(n − n_v, d/b)
are drawn independently instead (per-value metrics exact, joint ones not,
as for OLH).
"""

from __future__ import annotations

import numpy as np

from ldp.aggregator.dbitflip import DBitFlipAccumulator
from ldp.specs.dbitflip import DBitFlip

__all__ = ["JOINT_LIMIT", "dbitflip_counts"]

#: Largest b·(d + 1) for the exact joint draw (above it: exact margins, independent).
JOINT_LIMIT = 1 << 22


def _takers(rng: np.random.Generator, cells: np.ndarray, left: int) -> np.ndarray:
    """How many users of each cell (r buckets to sample) take the current bucket, ``left`` buckets remaining."""
    r = np.arange(cells.size, dtype=np.float64)
    return rng.binomial(cells, np.minimum(r / left, 1.0)).astype(np.int64)  # cells with r > left are empty


def _sampled_joint(
    spec: DBitFlip, counts: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(H, G): per bucket j, the users of value j and the others whose sampled buckets include j."""
    b, d = spec.domain_size, spec.d
    n = int(counts.sum())
    done = np.zeros(d + 1, dtype=np.int64)
    pending = np.zeros(d + 1, dtype=np.int64)
    pending[d] = n
    holders = np.zeros(b, dtype=np.int64)
    others = np.zeros(b, dtype=np.int64)
    for j in range(b):
        left = b - j
        mine = np.zeros(d + 1, dtype=np.int64)
        if counts[j]:
            cells = np.flatnonzero(pending)
            mine[cells] = rng.multivariate_hypergeometric(pending[cells], int(counts[j]), method="marginals")
            pending -= mine
        take_mine, take_pending, take_done = (_takers(rng, c, left) for c in (mine, pending, done))
        holders[j] = int(take_mine.sum())
        others[j] = int(take_pending.sum() + take_done.sum())
        for cells, taken in ((mine, take_mine), (pending, take_pending), (done, take_done)):
            cells -= taken
            cells[:-1] += taken[1:]
        done += mine
    return holders, others


def dbitflip_counts(spec: DBitFlip, counts: np.ndarray, rng: np.random.Generator) -> DBitFlipAccumulator:
    """The accumulator after n = Σ counts one-report users (exact joint draw, or exact margins when large)."""
    counts = np.asarray(counts, dtype=np.int64)
    b, d = spec.domain_size, spec.d
    if b * (d + 1) > JOINT_LIMIT:
        n = int(counts.sum())
        share = d / b
        holders = rng.binomial(counts, share).astype(np.int64)
        others = rng.binomial(n - counts, share).astype(np.int64)
    else:
        holders, others = _sampled_joint(spec, counts, rng)
    ones = rng.binomial(holders, float(spec.sent_one)) + rng.binomial(others, float(spec.sent_zero))
    return DBitFlipAccumulator.from_counts(spec, holders + others, ones, int(counts.sum()))
