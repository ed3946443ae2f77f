"""Exact per-report sampling that reads the CSPRNG bit by bit (Knuth–Yao).

A single report needs few random bits: GRR at d = 1,024, ε = 1 about 10,
a 1,024-bit OUE vector about 860. Drawing whole bytes per comparison (as
``secrets.randbelow`` does) reads several times that. Here every fresh coin
of a report comes from one :class:`BitReader`, which serves the CSPRNG's
bits most significant first and keeps the bits a draw leaves for the next
draw, and every draw is a Knuth–Yao walk that reads a bit only while the
outcome is undecided: at most H + 2 bits for a distribution of entropy H.

* :class:`KnuthYao` — any distribution given as groups of equally likely
  outcomes ``(count, probability of each)``, probabilities exact rationals.
* :func:`uniform`, :func:`coin` — its one-group and two-outcome cases.
* :func:`sample_lanes` — independent coins over bit lanes, drawn as runs of
  the likelier symbol (a run table of 256 outcomes, one walk a run).
* :func:`uniform_subset` — a uniform k-subset: one uniform rank below
  C(n, k), unranked in the combinatorial number system.

Keyed PRF streams (RAPPOR's permanent response, memoized mechanisms) keep
:mod:`ldp.client.sampling`'s byte samplers: a stored client must get the
same memoized answers after an upgrade.

References
----------
.. [1] D. E. Knuth, A. C. Yao. "The complexity of nonuniform random number
   generation". Algorithms and Complexity, Academic Press, 1976.
.. [2] T. S. Han, M. Hoshi. "Interval algorithm for random number
   generation". IEEE Trans. Information Theory 43(2), 1997.
.. [3] D. E. Knuth. The Art of Computer Programming, Vol. 4A, §7.2.1.3
   (the combinatorial number system).
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from math import comb

__all__ = [
    "RUN_CAP",
    "BitReader",
    "KnuthYao",
    "coin",
    "csprng_bits",
    "draw",
    "reading_from",
    "run_table",
    "sample_lanes",
    "uniform",
    "uniform_subset",
    "unrank_subset",
]

#: Longest run of the likelier symbol one walk of :func:`sample_lanes` draws.
RUN_CAP = 255

#: Bytes the process's reader asks ``os.urandom`` for at a time.
_CHUNK = 64


class BitReader:
    """Uniform bits from a byte source, most significant bit of each byte first.

    A byte is read (``source(chunk)``, then served in order) only when a bit
    is needed and none is left; the bits a draw leaves serve the next draw.
    ``bits_read`` counts the bits handed out. The reader is not thread-safe
    by itself: the samplers hold ``lock`` for a whole draw.

    Parameters
    ----------
    source : callable
        ``source(n)`` returns n random bytes.
    chunk : int
        Bytes asked for at a time (1 for a fixed test stream, so exactly the
        bytes the draws need are read).
    """

    def __init__(self, source: Callable[[int], bytes], chunk: int = 1):
        if chunk < 1:
            raise ValueError(f"chunk must be at least 1 byte, got {chunk}")
        self._source = source
        self._chunk = chunk
        self._buffer = b""
        self._offset = 0
        self._byte = 0
        self._left = 0
        self.bits_read = 0
        self.lock = threading.Lock()

    def bit(self) -> int:
        """The next bit."""
        if not self._left:
            if self._offset == len(self._buffer):
                self._buffer = self._source(self._chunk)
                self._offset = 0
                if not self._buffer:
                    raise ValueError("the byte source returned no bytes")
            self._byte = self._buffer[self._offset]
            self._offset += 1
            self._left = 8
        self._left -= 1
        self.bits_read += 1
        return (self._byte >> self._left) & 1


_process_reader: BitReader | None = None
_process_lock = threading.Lock()


def _drop_process_reader() -> None:
    global _process_reader
    _process_reader = None


# A forked child must not serve the bits its parent kept.
os.register_at_fork(after_in_child=_drop_process_reader)


def csprng_bits() -> BitReader:
    """The process's reader of ``os.urandom`` (made on first use, dropped in a forked child)."""
    global _process_reader
    reader = _process_reader
    if reader is None:
        with _process_lock:
            if _process_reader is None:
                _process_reader = BitReader(lambda n: os.urandom(n), _CHUNK)
            reader = _process_reader
    return reader


@contextmanager
def reading_from(source: Callable[[int], bytes]) -> Iterator[BitReader]:
    """Within the block, the per-report samplers read ``source`` one byte at a time (tests, vectors)."""
    global _process_reader
    with _process_lock:
        saved, _process_reader = _process_reader, BitReader(source, 1)
        reader = _process_reader
    try:
        yield reader
    finally:
        with _process_lock:
            _process_reader = saved


