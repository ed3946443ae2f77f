"""RAPPOR decoding, step 2: the Bloom design matrix of a candidate list.

Row ``j·k + i`` of the (m·k, M) 0/1 matrix is 1 in column s where candidate s
sets Bloom bit i in cohort j (docs/mechanisms.md#rappor-decoding).

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response". ACM CCS 2014.
.. [2] google/rappor, analysis/R/decode.R (the candidate map).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse

from ldp.aggregator.rappor_counts import known_size
from ldp.errors import ParameterError
from ldp.specs.rappor import Rappor

__all__ = ["design_matrix", "unique_candidates"]


def unique_candidates(candidates: Sequence[Any]) -> list[Any]:
    """The candidates without duplicates (by text), first occurrence kept.

    Raises
    ------
    ParameterError
        ``candidates`` is a single string or bytes value.
    """
    if isinstance(candidates, (str, bytes)):
        raise ParameterError("candidates must be a sequence of values, not a single string")
    out: list[Any] = []
    seen: set[str] = set()
    for value in candidates:
        key = str(value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def design_matrix(spec: Rappor, candidates: Sequence[Any]) -> scipy.sparse.csc_matrix:
    """The (m·k, M) 0/1 matrix: row ``j·k + i`` is 1 where candidate s sets bit i in cohort j.

    Uses :meth:`ldp.Rappor.bit_positions`; two hashes landing on one bit give
    a single 1.
    """
    m, k = spec.num_cohorts, known_size(spec.num_bits, "num_bits")
    rows: list[int] = []
    cols: list[int] = []
    for s, value in enumerate(candidates):
        for j in range(m):
            base = j * k
            for pos in set(spec.bit_positions(value, j)):
                rows.append(base + pos)
                cols.append(s)
    data = np.ones(len(rows), dtype=np.float64)
    x = scipy.sparse.csc_matrix(
        (data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(m * k, len(candidates)),
    )
    x.sum_duplicates()
    x.data[:] = 1.0
    return x
