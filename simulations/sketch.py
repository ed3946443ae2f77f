"""Fast simulators of Apple's sketches, CMS and HCMS (docs/mechanisms.md#cms).

Each draws the sketch counts the aggregator would hold after n users'
reports, with the spec's actual (fixed) hash functions, from their exact
joint distribution, then reads the support counts of the domain values off
the sketch as :mod:`ldp.aggregator.sketch` does.

CMS
    The users of each value split multinomially over the k rows; T[j, i]
    row-j users have h_j(x) = i; ones[j, i] = Bin(T[j, i], p) +
    Bin(N_j − T[j, i], q). O(d·k + k·m), independent of n.
HCMS
    Each user's row and column are drawn (O(n), vectorized in chunks of
    users): A[j, l] users of cell (j, l) have H_m[l, h_j(x)] = +1 and
    B[j, l] have −1; ones[j, l] = Bin(A, p) + Bin(B, q). The per-cell split
    by sign has no closed multinomial form cheaper than drawing the cells.
"""

from __future__ import annotations

import numpy as np

from ldp.aggregator.sketch import HCMSAccumulator, gather_rows
from ldp.client.sketch import hadamard_sign_bits
from ldp.specs.sketch import CMS, HCMS

__all__ = ["cms_support_counts", "hcms_support_counts"]

_CHUNK_USERS = 1 << 20


def cms_support_counts(spec: CMS, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows per value (multinomial), then the ones of every (row, position) cell (two binomials)."""
    k, m = spec.k, spec.m
    positions = spec.domain_positions  # (d, k)
    per_row = rng.multinomial(counts, np.full(k, 1.0 / k))  # (d, k) users of value x in row j
    cells = (np.arange(k)[None, :] * m + positions).ravel()
    true_ones = np.bincount(cells, weights=per_row.ravel(), minlength=k * m).reshape(k, m).astype(np.int64)
    rows = per_row.sum(axis=0)
    ones = rng.binomial(true_ones, float(spec.p)) + rng.binomial(rows[:, None] - true_ones, float(spec.q))
    return gather_rows(ones.astype(np.int64), positions)


def hcms_support_counts(spec: HCMS, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each user's cell (row, column), the sign of its Hadamard entry, then two binomials per cell."""
    k, m = spec.k, spec.m
    positions = spec.domain_positions
    size = k * m
    plus = np.zeros(size, dtype=np.int64)
    reports = np.zeros(size, dtype=np.int64)
    users = np.repeat(np.arange(counts.size), counts)
    for start in range(0, users.size, _CHUNK_USERS):
        values = users[start : start + _CHUNK_USERS]
        rows = rng.integers(k, size=values.size)
        columns = rng.integers(m, size=values.size)
        signs = hadamard_sign_bits(columns, positions[values, rows]).astype(bool)
        cells = rows * m + columns
        reports += np.bincount(cells, minlength=size)
        plus += np.bincount(cells[signs], minlength=size)
    ones = rng.binomial(plus, float(spec.p)) + rng.binomial(reports - plus, float(spec.q))
    accumulator = HCMSAccumulator.from_counts(
        spec, reports.reshape(k, m), ones.reshape(k, m).astype(np.int64)
    )
    return accumulator.support_counts