class _Digits:
    """The binary digits of a rational in [0, 1), one at a time."""

    __slots__ = ("_den", "_rest")

    def __init__(self, value: Fraction):
        self._den = value.denominator
        self._rest = value.numerator

    def next(self) -> int:
        rest = 2 * self._rest
        digit = 1 if rest >= self._den else 0
        self._rest = rest - digit * self._den
        return digit


#: A level of the walk's tree: its leaf count, the groups with a leaf there, where each group's leaves start.
_Level = tuple[int, tuple[int, ...], tuple[int, ...]]


class KnuthYao:
    """A discrete distribution drawn by the Knuth–Yao walk, reading a bit only while undecided.

    Parameters
    ----------
    groups : sequence of (count, probability)
        Group g has ``count`` outcomes, each with the exact ``probability``;
        the probabilities must sum to exactly 1 over all outcomes.

    Notes
    -----
    Level j of the walk's tree has one leaf for each outcome whose
    probability has binary digit j equal to 1, the groups in order and each
    group's outcomes in order. The walk keeps d, the index of its node among
    the level's nodes: d = 2d + (next bit); the node is the leaf of
    (group g, member d′) when d falls in g's leaves, else it is internal and
    d −= the level's leaf count. Each level-j leaf is reached with
    probability 2^-j, so outcome (g, m) comes with probability exactly its
    digits' sum. The expected number of bits read is below H + 2. A
    distribution with one outcome reads nothing.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from ldp.client.report_bits import BitReader, KnuthYao
    >>> third = KnuthYao([(3, Fraction(1, 3))])
    >>> reader = BitReader(lambda n: bytes([0b10010000]) * n)
    >>> third.sample(reader), reader.bits_read  # bits 1, 0: member 2 of 3
    ((0, 2), 2)
    """

    def __init__(self, groups: Sequence[tuple[int, Fraction]]):
        #: The distribution as given: (count, probability of each outcome) per group.
        self.groups = tuple((int(count), Fraction(probability)) for count, probability in groups)
        total = Fraction(0)
        live: list[tuple[int, int, Fraction]] = []
        for index, (count, probability) in enumerate(self.groups):
            if count < 0 or not 0 <= probability <= 1:
                raise ValueError(f"group {index}: count {count} and probability {probability} out of range")
            total += count * probability
            if count and probability:
                live.append((index, count, probability))
        if total != 1:
            raise ValueError(f"the outcomes' probabilities sum to {total}, not 1")
        self.certain = (live[0][0], 0) if len(live) == 1 and live[0][1] == 1 else None
        self._groups = [(index, count) for index, count, _ in live]
        # every walked probability is below 1: an outcome of probability 1 is the only one (certain)
        self._digits = [_Digits(probability) for _, _, probability in live if probability < 1]
        self._levels: list[_Level] = []
        self._grow = threading.Lock()

    def _level(self, depth: int) -> _Level:
        with self._grow:
            while len(self._levels) <= depth:
                groups, starts, total = [], [], 0
                for (index, count), digits in zip(self._groups, self._digits):
                    if digits.next():
                        groups.append(index)
                        starts.append(total)
                        total += count
                self._levels.append((total, tuple(groups), tuple(starts)))
        return self._levels[depth]

    def sample(self, reader: BitReader) -> tuple[int, int]:
        """One outcome ``(group index, member index)``; the caller holds ``reader.lock``."""
        if self.certain is not None:
            return self.certain
        levels = self._levels
        d = 0
        depth = 0
        while True:
            d = 2 * d + reader.bit()
            total, groups, starts = levels[depth] if depth < len(levels) else self._level(depth)
            if d < total:
                at = bisect_right(starts, d) - 1
                return groups[at], d - starts[at]
            d -= total
            depth += 1


def draw(table: KnuthYao, reader: BitReader | None = None) -> tuple[int, int]:
    """One outcome ``(group, member)`` of ``table`` from ``reader`` (default: the process's CSPRNG reader)."""
    reader = reader or csprng_bits()
    with reader.lock:
        return table.sample(reader)


@lru_cache(maxsize=256)
def _uniform_table(n: int) -> KnuthYao:
    return KnuthYao([(n, Fraction(1, n))])


@lru_cache(maxsize=256)
def _coin_table(probability: Fraction) -> KnuthYao:
    return KnuthYao([(1, probability), (1, 1 - probability)])


def uniform(n: int, reader: BitReader | None = None) -> int:
    """A uniform integer in [0, n) (the Knuth–Yao walk over n outcomes of 1/n)."""
    if n <= 0:
        raise ValueError(f"uniform needs n > 0, got {n}")
    reader = reader or csprng_bits()
    with reader.lock:
        return _uniform_table(n).sample(reader)[1]


