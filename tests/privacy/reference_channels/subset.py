"""Reference channel of subset selection."""

from __future__ import annotations

import itertools
import math

import ldp

from . import distribution_ratio


def ss_channel(spec, x):
    """P[subset | x] for every omega-subset: it holds x w.p. p, the other members uniform without replacement."""
    d, w = spec.domain_size, spec.omega
    holding, other = spec.p / math.comb(d - 1, w - 1), (1 - spec.p) / math.comb(d - 1, w)
    return {s: holding if x in s else other for s in itertools.combinations(range(d), w)}


EXACT_RATIO = {ldp.SubsetSelection: distribution_ratio(ss_channel)}
