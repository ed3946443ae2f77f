"""Reference channel of the sketches CMS and HCMS (one row: the row is independent of the value)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import ldp
import ldp.specs.sketch

from . import worst_ratio


def sketch_channel(spec, x, hashed):
    """P[output | x] within one sketch row (the row is independent of x) when value i hashes to hashed[i]."""
    h, m = hashed[x], spec.m
    if isinstance(spec, ldp.CMS):  # the m bits: bit h is 1 with p, every other bit with q = 1 - p
        out = {}
        for bits in itertools.product((0, 1), repeat=m):
            prob = Fraction(1)
            for i, b in enumerate(bits):
                one = spec.p if i == h else spec.q
                prob *= one if b else 1 - one
            out[bits] = prob
        return out
    sign = [
        1 - bin(col & h).count("1") % 2 for col in range(m)
    ]  # HCMS: (column, bit), bit 1 for H[col, h] = +1
    return {
        (col, b): Fraction(1, m) * (spec.p if b == sign[col] else spec.q) for col in range(m) for b in (0, 1)
    }


def sketch_ratio(spec, d):
    ratio = Fraction(0)
    small = type(spec)(spec.domain, spec.epsilon, k=1, m=4, p=spec.p)  # 2^4 outputs; the ratio is m's
    for hashed in itertools.product(range(min(small.m, d)), repeat=d):
        ratio = max(ratio, worst_ratio([sketch_channel(small, x, hashed) for x in range(d)]))
    return ratio


EXACT_RATIO = {ldp.specs.sketch.SketchSpec: sketch_ratio}
