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

What a report does not hide: how many bits its draws read. A walk ends at a
leaf whose depth depends on the outcome, so the count, together with the
report, can tell a truthful randomized response from a flipped one (GRR at
d = 4, ε = 1: 2, 4 or 8 bits only when the report is the true value), and
where a coin's probability comes from the value (the numeric rounding coin,
key-value's discretization) the count depends on the value. Nothing in the
report carries the count, and the process's reader takes the OS CSPRNG 64
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from math import comb, lcm
from typing import Any

import numpy as np

__all__ = [
    "RUN_CAP",
    "BitReader",
    "KnuthYao",
    "RunTable",
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

#: Levels of a walk done by one table lookup when the reader has their bits at hand.
_PEEK = 8
_PEEK_MASK = (1 << _PEEK) - 1

#: Bits of the windows of whole runs (:class:`RunTable`), and the runs a table draws one by one first.
_WINDOW = 12
_WINDOW_MASK = (1 << _WINDOW) - 1
_WINDOWS_AFTER = 4096

#: Walks of a table (with a leaf within its first W levels) after which it builds its lookup table.
_LOOKUP_AFTER = 16


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

    def _refill(self) -> None:
        data = self._source(self._chunk)
        if not data:
            raise ValueError("the byte source returned no bytes")
        self._bits = (self._bits & ((1 << self._left) - 1)) << 8 * len(data) | int.from_bytes(data, "big")
        self._left += 8 * len(data)

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
        self._digits = [_Digits(num, den) for _, _, num, den in live if num < den]
        self._levels: list[_Level] = []
        self._grow = threading.Lock()
        self._grow_pid = os.getpid()
        self._empty: int | None = None
        self._lookup: list[tuple[int, int, int]] | None = None
        self._uses = 0

    def _level(self, depth: int) -> _Level:
        if (
            self._grow_pid != os.getpid()
        ):  # a forked child: a parent's thread may have held the lock at the fork
            self._grow, self._grow_pid = threading.Lock(), os.getpid()
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

    def _lookup_table(self) -> list[tuple[int, int, int]]:
        """The first W levels as a table: entry v is the walk fed the W bits of v.

        (bits used, group, member) when the walk ends within them, else
        (W, −1, d) with d its node at level W.
        """
        self._level(_PEEK - 1)
        table = []
        for v in range(1 << _PEEK):
            d, depth = 0, 0
            while depth < _PEEK:
                d = 2 * d + ((v >> (_PEEK - 1 - depth)) & 1)
                total, groups, starts = self._levels[depth]
                if d < total:
                    at = bisect_right(starts, d) - 1
                    table.append((depth + 1, groups[at], d - starts[at]))
                    break
                d -= total
                depth += 1
            else:
                table.append((_PEEK, -1, d))
        return table

    def sample(self, reader: BitReader) -> tuple[int, int]:
        """One outcome ``(group index, member index)``; the caller holds ``reader.lock``."""
        if self.certain is not None:
            return self.certain
        table = self._lookup
        if table is None:
            empty = self._empty_levels()
            if empty < _PEEK:
                self._uses += 1
                if self._uses == _LOOKUP_AFTER:  # a table in use: its first levels become one lookup
                    self._lookup = self._lookup_table()
            # the first levels have no leaf: their bits only make the node index
            return self._walk(reader, reader.take(empty), empty)
        peeked = reader.peek(_PEEK)
        if peeked is None:
            return self._walk(reader, 0, 0)
        used, group, member = table[peeked]
        reader.skip(used)
        if group >= 0:
            return group, member
        return self._walk(reader, member, _PEEK)


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
    probability = Fraction(probability)
    num, den = probability.numerator, probability.denominator
    if not 0 <= num <= den:
        raise ValueError(f"probability must be in [0, 1], got {probability}")
    if num == 0 or num == den:
        return num == den
    reader = reader or csprng_bits()
    with reader.lock:
        while True:
            num *= 2
            digit = num >= den
            if digit:
                num -= den
            if not reader.bit():
                return digit
            if num == 0:  # t's last digit was 1, and the bit 1 took 1 − t's leaf
                return False


class RunTable(KnuthYao):
    """The walk over run lengths (:func:`run_table`), with a table of whole runs per 12-bit window once busy.

    Entry v of :meth:`windows` holds the runs the walk decides, one after
    another from the root, within the 12 bits of v: (bits used, where the
    last run starts, lanes advanced, where the rarer symbols fall), or None
    when not one run ends within them. The same walks, several per lookup.
    """

    def __init__(self, groups: Sequence[tuple[int, Fraction]]):
        super().__init__(groups)
        self.runs_drawn = 0
        self._windows: list[tuple[int, int, int, tuple[int, ...]] | None] | None = None

    def windows(self) -> list[tuple[int, int, int, tuple[int, ...]] | None] | None:
        """The window table once this table has drawn enough runs to pay for it, else None."""
        if self._windows is None and self.runs_drawn >= _WINDOWS_AFTER:
            self._windows = [self._window(v) for v in range(1 << _WINDOW)]
        return self._windows

    def _window(self, v: int) -> tuple[int, int, int, tuple[int, ...]] | None:
        used = advance = start = 0
        rare: list[int] = []
        while True:
            d, depth, position = 0, 0, used
            while position < _WINDOW:
                d = 2 * d + ((v >> (_WINDOW - 1 - position)) & 1)
                position += 1
                total, groups, starts = self._level(depth)
                if d < total:
                    break
                d -= total
                depth += 1
            else:  # the next run does not end within the window
                return (used, start, advance, tuple(rare)) if used else None
            run = groups[bisect_right(starts, d) - 1]
            used, start = position, advance
            advance += run
            if run < RUN_CAP:
                rare.append(advance)
                advance += 1


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
            count = mask.bit_count()
            rare = _lanes_of(_rare_positions(table, count, reader), mask)
            result |= rare if rarer_is_one else mask ^ rare
    return result


def _rare_positions(table: RunTable, count: int, reader: BitReader) -> list[int]:
    """Where the rarer symbol falls among ``count`` coins: one run of ``table`` after another.

    The same walks as ``table.sample``, written out with the reader's state
    in local variables because a report takes hundreds: several whole runs
    by one lookup of the next 12 bits (:meth:`RunTable.windows`) while the
    last of them starts within the group, else one run by one lookup of the
    next 8 bits, else the walk itself.
    """
    positions: list[int] = []
    position = runs = 0
    lookup, windows = table._lookup, table.windows()
    bits, left, spent = reader._bits, reader._left, 0
    while position < count:
        if windows is not None and left >= _WINDOW:
            entry = windows[(bits >> (left - _WINDOW)) & _WINDOW_MASK]
            if entry is not None and position + entry[1] < count:
                used, _, advance, rare = entry
                left -= used
                spent += used
                positions.extend([position + offset for offset in rare])
                position += advance
                continue
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
        position += run
        if run < RUN_CAP:
            positions.append(position)
            position += 1
    reader._left, reader.bits_read = left, reader.bits_read + spent
    table.runs_drawn += runs
    if positions and positions[-1] >= count:
        positions.pop()
    return positions


def _lane_map(mask: int) -> tuple[int, int, list[int] | None]:
    """How position i of ``mask``'s set bits maps to a lane: (shift, skipped lane or −1, or the lanes listed)."""
    low = (mask & -mask).bit_length() - 1
    if (mask + (mask & -mask)).bit_count() == 1:  # one contiguous run of lanes from ``low``
        return low, -1, None
    gap = ((1 << mask.bit_length()) - 1) ^ mask
    if gap.bit_count() == 1:  # every lane up to the top but one
        return 0, gap.bit_length() - 1, None
    return 0, -1, [i for i, bit in enumerate(reversed(bin(mask)[2:])) if bit == "1"]


def _lanes_of(positions: list[int], mask: int) -> int:
    """The lanes of ``mask`` at ``positions`` (its set bits counted from the lowest), as an integer.

    Integer shifts for a few positions, NumPy's bit packing for many (it is
    faster past about 64).
    """
    shift, skipped, listed = _lane_map(mask)
    if len(positions) <= 64:
        lanes = 0
        for position in positions:
            if listed is not None:
                position = listed[position]
            lanes |= 1 << (position + shift + (skipped >= 0 and position >= skipped))
        return lanes
    at = np.array(positions, dtype=np.int64)
    if listed is not None:
        at = np.array(listed, dtype=np.int64)[at]
    elif skipped >= 0:
        at += at >= skipped
    at += shift
    unpacked = np.zeros(mask.bit_length(), dtype=np.uint8)
    unpacked[at] = 1
    return int.from_bytes(np.packbits(unpacked, bitorder="little").tobytes(), "little")


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
