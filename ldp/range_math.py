"""Pure math of range queries over an ordered domain: tree layouts, query weights, exact variances, quantiles.

Two estimators of the leaf counts x (one per domain value, in order) are
linear in the aggregated statistics, so every range answer is w·θ̂ + c for
a weight vector w over the estimated coefficients θ̂ and a constant c (a
multiple of the known n). The variance of such an answer is exact and
computed here (docs/range-queries.md#variance):

hierarchy (B-ary tree of levels 1..h, OUE at the sampled level)
    θ̂ = ĉ, one count estimate per node, ĉ = h(C − q·n_l)/(p − q).
    Var[w·ĉ] = n·V₀·Σw² + (V₁ + h − V₀)·Σ_a w_a² c_a − Σ_v x_v (Aᵀw)_v²,
    V₁ = h·p(1 − p)/(p − q)², V₀ = h·q(1 − q)/(p − q)², c = Ax the true
    node counts (A: node × leaf membership).
haar (Haar coefficients of levels 0..h−1, Hadamard randomized response)
    θ̂ = ĉ, one estimate per coefficient c_a = #left half − #right half.
    Var[w·ĉ] = n·h/(2p − 1)²·Σw² − Σ_v x_v (Gᵀw)_v², G[a, v] = ±1 on a's
    halves, 0 outside.

The data terms use the true counts x; an estimate plugs in its own
(non-negative) leaf estimates.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ldp.errors import ParameterError

__all__ = [
    "RangeQuery",
    "cdf_quantiles",
    "haar_signs",
    "haar_synthesis",
    "hierarchy_depth",
    "hierarchy_membership",
    "hierarchy_projection",
    "isotonic",
    "parse_range",
    "rank_error",
]

#: A range [lo, hi] of domain indices, both ends included.
RangeQuery = tuple[int, int]


def hierarchy_depth(domain_size: int, branching: int) -> int:
    """h = ⌈log_B D⌉: the levels 1..h below the root (B^h ≥ D leaves), at least 1."""
    depth, width = 1, branching
    while width < domain_size:
        depth += 1
        width *= branching
    return depth


@functools.lru_cache(maxsize=16)
def hierarchy_membership(domain_size: int, branching: int) -> np.ndarray:
    """A: (nodes of levels 1..h) × D matrix of 0/1, row (l, a) marking the real leaves under node a of level l.

    Rows are ordered level by level (B^l nodes at level l, padded leaves dropped
    from the columns); read-only.
    """
    h = hierarchy_depth(domain_size, branching)
    leaves = np.arange(domain_size)
    rows = []
    for level in range(1, h + 1):
        width = branching**level
        node = leaves // branching ** (h - level)
        block = np.zeros((width, domain_size))
        block[node, leaves] = 1.0
        rows.append(block)
    out = np.vstack(rows)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=16)
def hierarchy_projection(domain_size: int, branching: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, g): the constrained least-squares leaves are z = P·ĉ + n·g.

    z minimises ‖Az − ĉ‖² subject to Σz = n (Hay, Rastogi, Miklau, Suciu: the
    consistent estimate of a tree whose nodes have equal noise variance,
    with the root known exactly): with G = (AᵀA)⁻¹ and u = G1,
    z = G Aᵀĉ − u(1ᵀG Aᵀĉ − n)/(1ᵀu). Read-only arrays.
    """
    a = hierarchy_membership(domain_size, branching)
    gram = np.linalg.inv(a.T @ a)
    u = gram.sum(axis=1)
    total = float(u.sum())
    base = gram @ a.T
    projection = base - np.outer(u, base.sum(axis=0)) / total
    g = u / total
    projection.setflags(write=False)
    g.setflags(write=False)
    return projection, g


def haar_levels(leaves: int) -> int:
    """h = log2 of the (power of two) padded leaf count: coefficient levels 0..h−1."""
    return max(int(leaves).bit_length() - 1, 1)


@functools.lru_cache(maxsize=16)
def haar_signs(domain_size: int, leaves: int) -> np.ndarray:
    """G: (leaves − 1 coefficients) × D of ±1/0: leaf v's sign in coefficient a (+1 left half, −1 right half).

    Coefficients are ordered level by level, 2^l at level l (l = 0..h−1),
    node a of level l covering leaves [a·m, (a + 1)·m), m = leaves/2^l.
    Read-only.
    """
    h = haar_levels(leaves)
    v = np.arange(domain_size)
    rows = []
    for level in range(h):
        width = 1 << level
        span = leaves >> level
        node = v // span
        sign = np.where((v % span) < span // 2, 1.0, -1.0)
        block = np.zeros((width, domain_size))
        block[node, v] = sign
        rows.append(block)
    out = np.vstack(rows)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=16)