def coin(probability: Fraction, reader: BitReader | None = None) -> bool:
    """True with the exact ``probability`` (the walk over (probability, 1 − probability))."""
    reader = reader or csprng_bits()
    with reader.lock:
        return _coin_table(Fraction(probability)).sample(reader)[0] == 0


@lru_cache(maxsize=64)
def run_table(rarer: Fraction) -> KnuthYao:
    """Run lengths of the likelier symbol: k < RUN_CAP with s(1 − s)^k, RUN_CAP with (1 − s)^RUN_CAP.

    ``rarer`` is s, the probability of the rarer symbol (0 < s ≤ 1/2).
    Outcome k < RUN_CAP is k likelier symbols and then one rarer one;
    outcome RUN_CAP is RUN_CAP likelier symbols.
    """
    groups = []
    stay = Fraction(1)
    for _ in range(RUN_CAP):
        groups.append((1, rarer * stay))
        stay *= 1 - rarer
    groups.append((1, stay))
    return KnuthYao(groups)


def sample_lanes(width: int, groups: Sequence[tuple[int, Fraction]], reader: BitReader | None = None) -> int:
    """Independent coins over ``width`` lanes: lane i is 1 with its group's probability.

    Parameters
    ----------
    width : int
        Number of lanes (bits of the returned integer).
    groups : sequence of (lane_mask, probability)
        Masks partition [0, width). Groups are drawn in order; a group's
        lanes in increasing order form one sequence of independent coins.
    reader : BitReader, optional
        Defaults to the process's CSPRNG reader.

    Returns
    -------
    int
        Bit i is lane i's coin.

    Notes
    -----
    With s the rarer symbol's probability (s = t when t ≤ 1/2, the rarer
    symbol then 1; else s = 1 − t and the rarer symbol 0), each walk of
    :func:`run_table` fills the next k lanes with the likelier symbol and,
    when k < RUN_CAP, the lane after them with the rarer one. Lanes a run
    passes beyond the group's last lane are not used. A group with t = 0 or
    t = 1 reads nothing.
    """
    reader = reader or csprng_bits()
    result = 0
    with reader.lock:
        for mask, probability in groups:
            probability = Fraction(probability)
            if not mask or probability == 0:
                continue
            if probability == 1:
                result |= mask
                continue
            rarer_is_one = probability <= Fraction(1, 2)
            table = run_table(probability if rarer_is_one else 1 - probability)
            lanes = [i for i, lane in enumerate(reversed(bin(mask)[2:])) if lane == "1"]
            rare = 0
            position = 0
            while position < len(lanes):
                run, _ = table.sample(reader)
                position += run
                if run < RUN_CAP:
                    if position < len(lanes):
                        rare |= 1 << lanes[position]
                    position += 1
            result |= rare if rarer_is_one else mask ^ rare
    return result


@lru_cache(maxsize=64)
def _rank_table(n: int, k: int) -> KnuthYao:
    return _uniform_table.__wrapped__(comb(n, k))


def unrank_subset(rank: int, n: int, k: int) -> list[int]:
    """The k-subset of [0, n) whose colex rank is ``rank``: rank = Σ C(c_i, i) over its c_1 < … < c_k.

    Returns the members in increasing order.

    Examples
    --------
    >>> from ldp.client.report_bits import unrank_subset
    >>> [unrank_subset(r, 4, 2) for r in range(6)]
    [[0, 1], [0, 2], [1, 2], [0, 3], [1, 3], [2, 3]]
    """
    if not 0 <= k <= n or not 0 <= rank < comb(n, k):
        raise ValueError(f"rank {rank} is not the rank of a {k}-subset of {n}")
    members = []
    c = n - 1
    binom = comb(c, k) if k else 0  # C(c, i) for the current c and i
    for i in range(k, 0, -1):
        while binom > rank:  # C(c − 1, i) = C(c, i)·(c − i)/c
            binom = binom * (c - i) // c
            c -= 1
        members.append(c)
        rank -= binom
        binom = binom * i // c if c else 0  # C(c − 1, i − 1) = C(c, i)·i/c
        c -= 1
    return members[::-1]


def uniform_subset(n: int, k: int, reader: BitReader | None = None) -> list[int]:
    """A uniform k-subset of [0, n), increasing: a uniform rank below C(n, k) (one walk), unranked."""
    if not 0 <= k <= n:
        raise ValueError(f"cannot choose {k} of {n}")
    reader = reader or csprng_bits()
    with reader.lock:
        rank = _rank_table(n, k).sample(reader)[1]
    return unrank_subset(rank, n, k)
