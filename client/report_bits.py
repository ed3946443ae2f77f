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
* :func:`uniform`, :func:`coin` — its one-group and two-outcome cases
  (:func:`coin_ratio` for a probability given as two integers).
* :func:`sample_lanes` — independent coins over bit lanes, drawn as runs of
  the likelier symbol (a run table of 256 outcomes, one walk a run);
  :class:`LaneSampler` for an encoder's fixed probabilities. With numba
  (``ldp-telemetry[fast]``) a report's walks run compiled, in one call
  (:mod:`ldp.client.report_bits_kernel`, loaded once a table has drawn
  :data:`~ldp.client.report_bits_kernel.KERNEL_AFTER` runs). Without it a
  busy table's walks also form a prefix code (:class:`RunCode`) that
  :mod:`bitarray` decodes in C, hundreds of runs a block. Every way spends
  exactly the walks' bits.
* :func:`uniform_subset` — a uniform k-subset: one uniform rank below
  C(n, k), unranked in the combinatorial number system.

Keyed PRF streams (RAPPOR's permanent response, memoized mechanisms) keep
:mod:`ldp.client.sampling`'s byte samplers: a stored client must get the
same memoized answers after an upgrade.

What a report does not hide: how many bits its draws read. A walk ends at a
leaf whose depth depends on the outcome, so the count, together with the
report, can tell a truthful randomized response from a flipped one (GRR at
d = 4, ε = 1: 2, 4 or 8 bits only when the report is the true value), and
where a coin's probability comes from the value (the numeric rounding coin,
key-value's discretization) the count depends on the value. Nothing in the
report carries the count, and the process's reader takes the OS CSPRNG 256
bytes at a time; only something that watches the device's CSPRNG use or
times the encoder to the bit could see it.

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
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from itertools import islice
from math import comb, lcm
from typing import Any

import numpy as np
from bitarray import bitarray, decodetree
from bitarray.util import int2ba

from ldp.client import report_bits_kernel

__all__ = [
    "RUN_CAP",
    "BitReader",
    "KnuthYao",
    "LaneSampler",
    "RunCode",
    "RunTable",
    "coin",
    "coin_ratio",
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

#: Bytes the process's reader asks ``os.urandom`` for at a time (a 1,024-lane report takes about 140).
_CHUNK = 256

#: Levels of a walk done by one table lookup when the reader has their bits at hand.
_PEEK = 8
_PEEK_MASK = (1 << _PEEK) - 1

#: Depth of a run table's prefix code (:class:`RunCode`): a walk still undecided after it (about 1 run in 10^5
#: at most) is finished bit by bit.
_CODE_DEPTH = 24
#: Runs a table draws one walk at a time before it builds its prefix code (a few ms).
_CODE_AFTER = 4096
#: Groups of fewer expected runs than this are walked run by run (a block's decoding costs about as much as 40 walks;
#: RAPPOR's 128 lanes at p = 1/4 are 32 runs).
_DECODE_RUNS = 48
_FLIPPED = bytes.maketrans(b"01", b"10")  # a lanes text with its symbols swapped

#: Walks of a table (with a leaf within its first W levels) after which it builds its lookup table.
_LOOKUP_AFTER = 16

#: Levels of a walk done by one lookup of a busy table (one walk a report: GRR, the numeric tables; also a
#: table whose first leaf is below level 8, as GRR's at d = 1,024), and the walks on a reader that may read
#: ahead after which a table builds that wider lookup (4,096 entries).
_WIDE_PEEK = 12
_WIDE_AFTER = 1024

#: Levels of a run table the compiled walk gets at first (a walk deeper than this is about 1 in 10^16).
_KERNEL_DEPTH = 64
#: Bits handed to the compiled walk: the lanes' mean times this, and 64 (fewer: it is called again with more).
_KERNEL_MARGIN = 1.25


class BitReader:
    """Uniform bits from a byte source, most significant bit of each byte first.

    Bytes are read (``source(chunk)``, then served in order) only when a bit
    is needed and none is left; the bits a draw leaves serve the next draw.
    ``bits_read`` counts the bits handed out. The reader is not thread-safe
    by itself: the samplers hold ``lock`` for a whole draw.

    Parameters
    ----------
    source : callable
        ``source(n)`` returns n random bytes.
    chunk : int
        Bytes asked for at a time. With 1 (a fixed test stream) exactly the
        bytes the draws use are read; with more, :meth:`peek` may read the
        next chunk ahead (the bits are served in the same order either way).
    """

    def __init__(self, source: Callable[[int], bytes], chunk: int = 1):
        if chunk < 1:
            raise ValueError(f"chunk must be at least 1 byte, got {chunk}")
        self._source = source
        self._chunk = chunk
        self._bits = 0  # the bits not served yet are its low ``_left`` bits, the next one the highest
        self._left = 0
        self.bits_read = 0
        self.lock = threading.Lock()

    def _refill(self, bits: int = 1) -> None:
        """Read chunks until at least ``bits`` bits are at hand (at least one chunk)."""
        chunks = [self._source(self._chunk)]
        got = 8 * len(chunks[0])
        while chunks[-1] and self._left + got < bits:
            chunks.append(self._source(self._chunk))
            got += 8 * len(chunks[-1])
        if not chunks[-1]:
            raise ValueError("the byte source returned no bytes")
        data = b"".join(chunks) if len(chunks) > 1 else chunks[0]
        self._bits = (self._bits & ((1 << self._left) - 1)) << got | int.from_bytes(data, "big")
        self._left += got

    def bit(self) -> int:
        """The next bit."""
        if not self._left:
            self._refill()
        self._left -= 1
        self.bits_read += 1
        return (self._bits >> self._left) & 1

    def take(self, k: int) -> int:
        """The next ``k`` bits as an integer, the first the most significant."""
        while self._left < k:
            self._refill()
        self._left -= k
        self.bits_read += k
        return (self._bits >> self._left) & ((1 << k) - 1)

    def peek(self, k: int) -> int | None:
        """The next ``k`` bits without using them, or None when they are not at hand (chunk 1)."""
        if self._left < k:
            if self._chunk == 1:
                return None
            self._refill()
        return (self._bits >> (self._left - k)) & ((1 << k) - 1)

    def skip(self, k: int) -> None:
        """Use ``k`` bits just seen by :meth:`peek`."""
        self._left -= k
        self.bits_read += k


_process_reader: BitReader | None = None
_process_lock = threading.Lock()


def _drop_process_reader() -> None:
    global _process_reader, _process_lock
    _process_reader = None
    _process_lock = threading.Lock()  # another thread of the parent may have held it at the fork


# A forked child must not serve the bits its parent kept, nor wait for a lock no thread of it holds.
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
    """Within the block, the per-report samplers read ``source`` one byte at a time (tests, vectors).

    The process's reader is swapped for every thread: for tests and vectors only.
    """
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

    def __init__(self, numerator: int, denominator: int):
        self._den = denominator
        self._rest = numerator

    def next(self) -> int:
        rest = 2 * self._rest
        digit = 1 if rest >= self._den else 0
        self._rest = rest - digit * self._den
        return digit


#: A level of the walk's tree: its leaf count, the groups with a leaf there, where each group's leaves start.
_Level = tuple[int, tuple[int, ...], tuple[int, ...]]

#: Groups from which a table sharing one denominator works out its levels with NumPy (a numeric table's
#: thousands of outcomes: a level one outcome at a time took milliseconds, once per new depth a walk reached).
_ARRAY_LEVELS_FROM = 64


class _DigitPlanes:
    """The walk's levels of many groups whose probabilities share one denominator below 2^62, level by level.

    The same digits as a :class:`_Digits` per group (rest ← 2·rest; the
    digit is rest ≥ den, which then leaves rest − den), all groups at once.
    """

    def __init__(self, groups: Sequence[tuple[int, int]], numerators: Sequence[int], denominator: int):
        self._index = np.array([index for index, _ in groups], dtype=np.int64)
        self._count = np.array([count for _, count in groups], dtype=np.int64)
        self._rest = np.array(numerators, dtype=np.int64)
        self._den = denominator

    @staticmethod
    def serves(groups: Sequence[tuple[int, int]], dens: set[int]) -> bool:
        """Whether ``groups`` (index, count) with denominators ``dens`` fit: many, one denominator, int64 sums."""
        if len(groups) < _ARRAY_LEVELS_FROM or len(dens) != 1 or next(iter(dens)) >= 1 << 62:
            return False
        return sum(count for _, count in groups) < 1 << 62

    def next_level(self) -> _Level:
        rest = self._rest
        rest <<= 1
        leaf = rest >= self._den
        rest[leaf] -= self._den
        counts = self._count[leaf]
        ends = np.cumsum(counts)
        total = int(ends[-1]) if ends.size else 0
        return total, tuple(self._index[leaf].tolist()), tuple((ends - counts).tolist())


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
        ratios = []
        for count, probability in groups:
            probability = Fraction(probability)
            ratios.append((int(count), probability.numerator, probability.denominator))
        self._setup(ratios)

    @classmethod
    def from_weights(cls, weights: Sequence[int], total: int) -> KnuthYao:
        """Outcome i alone with probability weights[i]/total (no fraction is reduced: a table of thousands)."""
        table = cls.__new__(cls)
        table._setup([(1, int(weight), total) for weight in weights])
        return table

    @property
    def groups(self) -> tuple[tuple[int, Fraction], ...]:
        """The distribution as given: (count, probability of each outcome) per group."""
        return tuple((count, Fraction(num, den)) for count, num, den in self._ratios)

    def _setup(self, ratios: list[tuple[int, int, int]]) -> None:
        common = lcm(*{den for _, _, den in ratios}) if ratios else 1
        total = 0
        live: list[tuple[int, int, int, int]] = []
        for index, (count, num, den) in enumerate(ratios):
            if count < 0 or den <= 0 or not 0 <= num <= den:
                raise ValueError(f"group {index}: count {count} and probability {num}/{den} out of range")
            total += count * num * (common // den)
            if count and num:
                live.append((index, count, num, den))
        if total != common:
            raise ValueError(f"the outcomes' probabilities sum to {Fraction(total, common)}, not 1")
        self._ratios = ratios
        self.certain = (live[0][0], 0) if len(live) == 1 and live[0][1] == 1 else None
        self._groups = [(index, count) for index, count, _, _ in live]
        # every walked probability is below 1: an outcome of probability 1 is the only one (certain)
        walked = [(num, den) for _, _, num, den in live if num < den]
        self._planes: _DigitPlanes | None = None
        self._digits: list[_Digits] = []
        if len(walked) == len(live) and _DigitPlanes.serves(self._groups, {den for _, den in walked}):
            self._planes = _DigitPlanes(self._groups, [num for num, _ in walked], walked[0][1])
        else:
            self._digits = [_Digits(num, den) for num, den in walked]
        self._levels: list[_Level] = []
        self._grow = threading.Lock()
        self._grow_pid = os.getpid()
        self._empty: int | None = None
        self._lookup: list[tuple[int, int, int]] | None = None
        self._wide: list[tuple[int, int, int]] | None = None
        self._uses = 0
        self._busy = 0

    def _level(self, depth: int) -> _Level:
        if (
            self._grow_pid != os.getpid()
        ):  # a forked child: a parent's thread may have held the lock at the fork
            self._grow, self._grow_pid = threading.Lock(), os.getpid()
        with self._grow:
            while len(self._levels) <= depth:
                if self._planes is not None:
                    self._levels.append(self._planes.next_level())
                    continue
                groups, starts, total = [], [], 0
                for (index, count), digits in zip(self._groups, self._digits):
                    if digits.next():
                        groups.append(index)
                        starts.append(total)
                        total += count
                self._levels.append((total, tuple(groups), tuple(starts)))
        return self._levels[depth]

    def _walk(self, reader: Any, d: int, depth: int) -> tuple[int, int]:
        """The walk from node d of level ``depth`` (d already holds that level's bits)."""
        levels = self._levels
        while True:
            d = 2 * d + reader.bit()
            total, groups, starts = levels[depth] if depth < len(levels) else self._level(depth)
            if d < total:
                at = bisect_right(starts, d) - 1
                return groups[at], d - starts[at]
            d -= total
            depth += 1

    def _empty_levels(self) -> int:
        """The number of levels without a leaf before the first level with one."""
        if self._empty is None:
            empty = 0
            while self._level(empty)[0] == 0:
                empty += 1
            self._empty = empty
        return self._empty

    def _lookup_table(self, width: int = _PEEK) -> list[tuple[int, int, int]]:
        """The first W = ``width`` levels as a table: entry v is the walk fed the W bits of v.

        (bits used, group, member) when the walk ends within them, else
        (W, −1, d) with d its node at level W. Filled leaf by leaf: after j
        bits the walk's node is v − S_j, where S_j counts the leaves of the
        first j levels in units of level j (S_j = 2·S_{j−1} + t_j), so the
        leaf d of level j is the path 2·S_{j−1} + d and covers the 2^(W−j)
        entries that start with it.
        """
        self._level(width - 1)
        table: list[tuple[int, int, int]] = [(0, 0, 0)] * (1 << width)
        before = 0
        for depth in range(width):
            total, groups, starts = self._levels[depth]
            span = 1 << (width - 1 - depth)
            for group, start, end in zip(groups, starts, (*starts[1:], total)):
                for member in range(end - start):
                    first = (2 * before + start + member) * span
                    table[first : first + span] = [(depth + 1, group, member)] * span
            before = 2 * before + total
        for v in range(before, 1 << width):  # still undecided after W bits
            table[v] = (width, -1, v - before)
        return table

    def sample(self, reader: BitReader) -> tuple[int, int]:
        """One outcome ``(group index, member index)``; the caller holds ``reader.lock``."""
        if self.certain is not None:
            return self.certain
        in_place = type(reader) is BitReader and reader._chunk > 1
        if in_place:
            if self._wide is not None:
                return self._sample_in_place(reader, self._wide, _WIDE_PEEK)
            empty = self._empty_levels()
            if empty >= _WIDE_PEEK:  # a lookup would decide nothing (a uniform below 2^62, a subset's rank)
                return self._sample_in_place(reader, None, empty)
            self._busy += 1
            if self._busy == _WIDE_AFTER:  # a busy table: its first 12 levels become one lookup
                self._wide = self._lookup_table(_WIDE_PEEK)
        table = self._lookup
        if table is None:
            empty = self._empty_levels()
            if empty < _PEEK:
                self._uses += 1
                if self._uses == _LOOKUP_AFTER:  # a table in use: its first levels become one lookup
                    self._lookup = self._lookup_table()
            if in_place:
                return self._sample_in_place(reader, None, empty)
            # the first levels have no leaf: their bits only make the node index
            return self._walk(reader, reader.take(empty), empty)
        if in_place:
            return self._sample_in_place(reader, table, _PEEK)
        peeked = reader.peek(_PEEK)
        if peeked is None:
            return self._walk(reader, 0, 0)
        used, group, member = table[peeked]
        reader.skip(used)
        if group >= 0:
            return group, member
        return self._walk(reader, member, _PEEK)

    def _sample_in_place(
        self, reader: BitReader, table: list[tuple[int, int, int]] | None, width: int
    ) -> tuple[int, int]:
        """:meth:`sample` by a lookup table of ``width`` levels and then the walk, on the reader's bits.

        With ``table`` None, ``width`` is the number of leading levels without
        a leaf: their bits only make the node index, and are taken at once.
        The same bits and outcome as :meth:`_walk` from the root; a report's
        one walk (GRR, the numeric tables, a uniform seed or rank) without a
        method call a bit. The reader may read ahead.
        """
        if reader._left < width:
            reader._refill(width)
        bits, left = reader._bits, reader._left
        if table is None:
            left -= width
            group, member, spent = -1, (bits >> left) & ((1 << width) - 1), width
        else:
            used, group, member = table[(bits >> (left - width)) & ((1 << width) - 1)]
            left -= used
            spent = used
        if group < 0:
            levels, d, depth = self._levels, member, width
            while True:
                if not left:
                    reader._left = 0
                    reader._refill()
                    bits, left = reader._bits, reader._left
                left -= 1
                spent += 1
                d = 2 * d + ((bits >> left) & 1)
                total, groups, starts = levels[depth] if depth < len(levels) else self._level(depth)
                if d < total:
                    at = bisect_right(starts, d) - 1
                    group, member = groups[at], d - starts[at]
                    break
                d -= total
                depth += 1
        reader._left = left
        reader.bits_read += spent
        return group, member


def draw(table: KnuthYao, reader: BitReader | None = None) -> tuple[int, int]:
    """One outcome ``(group, member)`` of ``table`` from ``reader`` (default: the process's CSPRNG reader)."""
    reader = reader or csprng_bits()
    with reader.lock:
        return table.sample(reader)


@lru_cache(maxsize=256)
def _uniform_table(n: int) -> KnuthYao:
    return KnuthYao([(n, Fraction(1, n))])


def uniform(n: int, reader: BitReader | None = None) -> int:
    """A uniform integer in [0, n) (the Knuth–Yao walk over n outcomes of 1/n)."""
    if n <= 0:
        raise ValueError(f"uniform needs n > 0, got {n}")
    return draw(_uniform_table(n), reader)[1]


def coin(probability: Fraction, reader: BitReader | None = None) -> bool:
    """True with the exact ``probability``: the walk over (probability, 1 − probability).

    Written out: above the last binary digit of t = ``probability`` the
    digits of t and 1 − t differ, so each level has one leaf and the walk
    ends at the first bit 0, true when t's digit there is 1 (U < t, digit by
    digit). At t's last digit (a dyadic t) both have a leaf: bit 0 is true.
    """
    if type(probability) is not Fraction:
        probability = Fraction(probability)
    return coin_ratio(probability.numerator, probability.denominator, reader)


def coin_ratio(numerator: int, denominator: int, reader: BitReader | None = None) -> bool:
    """:func:`coin` of numerator/denominator, not reduced first (the same digits, so the same bits and answer).

    For a probability made per report (a rounding fraction over 2^53): no
    :class:`~fractions.Fraction` is built. The reader's bits are read in
    place, its state in local variables (the walk reads about two).
    """
    num, den = numerator, denominator
    if not 0 <= num <= den or den <= 0:
        raise ValueError(f"probability must be in [0, 1], got {Fraction(numerator, denominator or 1)}")
    if num == 0 or num == den:
        return num == den
    reader = reader or csprng_bits()
    with reader.lock:
        bits, left, spent = reader._bits, reader._left, 0
        while True:
            num *= 2
            digit = num >= den
            if digit:
                num -= den
            if not left:
                reader._left, reader.bits_read, spent = 0, reader.bits_read + spent, 0
                reader._refill()
                bits, left = reader._bits, reader._left
            left -= 1
            spent += 1
            if not (bits >> left) & 1:
                break
            if num == 0:  # t's last digit was 1, and the bit 1 took 1 − t's leaf
                digit = False
                break
        reader._left = left
        reader.bits_read += spent
        return digit


class _Piece(str):
    """The lanes of one codeword of a run table's prefix code, a symbol distinct from every other codeword's.

    An outcome has a leaf at every level where a binary digit of its
    probability is 1, so the same lanes come from several codewords, and a
    prefix code maps each symbol to one codeword: equal lanes are different
    symbols here (compared by identity). They join as plain text.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__


#: The lanes a run of length k fills, the rarer symbol written 1 and the likelier 0: '0'·k + '1' for k < RUN_CAP;
#: a capped run ends in 'c' (a likelier lane that ends a run, so that runs can be counted; read as 0).
_RUN_LANES = (*("0" * k + "1" for k in range(RUN_CAP)), "0" * (RUN_CAP - 1) + "c")

#: What :class:`RunCode` decodes a walk to that is still undecided after its depth: it is finished bit by bit.
_ESCAPE = "E"


class RunCode:
    """A run table's walks as one prefix code, decoded many runs at a time by :mod:`bitarray` (in C).

    Every leaf of the walk's tree within the first ``depth`` levels is a
    codeword (the path of bits to it); every node still undecided after
    ``depth`` bits is an escape codeword, after which the walk goes on bit
    by bit. The code is complete: every string of ``depth`` bits starts
    with a codeword, so decoding a block stops only at the block's end.

    ``lanes`` decodes each run to its lanes (:data:`_RUN_LANES`;
    :data:`_ESCAPE` for an escape); ``bits_per_lane`` is the mean number of
    bits a lane takes.
    """

    __slots__ = ("bits_per_lane", "depth", "lanes")

    def __init__(self, table: RunTable, depth: int):
        table._level(depth - 1)
        lanes: dict[str, bitarray] = {}
        # The walk's node after j bits of value v is v − S_j, where S_j counts the leaves of
        # levels 1..j in units of level j (S_j = 2·S_{j−1} + t_j): leaf d of level j is the path 2·S_{j−1} + d.
        before = 0
        mean_bits = 0.0
        for level in range(depth):
            total, groups, starts = table._levels[level]
            for run, start in zip(groups, starts):
                lanes[_Piece(_RUN_LANES[run])] = int2ba(2 * before + start, level + 1)
            mean_bits += (level + 1) * total / 2 ** (level + 1)
            before = 2 * before + total
        for path in range(before, 1 << depth):  # still undecided after ``depth`` bits
            lanes[_Piece(_ESCAPE)] = int2ba(path, depth)
        self.depth = depth
        self.lanes = decodetree(lanes)
        self.bits_per_lane = mean_bits / table.lanes_per_run


class RunTable(KnuthYao):
    """The walk over run lengths (:func:`run_table`), with its prefix code (:class:`RunCode`) once busy.

    ``runs_drawn`` counts the runs drawn from this table in Python however
    they were drawn (walked or decoded), so the code is built at the same
    run whatever the reader's chunk (the compiled walk's runs, which need
    no code, are not counted); ``lanes_per_run`` is the mean number of
    lanes a run fills (k + 1 for k < RUN_CAP, RUN_CAP for RUN_CAP).
    """

    def __init__(self, groups: Sequence[tuple[int, Fraction]]):
        super().__init__(groups)
        self.runs_drawn = 0
        self.lanes_per_run = sum(float(p) * min(k + 1, RUN_CAP) for k, (_, p) in enumerate(self.groups))
        self._code: RunCode | None = None

    def windows(self) -> RunCode | None:
        """The prefix code of whole runs once this table has drawn enough runs to pay for it, else None."""
        if self._code is None and self.runs_drawn >= _CODE_AFTER:
            self._code = RunCode(self, _CODE_DEPTH)
        return self._code


@lru_cache(maxsize=64)
def run_table(rarer: Fraction) -> RunTable:
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
    return RunTable(groups)


@lru_cache(maxsize=256)
def _lane_law(numerator: int, denominator: int) -> tuple[RunTable | None, bool]:
    """How lanes of probability t = numerator/denominator are drawn: (run table, the rarer symbol is 1).

    The table is None when t is 0 or 1 (nothing is read; the flag is then t = 1).
    """
    if numerator in (0, denominator):
        return None, numerator != 0
    t = Fraction(numerator, denominator)
    rarer_is_one = t <= Fraction(1, 2)
    return run_table(t if rarer_is_one else 1 - t), rarer_is_one


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
    t = 1 reads nothing. Consecutive groups of one run table (RAPPOR's t and
    1 − t) go to :func:`_rare_lanes` together: the same walks, one block.
    With the compiled walk loaded (:mod:`ldp.client.report_bits_kernel`)
    and a reader that may read ahead, every group is walked in one call of
    it, on the same bits.
    """
    return _sample_lanes(
        width, _plan_of([probability for _, probability in groups]), [mask for mask, _ in groups], reader
    )


class LaneSampler:
    """:func:`sample_lanes` for groups of fixed probabilities, their laws worked out once (an encoder's coins).

    Parameters
    ----------
    probabilities : sequence of Fraction
        Each group's probability (exact; a float or string is read as
        :class:`~fractions.Fraction` reads it).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from ldp.client.report_bits import BitReader, LaneSampler
    >>> lanes = LaneSampler([Fraction(1), Fraction(0)])
    >>> bin(lanes.sample(6, [0b000111, 0b111000], BitReader(lambda n: bytes(n))))
    '0b111'
    """

    __slots__ = ("_plan",)

    def __init__(self, probabilities: Sequence[Fraction]):
        self._plan = _plan_of(probabilities)

    def sample(self, width: int, masks: Sequence[int], reader: BitReader | None = None) -> int:
        """:func:`sample_lanes` of ``width`` lanes, group g the lanes of ``masks[g]`` (the same bits and lanes)."""
        return _sample_lanes(width, self._plan, masks, reader)


def _plan_of(probabilities: Sequence[Any]) -> _LanePlan:
    """The :class:`_LanePlan` of groups of these probabilities (each read as a Fraction)."""
    try:
        ratios = tuple([(probability.numerator, probability.denominator) for probability in probabilities])
    except AttributeError:  # not a rational number (a float, a string)
        ratios = tuple([(Fraction(t).numerator, Fraction(t).denominator) for t in probabilities])
    return _lane_plan(ratios)


def _sample_lanes(width: int, plan: _LanePlan, masks: Sequence[int], reader: BitReader | None) -> int:
    """:func:`sample_lanes` by ``plan``: the compiled walk when it is loaded and the reader may read ahead."""
    reader = reader or csprng_bits()
    with reader.lock:
        if reader._chunk > 1 and plan.tables:
            kernel = report_bits_kernel.compiled_walk(plan.tables)
            if kernel is not None:
                return _compiled_lanes(kernel, width, plan, masks, reader)
        return _python_lanes(plan, masks, reader)


def _python_lanes(plan: _LanePlan, masks: Sequence[int], reader: BitReader) -> int:
    """:func:`sample_lanes` by the Python walks (:func:`_rare_lanes`), the caller holding ``reader.lock``."""
    result = 0
    drawn: list[tuple[int, RunTable, bool]] = []
    for mask, (table, rarer_is_one) in zip(masks, plan.laws):
        if table is None:
            result |= mask if rarer_is_one else 0
        elif mask:
            drawn.append((mask, table, rarer_is_one))
    start = 0
    scattered: list[tuple[int, str, bool]] = []
    while start < len(drawn):
        table = drawn[start][1]
        end = start + 1
        while end < len(drawn) and drawn[end][1] is table:
            end += 1
        same = drawn[start:end]
        texts = _rare_lanes(table, [mask.bit_count() for mask, _, _ in same], reader)
        for (mask, _, rarer_is_one), text in zip(same, texts):
            shape = _lane_shape(mask)
            if shape is None:
                scattered.append((mask, text, rarer_is_one))
                continue
            rare = _lanes_of_text(text, shape)
            result |= rare if rarer_is_one else mask ^ rare
        start = end
    if scattered:
        result |= _scattered_lanes(scattered)
    return result


class _LanePlan:
    """How :func:`sample_lanes` draws groups of given probabilities: each group's law (:func:`_lane_law`).

    ``drawn`` lists the groups with a run table, ``tables`` those tables
    (each once), ``fixed`` the groups of probability 1. For the compiled
    walk (built on first use, :meth:`build_walk`): ``walk``, the groups'
    laws and their tables' first ``depth`` levels
    (:func:`~ldp.client.report_bits_kernel.walk_layout`), and ``fits``, the
    sizes for each width of lanes (:meth:`fit`).
    """

    def __init__(self, laws: tuple[tuple[RunTable | None, bool], ...]):
        self.laws = laws
        self.drawn = tuple(g for g, (table, _) in enumerate(laws) if table is not None)
        self.fixed = tuple(g for g, (table, one) in enumerate(laws) if table is None and one)
        self.tables: list[RunTable] = []
        for table, _ in laws:
            if table is not None and all(table is not known for known in self.tables):
                self.tables.append(table)
        self.walk: np.ndarray | None = None
        self.depth = 0
        self._bits_per_lane = 0.0  # the most bits a lane of any table takes on average
        self.fits: dict[int, tuple[int, int]] = {}

    def fit(self, width: int) -> tuple[int, int]:
        """The compiled walk's sizes for lanes of ``width``: their bytes, and the bits handed over (their mean
        with a margin); kept in ``fits``."""
        if self.walk is None:
            self.build_walk()
        fit = self.fits[width] = ((width + 7) // 8, int(width * self._bits_per_lane * _KERNEL_MARGIN) + 64)
        return fit

    def build_walk(self, depth: int = 0) -> None:
        """``walk`` with at least ``depth`` levels of each table (:data:`_KERNEL_DEPTH` at first)."""
        depth = max(depth, _KERNEL_DEPTH)
        tables, per_lane = [], []
        for table in self.tables:
            table._level(depth - 1)
            levels = table._levels[:depth]
            lookup = [
                report_bits_kernel.lookup_entry(used, run, node if run < 0 else 0)
                for used, run, node in table._lookup_table(report_bits_kernel.LOOKUP_BITS)
            ]
            tables.append(
                ([level_groups for _, level_groups, _ in levels], lookup)
            )  # each leaf a group of one
            mean_bits = sum((j + 1) * level[0] / 2 ** (j + 1) for j, level in enumerate(levels))
            per_lane.append(mean_bits / table.lanes_per_run)
        laws = [
            (next(i for i, t in enumerate(self.tables) if t is self.laws[g][0]), int(self.laws[g][1]))
            for g in self.drawn
        ]
        self.walk, self.depth = report_bits_kernel.walk_layout(laws, tables), depth
        self._bits_per_lane = max(per_lane)


@lru_cache(maxsize=256)
def _lane_plan(ratios: tuple[tuple[int, int], ...]) -> _LanePlan:
    return _LanePlan(tuple(_lane_law(numerator, denominator) for numerator, denominator in ratios))


def _compiled_lanes(
    kernel: Callable[..., tuple[int, int]],
    width: int,
    plan: _LanePlan,
    masks: Sequence[int],
    reader: BitReader,
) -> int:
    """:func:`sample_lanes` by the compiled walk, in one call; the caller holds ``reader.lock``.

    The kernel gets the reader's next bits (read ahead as needed), enough
    for the lanes with a margin, and walks them as :func:`_walk_runs` does,
    group after group; the reader then spends exactly the bits its runs
    took. Too few bits or a walk past the levels given: it spent nothing,
    and is called again with twice as many bits or levels.
    """
    fit = plan.fits.get(width) or plan.fit(width)
    size, want = fit
    if len(plan.drawn) == len(masks):
        lanes = b"".join([mask.to_bytes(size, "little") for mask in masks])
    else:
        lanes = b"".join([masks[g].to_bytes(size, "little") for g in plan.drawn])
    while True:
        held = 8 * ((want + 31) // 8)  # want bits, then at least 24 the kernel may look at but not use
        if reader._left < held:
            reader._refill(held)
        data = bytearray(size)  # the lanes, then the masks and the bits
        data += lanes
        data += ((reader._bits >> (reader._left - held)) & ((1 << held) - 1)).to_bytes(held >> 3, "big")
        status, spent = kernel(data, size, 8 * (size + len(lanes)), want, plan.walk)
        if status == report_bits_kernel.DONE:
            break
        if status == report_bits_kernel.SHORT:
            want *= 2
        else:
            plan.build_walk(2 * plan.depth)
    spent = int(spent)  # a NumPy integer from the uncompiled kernel (tests)
    reader._left -= spent
    reader.bits_read += spent
    result = int.from_bytes(data[:size], "little")
    for g in plan.fixed:
        result |= masks[g]
    return result


def _rare_lanes(table: RunTable, counts: Sequence[int], reader: BitReader) -> list[str]:
    """The lanes of consecutive groups of ``table`` (``counts`` lanes each) as text, '1' where the rarer symbol falls.

    One run of ``table`` after another; a group's last run is cut at its
    last lane and the next group starts with a fresh run. Decoded from
    blocks of the reader's bits (:func:`_decode_runs`) when the table has
    its prefix code (:meth:`RunTable.windows`), the reader may read ahead
    (chunk > 1) and the groups hold enough runs to pay for a block (about
    :data:`_DECODE_RUNS`); else walked run by run (:func:`_walk_runs`).
    """
    code = table.windows() if reader._chunk > 1 else None
    if code is None or sum(counts) < _DECODE_RUNS * table.lanes_per_run:
        return [_walk_runs(table, count, reader) for count in counts]
    return _decode_runs(code, table, counts, reader)


def _walk_runs(table: RunTable, count: int, reader: BitReader) -> str:
    """The lanes of ``count`` coins, one walk of ``table`` a run (its first 8 levels by one lookup).

    The walks of ``table.sample``, written out with the reader's state in
    local variables: a report may take hundreds.
    """
    pieces: list[str] = []
    filled = runs = 0
    lookup = table._lookup
    bits, left, spent = reader._bits, reader._left, 0
    while filled < count:
        runs += 1
        if lookup is not None and left >= _PEEK:
            used, run, node = lookup[(bits >> (left - _PEEK)) & _PEEK_MASK]
            left -= used
            spent += used
            if run < 0:
                reader._left, reader.bits_read, spent = left, reader.bits_read + spent, 0
                run, _ = table._walk(reader, node, _PEEK)
                bits, left = reader._bits, reader._left
        else:
            reader._left, reader.bits_read, spent = left, reader.bits_read + spent, 0
            if lookup is not None and reader._chunk > 1:  # bits ahead may be read: refill, then look up
                reader._refill()
                bits, left = reader._bits, reader._left
                runs -= 1
                continue
            run, _ = table.sample(reader)
            lookup = table._lookup
            bits, left = reader._bits, reader._left
        piece = _RUN_LANES[run]
        pieces.append(piece)
        filled += len(piece)
    reader._left, reader.bits_read = left, reader.bits_read + spent
    table.runs_drawn += runs
    return _as_lanes(pieces, count)


def _decode_runs(code: RunCode, table: RunTable, counts: Sequence[int], reader: BitReader) -> list[str]:
    """:func:`_rare_lanes` by the prefix code: whole runs decoded from blocks of the reader's bits.

    A block is the reader's next bits (read ahead as needed), enough for
    the lanes still to fill with a margin. Its runs are decoded in C
    (:func:`_decode_block`) to one text of lanes, which each group takes
    in turn (the rest of its last run skipped), and the reader then spends
    exactly the bits of the runs used: the bits after them serve the next
    draw as after the walks. A run the code leaves undecided (an escape) is
    walked from its first bit by ``table.sample``; a block that falls
    short is followed by another.
    """
    pieces: list[list[str]] = [[] for _ in counts]
    group, filled = 0, 0
    while group < len(counts):
        still = counts[group] - filled + sum(counts[group + 1 :])
        block = _next_bits(reader, int(still * code.bits_per_lane * 1.05) + 2 * code.depth)
        text, marks = _decode_block(block, code, still / table.lanes_per_run, still)
        at = used = 0  # where the next run starts in ``text``; the runs before it
        escape = False
        while group < len(counts) and at < len(text):
            lanes = text[at : at + counts[group] - filled]
            stop = lanes.find(_ESCAPE)
            if stop >= 0:
                lanes, escape = lanes[:stop], True
            used += lanes.count("1") + lanes.count("c")  # whole runs end in 1 or c
            pieces[group].append(lanes)
            filled += len(lanes)
            at += len(lanes)
            if escape:
                break
            if lanes[-1:] == "0":  # the group's last run goes on past its last lane: the rest is not used
                used += 1
                end = text.find("1", at)
                capped = text.find("c", at, end if end >= 0 else len(text))
                at = (capped if capped >= 0 else end) + 1
            if filled == counts[group]:
                group, filled = group + 1, 0
        spent = _bits_of_runs(block, code, marks, used)
        reader._left -= spent
        reader.bits_read += spent
        table.runs_drawn += used
        if escape:  # the walk of the escaped run, from its first bit
            run, _ = table.sample(reader)
            table.runs_drawn += 1
            lanes = _RUN_LANES[run][: counts[group] - filled]
            pieces[group].append(lanes)
            filled += len(lanes)
            if filled == counts[group]:
                group, filled = group + 1, 0
    return [_as_lanes(group_pieces, count) for group_pieces, count in zip(pieces, counts)]


def _decode_block(
    block: bitarray, code: RunCode, runs_expected: float, lanes: int
) -> tuple[str, list[tuple[int, int]]]:
    """The lanes text of the runs of ``block`` until they fill ``lanes`` lanes or the block ends.

    Decoded a stretch at a time: first the runs expected less about two
    standard deviations (√runs), then about one standard deviation at a
    time, so that little past the lanes asked for is decoded. ``marks``
    holds (runs decoded, bits they took) at the start of each stretch, for
    :func:`_bits_of_runs`.
    """
    it = block.decode(code.lanes)
    texts: list[str] = []
    marks: list[tuple[int, int]] = []
    runs = have = 0
    deviation = runs_expected**0.5
    stretch = max(int(runs_expected - 2 * deviation), 8)
    while have < lanes:
        marks.append((runs, it.index))
        decoded: list[str] = []
        try:
            decoded.extend(islice(it, stretch))  # the runs before an error are kept
        except ValueError:  # the block's end cuts its last run
            stretch = -1
        texts.append("".join(decoded))
        have += len(texts[-1])
        runs += len(decoded)
        if len(decoded) < stretch or stretch < 0:
            break
        stretch = max(int(deviation), 8)
    return "".join(texts), marks


def _bits_of_runs(block: bitarray, code: RunCode, marks: list[tuple[int, int]], used: int) -> int:
    """The bits the first ``used`` runs of ``block`` take: from the last mark at or before them, decoded again."""
    runs, index = marks[bisect_right(marks, (used, 1 << 62)) - 1]
    if used == runs:
        return index
    rest = block[index:].decode(code.lanes)
    deque(islice(rest, used - runs), maxlen=0)
    return index + rest.index


def _next_bits(reader: BitReader, n: int) -> bitarray:
    """The reader's next ``n`` bits, not spent (its source read ahead as needed)."""
    if reader._left < n:
        reader._refill(n)
    return int2ba((reader._bits >> (reader._left - n)) & ((1 << n) - 1), n)


def _as_lanes(pieces: list[str], count: int) -> str:
    """The first ``count`` lanes of the runs' ``pieces``, written 0 and 1."""
    return "".join(pieces)[:count].replace("c", "0")


def _lane_shape(mask: int) -> tuple[int, int] | None:
    """(shift, skipped lane or −1) when ``mask`` is one run of lanes from ``shift``, or every lane up to its top but
    one; None when it is scattered."""
    low = mask & -mask
    if (mask + low).bit_count() == 1:  # one contiguous run of lanes from the lowest
        return low.bit_length() - 1, -1
    gap = ((1 << mask.bit_length()) - 1) ^ mask
    if gap.bit_count() == 1:  # every lane up to the top but one
        return 0, gap.bit_length() - 1
    return None


def _lanes_of_text(lanes: str, shape: tuple[int, int]) -> int:
    """The lanes of a mask of this :func:`_lane_shape` whose position (among its set bits, from the lowest) is 1 in
    ``lanes``, as an integer: text to integer in C (``int(text, 2)``)."""
    shift, skipped = shape
    dense = int(lanes[::-1], 2)
    if skipped >= 0:
        dense = dense & ((1 << skipped) - 1) | (dense >> skipped) << (skipped + 1)
    return dense << shift


def _scattered_lanes(groups: list[tuple[int, str, bool]]) -> int:
    """The lanes of scattered masks, each ``(mask, lanes, rarer_is_one)``, as one integer, in one NumPy pass.

    A mask's lanes take its text's characters in order ('1' where the
    rarer symbol falls, flipped when the rarer symbol is 0); the masks are
    disjoint, and a lane of none of them is 0.
    """
    top = max(mask.bit_length() for mask, _, _ in groups)
    size = (top + 7) // 8
    lanes = np.full(top, 48, dtype=np.uint8)  # "0"
    for mask, text, rarer_is_one in groups:
        chosen = np.unpackbits(
            np.frombuffer(mask.to_bytes(size, "little"), dtype=np.uint8), count=top, bitorder="little"
        )
        raw = text.encode("ascii")
        lanes[chosen.view(bool)] = np.frombuffer(
            raw if rarer_is_one else raw.translate(_FLIPPED), dtype=np.uint8
        )
    return int(lanes.tobytes()[::-1], 2)


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
