"""Reference channel of LOLOHA (one report, under the worst hash of the public pool)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import ldp.specs.loloha

from . import worst_ratio


def loloha_channel(spec, bucket):
    """P[y | the user's value hashes to ``bucket``]: GRR(p₁) over g memoized, then GRR(p₂) of the memo."""
    g = spec.g
    q1, q2 = (1 - spec.p1) / (g - 1), (1 - spec.p2) / (g - 1)
    same = (
        spec.p1 * spec.p2 + (1 - spec.p1) * q2
    )  # y = bucket: memo kept then kept, or memo moved then moved back
    other = spec.p1 * q2 + q1 * spec.p2 + (g - 2) * q1 * q2  # y ≠ bucket
    return [same if y == bucket else other for y in range(g)]


def loloha_ratio(spec, d):
    # the public pool's hash index is independent of the value: the worst hash (inputs in different buckets) rules
    ratio = Fraction(0)
    for hashed in itertools.product(range(min(spec.g, d)), repeat=d):
        ratio = max(ratio, worst_ratio([loloha_channel(spec, hashed[x]) for x in range(d)]))
    return ratio


EXACT_RATIO = {ldp.specs.loloha.LOLOHA: loloha_ratio}
