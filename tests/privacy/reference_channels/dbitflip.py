"""Reference channel of dBitFlip (one report)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from ldp.specs.dbitflip import DBitFlip

from . import distribution_ratio


def dbitflip_channel(spec, x):
    """P[(sampled buckets, sent bits) | x]: a uniform d-subset, then bit j is 1 w.p. p′ (j = x) or q′ (j ≠ x)."""
    d, b = spec.d, spec.domain_size
    out = {}
    for sampled in itertools.combinations(range(b), d):
        for bits in itertools.product((0, 1), repeat=d):
            prob = Fraction(1, math.comb(b, d))
            for j, bit in zip(sampled, bits):
                one = spec.sent_one if j == x else spec.sent_zero
                prob *= one if bit else 1 - one
            out[(sampled, bits)] = prob
    return out


EXACT_RATIO = {DBitFlip: distribution_ratio(dbitflip_channel)}
