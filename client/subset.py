"""Subset selection encoders: one value on the device, and the vectorized batch (docs/mechanisms.md#ss).

A report is a set of ω domain values, sent as a d-bit vector. The client
draws one exact coin for "the subset holds the true value x" (probability p,
the spec's exact fraction), then the k = ω − 1 (or ω) other members
uniformly without replacement from the d − 1 values other than x. Other
value o stands for domain index o + (o ≥ x).

The single encoder draws the coin, then one uniform rank below C(N, k)
(N = d − 1), unranked to its k-subset
(:func:`ldp.client.report_bits.uniform_subset`), on the CSPRNG's bits: about
the report's entropy plus 4 bits. The batch encoder draws the others by
Floyd's algorithm [1]_ on many users at once with a random source's exact
samplers: for j = N − k, …, N − 1 draw t uniform in [0, j] and add t, or j
when t is already in the set. Floyd's draws come in order, so they read at
least log2 of the ordered count (5.2× a report's entropy at d = 1,024,
ε = 1): a secure batch large and dense enough (:func:`uses_tree`) draws the
same distribution unordered, near the entropy, with
:mod:`ldp.client.subset_tree`.

References
----------
.. [1] J. Bentley, R. Floyd. "Programming pearls: a sample of brilliance".
   Communications of the ACM 30(9), 1987.
.. [2] M. Ye, A. Barg. IEEE Trans. Inf. Theory 64(8), 2018.
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import value_indices
from ldp.client.bits import BitSource, coins, sampler_for, uniform_below_each_bits, uniforms
from ldp.client.encoders import stateless_factory
from ldp.client.inversion import invert
from ldp.client.randomness import RandomSource, uniform_below_each
from ldp.client.report_bits import coin, uniform_subset
from ldp.client.sampling import lanes_to_packed
from ldp.client.subset_tree import LEAF, coin_bounds, subset_packed
from ldp.report import Report
from ldp.specs.subset import SubsetSelection

__all__ = ["SubsetEncoder", "SubsetShape", "subset_batch", "subset_encoder", "uniform_subsets", "uses_tree"]

#: Bytes of the unpacked subsets the batch encoder builds per chunk of users (rows × 8⌈d/8⌉): 1 MiB,
#: so that a chunk's random reads and writes stay in a core's cache.
_BLOCK_BYTES = 1 << 20


class SubsetEncoder:
    """Subset selection; see :class:`ldp.SubsetSelection`.

    One exact coin of probability p decides whether the subset holds the
    true value, then one uniform subset of the others (both on the CSPRNG's
    bits, :mod:`ldp.client.report_bits`).
    """

    def __init__(self, spec: SubsetSelection):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._d = spec.domain_size
        self._omega = spec.omega
        self._p = spec.p

    def encode(self, value: Any) -> Report:
        x = self.spec.index_of(value)
        holds = coin(self._p)
        others = uniform_subset(self._d - 1, self._omega - holds)
        lanes = 1 << x if holds else 0
        for o in others:
            lanes |= 1 << (o + (o >= x))
        return Report.of_encoder(self._fingerprint, bits=lanes_to_packed(lanes, self._d))


#: Subset selection's encoder factory (declared in :mod:`ldp.registry`).
subset_encoder = stateless_factory(SubsetEncoder)


@dataclasses.dataclass(frozen=True)
class SubsetShape:
    """What a batch of subsets draws: ω of the d domain indices, holding a row's own index with probability p.

    Subset selection's spec gives it (:meth:`of`). With p = ω/d the subsets
    are uniform ω-subsets of [0, d) whatever the rows' indices: a given
    subset holding the index has probability (ω/d)/C(d − 1, ω − 1), one not
    holding it ((d − ω)/d)/C(d − 1, ω), both 1/C(d, ω) (dBitFlip's buckets).
    """

    domain_size: int
    omega: int
    p: Fraction

    @classmethod
    def of(cls, spec: SubsetSelection) -> SubsetShape:
        return cls(spec.domain_size, spec.omega, spec.p)


#: A chunk's matrices (the padded subset matrix, the "past x" mask, the domain-order words), by column count.
_Work = tuple[np.ndarray, np.ndarray, np.ndarray]

#: Floyd steps whose uniform integers are drawn together, per chunk of users.
_STEPS = 64


def _step_batches(start: int, stop: int) -> list[range]:
    """Floyd's steps j in [start, stop) in batches of at most ``_STEPS`` whose bounds j + 1 read one unit size."""
    edges = sorted({start, stop, *(e for e in (1 << 8, 1 << 16, 1 << 32) if start < e < stop)})
    return [
        range(lo, min(lo + _STEPS, hi)) for a, hi in itertools.pairwise(edges) for lo in range(a, hi, _STEPS)
    ]


def _subset_rows(
    source: Any, x: np.ndarray, spec: SubsetShape, packed: np.ndarray, work: dict[int, _Work]
) -> None:
    """Write the subsets of the users with domain indices ``x`` into ``packed`` (len(x), ⌈d/8⌉).

    Floyd's algorithm over all users at once, on an unpacked byte matrix with
    one column per user and one row per other value o in [0, d − 1). The
    uniform integers of up to ``_STEPS`` steps are drawn together
    (:func:`uniform_below_each`, or its bit version for a :class:`BitSource`) and turned into flat matrix positions in
    bulk. A step then reads the drawn positions, copies that bit into row j
    (free until then: Floyd's values at earlier steps are < j) and sets the
    drawn positions (already set where they were taken, so only the free
    ones change). At the end other value o moves to domain index o + (o ≥ x)
    (one shift of the whole matrix, row v taking row v − 1 where v > x), x
    gets the "holds" coin, and the columns are packed. ``work`` keeps the
    matrices between chunks of one call (fresh pages cost more than clearing).
    """
    d, omega = spec.domain_size, spec.omega
    m = x.size
    population = d - 1
    rows = 8 * packed.shape[1]
    cols = -(-m // 8) * 8  # whole uint64 words per row: the end works on eight lanes at a time
    if cols in work:
        padded, past_x, domain = work[cols]
        padded.fill(0)
    else:
        padded = np.zeros((rows + 1, cols), dtype=np.uint8)
        past_x = np.zeros((rows, cols), dtype=bool)  # columns past m: lanes of no user, never read back
        domain = np.empty(rows * cols // 8, dtype=np.uint64)
        work[cols] = padded, past_x, domain
    matrix = padded[1:]  # row o: other value o; padded[:-1] is the matrix one row down
    flat = matrix.reshape(-1)
    users = np.arange(m, dtype=np.int64)
    holds = coins(source, spec.p, m)
    # users whose subset does not hold x draw omega others: Floyd's first step (the set is still empty)
    first = np.flatnonzero(~holds)
    if first.size:
        t = uniforms(source, population - omega + 1, first.size).astype(np.int64, copy=False)
        flat[t * cols + first] = 1
    for js in _step_batches(population - omega + 1, population):  # the steps every user takes
        bounds = np.arange(js.start + 1, js.stop + 1)
        if isinstance(source, BitSource):
            t = uniform_below_each_bits(source, bounds, m)
        else:
            t = uniform_below_each(source, bounds, m)
        drawn = np.multiply(t, cols, dtype=np.int64)
        drawn += users
        for row, j in enumerate(js):
            at = drawn[row]
            matrix[j, :m] = flat[at]
            flat[at] = 1
    # domain row v: other value v where v < x, v − 1 where v > x (bytes are 0 or 1: select by masking words)
    small = np.min_scalar_type(rows)
    np.greater(np.arange(rows, dtype=small)[:, None], x.astype(small), out=past_x[:, :m])
    mask = past_x.view(np.uint64)
    words = matrix.reshape(-1).view(np.uint64)
    np.bitwise_xor(words, padded[:-1].reshape(-1).view(np.uint64), out=domain)
    domain &= mask.reshape(-1)
    domain ^= words
    domain.view(np.uint8).reshape(-1)[x * cols + users] = holds
    planes = domain.reshape(rows // 8, 8, cols // 8)
    bits = planes[:, 0] << np.uint64(7)
    for k in range(1, 8):  # numpy.packbits order down the columns: the first row is the top bit
        bits |= planes[:, k] << np.uint64(7 - k)
    packed[...] = bits.view(np.uint8)[:, :m].T


#: The tree sampler serves specs of at least this domain whose subsets hold at least a share of it that falls
#: with the domain (:data:`TREE_MIN_SHARES`): its time grows with d, Floyd's with ω and, through its chunks
#: of users (a fixed number of matrix bytes), with d too.
TREE_MIN_DOMAIN = 48
#: (from this domain, the least share ω/d the tree serves), largest domain first. Measured with
#: ``benchmarks/bench_ss_paths.py`` (20,000 users, CPU medians of 5 alternating runs, load 3.4–3.9), the tree's
#: CPU over Floyd's on bits, once sparse subsets end the tree at pairs of leaves (ω·128/d ≤ 10,
#: :func:`~ldp.client.subset_tree.uses_pairs`): d = 256 0.94 at ω/d = 0.156, 1.10 at 0.121 (where Floyd reads
#: 1.98× the entropy), 1.21 at 0.070; d = 1,024 0.83 at 0.119, 0.94 at 0.069 (ε = 2.6, where Floyd reads 2.13×
#: the entropy, the tree 1.19×), 0.95–0.99 below (Floyd 1.17–1.91×: kept); d = 4,096 0.71 at 0.047 (ε = 3, Floyd
#: 2.27×), 0.81 at 0.018 (ε = 4, Floyd 1.80×, the tree 1.34×), 0.91 at 0.002 (ε = 6, ω = 10, where the tree
#: reads 2.09× the entropy, Floyd 1.30×); d = 2,048 (3 runs, load 3.4) 0.81 at 0.069, 0.86 at 0.047 (Floyd 2.27×),
#: 0.84 at 0.018 (Floyd 1.81×); d = 8,192 and 16,384 0.47–0.72 at 0.018–0.069. Below these shares Floyd reads at
#: most 2× the entropy on the grid measured (d = 256 to 4,096, ε = 1 to 6).
TREE_MIN_SHARES: tuple[tuple[int, Fraction], ...] = (
    (2048, Fraction(1, 64)),
    (1024, Fraction(1, 16)),
    (TREE_MIN_DOMAIN, Fraction(3, 20)),
)
#: Past this domain the tree's cached split tables and their lookup chains (counts within 6 σ × outcomes
#: within 12 σ a level, growing like d) would take more than about 100 MB: Floyd's algorithm serves larger
#: domains.
TREE_MAX_DOMAIN = 1 << 14


def uses_tree(spec: SubsetSelection | SubsetShape) -> bool:
    """Whether a secure batch of ``spec`` (of enough users) draws its subsets with the tree sampler."""
    d = spec.domain_size
    if not TREE_MIN_DOMAIN <= d <= TREE_MAX_DOMAIN:
        return False
    share = next(share for domain, share in TREE_MIN_SHARES if d >= domain)
    return spec.omega >= share * d


#: Leaves (users × leaves of :data:`~ldp.client.subset_tree.LEAF` positions) whose counts the tree sampler splits
#: together (fewer, larger draws: 2^18 took 10–20 % off its CPU against 2^16 at d = 1,024 and 4,096); it
#: draws their leaves by blocks of :data:`~ldp.client.subset_tree.LEAF_BLOCK`.
_TREE_ITEMS = 1 << 18


def _tree_batch(bits: BitSource, spec: SubsetShape, idx: np.ndarray) -> np.ndarray:
    """The secure path: the holds coin and the tree sampler (:mod:`ldp.client.subset_tree`), near the entropy."""
    d = spec.domain_size
    packed = np.empty((idx.size, (d + 7) // 8), dtype=np.uint8)
    holds = invert(bits, coin_bounds(spec.p), np.zeros(idx.size, dtype=np.int64), 2) == 0
    rows = max(1, _TREE_ITEMS // -(-d // LEAF))
    for start in range(0, idx.size, rows):
        stop = min(start + rows, idx.size)
        packed[start:stop] = subset_packed(bits, idx[start:stop], holds[start:stop], spec.omega, d)
    return packed


def subset_batch(spec: SubsetSelection, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """Subset selection for many users, exact (:func:`uniform_subsets` of the spec's ω, d and p)."""
    idx = value_indices(spec, values, indices)
    return ReportBatch(spec=spec.fingerprint, bits=uniform_subsets(rng, idx, SubsetShape.of(spec)))


def uniform_subsets(
    rng: RandomSource | BitSource | np.random.Generator, idx: np.ndarray, shape: SubsetShape
) -> np.ndarray:
    """Row i: ω of [0, d), holding ``idx[i]`` with probability p, the others uniform among the rest (exact).

    A CSPRNG source and at least :data:`~ldp.client.bits.ECONOMY_MIN_DRAWS`
    rows (:func:`~ldp.client.bits.sampler_for`) of a shape the tree serves
    (:func:`uses_tree`) take the tree sampler (:mod:`ldp.client.subset_tree`),
    which reads 1.1–1.35× the entropy a row needs; otherwise Floyd's
    algorithm, vectorized over rows, on that sampler: bits for a secure
    batch of sparse subsets (each uniform integer on about log2 of its bound,
    :func:`~ldp.client.bits.uniform_below_each_bits`), whole words for seeded
    generators and small batches.

    Returns
    -------
    numpy.ndarray
        (len(idx), ⌈d/8⌉) uint8 in :func:`numpy.packbits` order.
    """
    sampler = sampler_for(rng, idx.size)
    if isinstance(sampler, BitSource) and uses_tree(shape):
        return _tree_batch(sampler, shape, idx)
    return _floyd_batch(sampler, shape, idx)


def _floyd_batch(sampler: Any, shape: SubsetShape, idx: np.ndarray) -> np.ndarray:
    """Floyd's algorithm over the users in chunks of about :data:`_BLOCK_BYTES` of unpacked rows."""
    width = (shape.domain_size + 7) // 8
    rows = max(1, _BLOCK_BYTES // (8 * width))
    packed = np.empty((idx.size, width), dtype=np.uint8)
    work: dict[int, _Work] = {}
    for start in range(0, idx.size, rows):
        block = idx[start : start + rows]
        _subset_rows(sampler, block, shape, packed[start : start + block.size], work)
    return packed
