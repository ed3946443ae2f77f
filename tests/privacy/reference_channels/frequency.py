"""Reference channel of GRR, the unary encodings (SUE, OUE) and local hashing (OLH, BLH)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import ldp

from . import distribution_ratio, worst_ratio


def grr_channel(spec, x):
    """P[output = y | input x] for every y, from the spec's p and q."""
    return [spec.p if y == x else spec.q for y in range(spec.domain_size)]


def ue_channel(spec, x):
    """P[bit vector | x] for all 2^d vectors (small d)."""
    d = spec.domain_size
    out = {}
    for bits in itertools.product((0, 1), repeat=d):
        prob = Fraction(1)
        for i, b in enumerate(bits):
            one = spec.p if i == x else spec.q
            prob *= one if b else 1 - one
        out[bits] = prob
    return out


def lh_channel(spec, x, hashed):
    """P[y | x, hash] for a fixed hash (the seed is independent of x)."""
    h = hashed[x]
    return [spec.p if y == h else spec.q for y in range(spec.g)]


def lh_ratio(spec, d):
    # A hash matters only through which inputs collide: buckets from range(min(g, d))
    # already realize every collision pattern of d inputs.
    ratio = Fraction(0)
    for hashed in itertools.product(range(min(spec.g, d)), repeat=d):
        ratio = max(ratio, worst_ratio([lh_channel(spec, x, hashed) for x in range(d)]))
    return ratio


EXACT_RATIO = {
    ldp.GRR: distribution_ratio(grr_channel),
    ldp.specs.UnaryEncoding: distribution_ratio(ue_channel),
    ldp.specs.LocalHashing: lh_ratio,
}
