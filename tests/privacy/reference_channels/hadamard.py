"""Reference channel of Hadamard response."""

from __future__ import annotations

import ldp

from . import distribution_ratio


def hr_channel(spec, x):
    """P[y | x] for every output y, from the paper's layout: x's block and row of the Sylvester matrix."""
    from scipy.linalg import hadamard

    b, half = spec.block_size, spec.block_size // 2
    block, row = divmod(x, b - 1)
    favoured = {block * b + int(c) for c in (hadamard(b)[row + 1] == 1).nonzero()[0]}
    inside, outside = spec.p / half, (1 - spec.p) / (spec.outputs - half)
    return [inside if y in favoured else outside for y in range(spec.outputs)]


EXACT_RATIO = {ldp.HR: distribution_ratio(hr_channel)}
