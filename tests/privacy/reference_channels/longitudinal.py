"""Reference channel of the longitudinal chains (one report)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import ldp.specs.longitudinal

from . import distribution_ratio


def chain_channel(spec, x):
    """A longitudinal chain's one report: round 1 (p1, q1) then round 2 (p2, q2), summed over the memo."""
    d = spec.domain_size
    if isinstance(spec, ldp.specs.longitudinal.LGRR):  # memo m w.p. p1 (m = x) or q1, then GRR(p2) of m
        first = [spec.p1 if m == x else spec.q1 for m in range(d)]
        return [sum(first[m] * (spec.p2 if y == m else spec.q2) for m in range(d)) for y in range(d)]
    out = {}
    for bits in itertools.product((0, 1), repeat=d):  # each bit: memo bit 1 w.p. p1 or q1, then p2 or q2
        prob = Fraction(1)
        for i, b in enumerate(bits):
            memo = spec.p1 if i == x else spec.q1
            one = memo * spec.p2 + (1 - memo) * spec.q2
            prob *= one if b else 1 - one
        out[bits] = prob
    return out


EXACT_RATIO = {ldp.specs.longitudinal.LongitudinalChain: distribution_ratio(chain_channel)}