def haar_synthesis(domain_size: int, leaves: int) -> np.ndarray:
    """S: D × (leaves − 1): leaf counts are n/leaves + S·c for the Haar coefficients c (count scale).

    A node's halves hold (N ± c)/2 of its N users, so leaf v's count is
    n/2^h + Σ_l s_l(v)·c_l(v)/2^(h − l). Read-only.
    """
    h = haar_levels(leaves)
    scale = np.concatenate([np.full(1 << level, 2.0 ** -(h - level)) for level in range(h)])
    out = (haar_signs(domain_size, leaves) * scale[:, None]).T.copy()
    out.setflags(write=False)
    return out


def range_indicator(queries: list[RangeQuery], domain_size: int) -> np.ndarray:
    """D × Q matrix of 0/1: column q marks the leaves of range q."""
    out = np.zeros((domain_size, len(queries)))
    for column, (lo, hi) in enumerate(queries):
        out[lo : hi + 1, column] = 1.0
    return out


def linear_variance(
    weights: np.ndarray, *, n: int, flat: float, node_extra: float, members: np.ndarray, leaves: np.ndarray
) -> np.ndarray:
    """Var of w·θ̂ for each column w of ``weights`` (coefficients × Q), exactly (module docstring).

    ``flat``: the per-user variance term of every coefficient (hierarchy: V₀,
    haar: h/(2p − 1)²); ``node_extra``: the extra term per user inside a node
    (hierarchy: V₁ + h − V₀; haar: 0); ``members``: A or G (coefficients × D);
    ``leaves``: the leaf counts x (true, or an estimate plugged in).
    """
    w2 = weights**2
    x = np.clip(np.asarray(leaves, dtype=float), 0.0, None)
    var = n * flat * w2.sum(axis=0)
    if node_extra:
        var = var + node_extra * ((np.abs(members) @ x) @ w2)
    var = var - x @ (members.T @ weights) ** 2
    return np.maximum(var, 0.0)


def parse_range(text: str) -> tuple[str, str]:
    """``"LO:HI"`` → (LO, HI) as text (both ends included); a ParameterError naming the form otherwise."""
    lo, sep, hi = str(text).partition(":")
    if not sep or not lo.strip() or not hi.strip():
        raise ParameterError(f"a range is LO:HI (two domain values, both included), got {text!r}")
    return lo.strip(), hi.strip()


def isotonic(values: Any) -> np.ndarray:
    """The non-decreasing sequence closest to ``values`` in squared error (pool adjacent violators)."""
    means: list[float] = []
    sizes: list[int] = []
    for value in np.asarray(values, dtype=float).tolist():
        mean, size = value, 1
        while means and means[-1] > mean:
            prev, count = means.pop(), sizes.pop()
            mean = (prev * count + mean * size) / (count + size)
            size += count
        means.append(mean)
        sizes.append(size)
    return np.repeat(np.array(means), np.array(sizes))


def cdf_quantiles(leaf_estimates: Any, quantiles: Any, n: float) -> np.ndarray:
    """Leaf indices of the ``quantiles`` from the monotone estimated CDF.

    The prefix sums x̂_0 + … + x̂_u are the range answers [0, u] (far less
    noisy than single leaves, so leaves are not clipped one by one); F̂ is
    their isotonic (least-squares non-decreasing) fit over n, which a running
    maximum would bias upwards. The q-quantile is the first leaf where F̂
    reaches q (the last leaf when none does).
    """
    x = np.asarray(leaf_estimates, dtype=float)
    if n <= 0:
        return np.zeros(len(np.atleast_1d(quantiles)), dtype=np.int64)
    cdf = isotonic(np.cumsum(x) / float(n))
    idx = np.searchsorted(cdf, np.asarray(quantiles, dtype=float) - 1e-12, side="left")
    return np.minimum(idx, x.size - 1).astype(np.int64)


def rank_error(true_counts: Any, indices: Any, quantiles: Any) -> np.ndarray:
    """Rank error of answered quantiles: the distance from q to [F(v − 1), F(v)], F the true CDF.

    0 when v is a correct q-quantile of the data; otherwise how far (as a
    fraction of n) the true rank of v is from q.
    """
    counts = np.asarray(true_counts, dtype=float)
    cdf = np.cumsum(counts) / counts.sum()
    v = np.asarray(indices, dtype=np.int64)
    q = np.asarray(quantiles, dtype=float)
    upper = cdf[v]
    lower = np.where(v > 0, cdf[np.maximum(v - 1, 0)], 0.0)
    return np.maximum(0.0, np.maximum(lower - q, q - upper))
