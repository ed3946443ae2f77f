"""Exact one-hot coin vectors near the entropy limit: blocks of coins drawn by inversion from a bit stream.

A one-hot report (SUE, OUE, CMS's m bits, the longitudinal unary chains,
range-hierarchy's level, PCKV-UE's nonzero lanes) has one coin of
probability p (the true position) and n − 1 coins of probability q. The
bit-sliced sampler of :func:`ldp.client.batch.bernoulli_words` reads about
7.5 uniform words per 64 coins (~959 bytes per report at d = 1,024) where
the coins need h(q) bits each (~108 bytes for OUE at ε = 1).
:func:`one_hot_coins` reads close to the entropy instead, and
:func:`marked_coins` draws coins of probability p on each marked bit and q
elsewhere the same way (a one-hot report is the case of one mark; the
secure RAPPOR batch now draws its coins by :mod:`ldp.client.plain_streams` and
:mod:`ldp.client.marked_correction`, which is faster where marks are many,
and ``benchmarks/bench_rappor_coins.py`` compares the two):

1. Each report reads its own stream of uniform digits (most significant
   digit of each word first).
2. The first T = ⌈m/8⌉ steps draw the report's m true coins (one-hot: m = 1,
   step 0 draws the true coin) as blocks of up to 8 coins of probability p,
   like the q-blocks below. Then either
   **blocks**: step T + s draws coins 8s … 8s+7 (the last block holds
   what is left) as one of the 2^t patterns of t ≤ 8 coins, pattern j
   (coin i = bit t−1−i of j, so j is the packed byte) with probability
   q^|j| (1−q)^(t−|j|); or **runs**, for sparse coins (small q) where they
   read fewer digits per coin and blocks would read too many (more than
   :data:`ONE_HOT_BLOCKS_ENTROPY` × the entropy for :func:`one_hot_coins`,
   more than :data:`PLAIN_RUNS_GAIN` × the runs' for :func:`plain_coins`:
   the kernel steps blocks several times faster): a step draws k < 255
   zeros then a one (probability (1−q)^k q) or 255 zeros ((1−q)^255),
   until the report's coins are covered (a one past them is dropped).
3. A step is drawn by inversion: the unit interval is cut at the exact
   cumulative probabilities C_0 = 0 < C_1 < … < C_cells = 1 (Fractions of
   the spec's probabilities), and the step's outcome is cell j when a
   uniform real U lies in [C_j, C_{j+1}). U is read one digit at a time
   until the digits read prove U inside one cell: about the step's entropy
   plus a digit or two, ~1.3× the entropy for OUE at ε = 1.
4. The q-coin drawn at the true position is replaced by the true coin (the
   marked bits', in order, by the true coins).

Exactness. Every answer is the exact inversion's: the digits are compared
with 32-bit fixed-point bounds ⌊C_j·2^32⌋ ≤ C_j·2^32 ≤ ⌈C_j·2^32⌉, and a
cell is returned only when the digits read so far prove U ≥ C_j and
U < C_{j+1}. A table of the first 16 digits settles most steps in one
lookup; a step 32 digits do not settle (probability about 2^-24) goes on
digit by digit with the exact cuts (:func:`_exact_cell`). So P[cell j] =
C_{j+1} − C_j exactly: the coins are independent, each with exactly its
probability. No floating point touches a coin.

Streams. The first rows are drawn in one call: report i's row is the next
⌈E_i⌉ digits of ``source.words(…)`` (E_i its expected digits). A report
stops before a step that may need digits past its row (the table says how
many the step reads; 32 when it does not settle it); the reports that
stopped get new rows together, in report order: the digits each had not
read, carried over, then 32 fresh digits (half a word drawn for it). So
each report reads one unbroken stream of its own, every digit drawn
decides at most one report's coins (a 16-digit lookup may look at digits
past the ones its entry is decided by, which never change that entry), and
where a row ends changes no outcome. For one-hot reports the digits drawn
and every q-coin do not depend on the true position: the amount of
randomness read reveals nothing about the value. :func:`marked_coins` with
p + q ≠ 1 also draws a coin for each marked bit, so the amount read grows
with the number of marks (a RAPPOR report's Bloom or PRR bits set): visible
to whoever can watch the device's CSPRNG use, never in the report. A step the
bounds do not settle reads its further digits from its row, then from fresh
words. Both backends (the numba kernel :mod:`ldp.client.onehot_kernel`,
compiled on first use from :data:`NUMBA_THRESHOLD` reports, and the NumPy
rounds here) follow these rules and return the same reports from the same
source words.
"""

from __future__ import annotations

import math
import threading
import warnings
from bisect import bisect_right
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from ldp.client.randomness import RandomSource
from ldp.errors import LDPWarning, ParameterError

__all__ = [
    "FLIPPED_MIN_DIGITS",
    "KERNEL_AFTER",
    "MARKED_MIN_DIGITS",
    "NUMBA_THRESHOLD",
    "ONE_HOT_BLOCKS_ENTROPY",
    "PLAIN_RUNS_GAIN",
    "PRECISION",
    "SECURE_BATCH",
    "coin_entropy",
    "draws_runs",
    "marked_coins",
    "one_hot_coins",
    "one_hot_draws_runs",
    "pattern_table",
    "plain_coins",
    "run_table",
    "serves_marked_batch",
    "serves_secure_batch",
]

#: Digits of the fixed-point cut bounds; a block still open after this many digits takes the exact cuts.
PRECISION = 32
#: Digits of the lookup window: one table lookup per block in the common case.
WINDOW = 16
#: Coins per block: a block is one packed byte.
BLOCK = 8
#: The longest run of q-coins one symbol draws (runs: for sparse coins, when they read fewer digits than blocks).
RUN = 255
#: Fresh digits of a new row (after the digits a stopped report carries over).
REFILL_BITS = 32
#: Digits a report's first row holds beyond its expected need.
ROW_SLACK = 0
#: The same for :func:`marked_coins` (RAPPOR, whose reports are short): about 2 bytes a report buys one
#: kernel pass where ROW_SLACK = 0 takes two (about 40 % of the reports stop at their row's end).
MARKED_SLACK = 16
#: :func:`plain_coins` draws by runs only where they read fewer digits than blocks by more than this factor:
#: runs take the kernel's general steps, about 3.5× the CPU of blocks per 128 coins at q = 1/16 or 3/32,
#: where blocks read 1.12× or 1.07× the runs' digits (1.5× the entropy); at q = 1/32, 1.41× (runs kept).
PLAIN_RUNS_GAIN = 1.25
#: :func:`one_hot_coins` draws by blocks unless they read more than this many times the q-coins' entropy h(q)
#: per coin (then by runs, 1.25–1.5× h(q)), so the q-coins read under 2× their entropy either way (a report's
#: true coin and the unread end of its row aside: at d = 64 and small q those dominate). On the compiled kernel
#: (d = 1,024, CPU time per coin, benchmarks/bench_onehot_coins.py) one_hot_coins takes 0.5 to 0.9 ns per coin
#: by blocks at every q from 3/8 down to 1/256, by runs 1.1 to 11 ns from q = 1/32 to 3/8 (one general step per
#: symbol): runs are the faster only below q ≈ 0.01, where blocks read over 4× h(q). Blocks stay under this
#: bound down to q ≈ 0.04 (the longitudinal OUE at ε = 2: q = 0.048, blocks 1.66× h(q)); at q = 1/32 they
#: read 1.82× h(q) and OUE at ε = 4 (q = 0.018) 2.6×: runs.
ONE_HOT_BLOCKS_ENTROPY = 1.75
#: Reports from which the compiled kernel is used (when numba is installed): its first use compiles it.
NUMBA_THRESHOLD = 4096
#: When the secure batch path draws one-hot coins here (:func:`serves_secure_batch`): ``"auto"``, where
#: the compiled kernel serves the batch (numba installed, at least :data:`NUMBA_THRESHOLD` reports), else
#: the bit-sliced sampler, whose NumPy code is about twice as fast as this module's NumPy rounds (it
#: reads ~7× more CSPRNG bytes); ``"always"``, this module on either backend (the fast test set);
#: ``"never"``, the bit-sliced sampler.
SECURE_BATCH = "auto"
#: Under ``SECURE_BATCH = "auto"``, this module serves a secure RAPPOR batch (where the kernel
#: serves it) only when the bit-sliced lanes would read at least this many digits per coin, measured on one
#: core (benchmarks/bench_rappor_coins.py): the lanes' CPU is almost nothing, so their cost is the digits they
#: read (1 to 4 for probabilities whose binary expansions end within 4 digits, about 7.5 for others), and the
#: corrected coins' is the q-coins' CPU (:func:`ldp.client.plain_streams.stream_coins`, about 1.6 ns a block of
#: 8) plus ~1.3× the entropy. With p + q = 1 (every coin a q-coin, the marked ones flipped) or fair q-coins
#: (q = 1/2: the words' bits, no lookup) they are faster from 2 digits (3/4 and 1/4: 0.93–0.97× the lanes'
#: CPU; 3/4 and 1/2: 0.77–0.80×), and ...
FLIPPED_MIN_DIGITS = 2
#: ... otherwise (each marked bit's q-coin combined with a further coin, :mod:`ldp.client.marked_correction`)
#: from 3: 7/8 and 5/8, 3/8 and 1/8 take them (0.82–0.95×); 1/2 and 1/4 (2 digits: 0.98–1.06×) keep the lanes.
MARKED_MIN_DIGITS = 3
#: Secure one-hot reports a process draws with the bit-sliced lanes before it loads the kernel
#: (:func:`serves_secure_batch`): the lanes take about as long for this many as loading the kernel.
KERNEL_AFTER = 1 << 18
#: The coins per report of the one-hot reports :data:`KERNEL_AFTER` was measured with (d = 1,024): a batch of
#: other reports counts toward it in proportion to its coins (:func:`serves_marked_batch`).
KERNEL_AFTER_COINS = 1024

_DONE, _STALLED, _EXACT = 0, 1, 2


@dataclass(frozen=True)
class PatternTable:
    """Inversion of the 2^size patterns of ``size`` coins of probability ``probability``.

    Attributes
    ----------
    cuts : tuple of Fraction
        The exact cumulative probabilities C_0 = 0, …, C_{2^size} = 1.
    lower, upper : numpy.ndarray
        int64 ⌊C_j·2^PRECISION⌋ and ⌈C_j·2^PRECISION⌉.
    window : numpy.ndarray
        uint16 per 16-digit window v: ``cell | digits << 8`` when its first
        ``digits`` digits settle the block (pattern ``cell``), else ``cell``
        = the last cut proved ≤ U after 16 digits and ``digits`` = 0.
    mean_digits : float
        Expected digits read per block (for sizing the rows only).
    """

    cuts: tuple[Fraction, ...]
    lower: np.ndarray
    upper: np.ndarray
    window: np.ndarray
    mean_digits: float


@lru_cache(maxsize=64)
def pattern_table(probability: Fraction, size: int) -> PatternTable:
    """The :class:`PatternTable` of ``size`` (1 to 8) coins, each 1 with ``probability`` in (0, 1).

    Pattern j (coin i = bit size−1−i of j) has mass q^|j| (1−q)^(size−|j|).
    """
    q = Fraction(probability)
    if not 0 < q < 1 or not 1 <= size <= BLOCK:
        raise ParameterError(
            f"a pattern table needs a probability in (0, 1) and 1 to 8 coins, got {q}, {size}"
        )
    r = 1 - q
    return _inversion([q ** j.bit_count() * r ** (size - j.bit_count()) for j in range(1 << size)])


@lru_cache(maxsize=16)
def run_table(probability: Fraction, longest: int = RUN) -> PatternTable:
    """The :class:`PatternTable` of a run of coins of probability q.

    Cell k < ``longest`` is k zeros then a one (mass (1−q)^k q); cell
    ``longest`` is ``longest`` zeros (mass (1−q)^longest).
    """
    q = Fraction(probability)
    if not 0 < q < 1 or not 1 <= longest <= RUN:
        raise ParameterError(f"a run table needs a probability in (0, 1) and 1 to {RUN} coins, got {q}")
    r = 1 - q
    masses, power = [], Fraction(1)
    for _ in range(longest):
        masses.append(power * q)
        power *= r
    return _inversion([*masses, power])


def _inversion(masses: list[Fraction]) -> PatternTable:
    """The inversion table of cells of exact ``masses`` (at most 256 cells, summing to 1)."""
    cuts = [Fraction(0)]
    for mass in masses:
        cuts.append(cuts[-1] + mass)
    if cuts[-1] != 1:
        raise AssertionError("the cells' masses do not sum to 1")
    cells = len(masses)
    one = 1 << PRECISION
    lower = np.array([c.numerator * one // c.denominator for c in cuts], dtype=np.int64)
    upper = np.array([-(-c.numerator * one // c.denominator) for c in cuts], dtype=np.int64)
    windows = np.arange(1 << WINDOW, dtype=np.int64)
    cell = np.zeros(windows.size, dtype=np.int64)
    digits = np.zeros(windows.size, dtype=np.int64)
    for t in range(1, WINDOW + 1):
        low = (windows >> (WINDOW - t)) << (PRECISION - t)
        k = np.minimum(np.searchsorted(upper, low, side="right") - 1, cells - 1)
        fresh = (digits == 0) & (low + (1 << (PRECISION - t)) <= lower[k + 1])
        cell[fresh], digits[fresh] = k[fresh], t
        if t == WINDOW:
            open_ = digits == 0
            cell[open_] = k[open_]
    window = (cell | (digits << 8)).astype(np.uint16)
    mean = float(np.where(digits > 0, digits, WINDOW + 2).mean())
    return PatternTable(tuple(cuts), lower, upper, window, mean)


@dataclass(frozen=True)
class _Tables:
    """The kernel's arrays: by blocks, table t (1 to 8) the blocks of t q-coins, or by runs (``run``),
    table 1 the runs of q-coins; table BLOCK + t (9 to 16) the blocks of t true coins (probability p).
    Table 0 is unused."""

    window: np.ndarray  # (17, 2^16) uint16
    lower: np.ndarray  # (17, 257) int64
    upper: np.ndarray  # (17, 257) int64
    cells: np.ndarray  # (17,) int64
    tables: tuple[PatternTable | None, ...]
    run: bool


def draws_runs(q: Fraction, gain: float = 1.0) -> bool:
    """Whether q-coins are drawn by runs: when runs read fewer digits per coin than blocks of 8, by more than a
    factor ``gain`` (1: the fewer digits; :data:`PLAIN_RUNS_GAIN` for :func:`plain_coins`)."""
    blocks, runs = _digits_per_coin(Fraction(q))
    return runs * gain < blocks


def one_hot_draws_runs(q: Fraction) -> bool:
    """Whether :func:`one_hot_coins` draws its q-coins by runs: where blocks of 8 would read more than
    :data:`ONE_HOT_BLOCKS_ENTROPY` × h(q) digits per coin and runs fewer (blocks take less CPU down to q ≈ 0.01)."""
    q = Fraction(q)
    blocks, runs = _digits_per_coin(q)
    return runs < blocks and blocks > ONE_HOT_BLOCKS_ENTROPY * coin_entropy(q)


def coin_entropy(q: Fraction) -> float:
    """h(q), the bits of entropy of one coin of probability ``q`` (0 for a certain coin)."""
    x = float(q)
    return 0.0 if x in (0.0, 1.0) else -x * math.log2(x) - (1 - x) * math.log2(1 - x)


def _digits_per_coin(q: Fraction) -> tuple[float, float]:
    """Expected digits read per q-coin by blocks of 8 and by runs."""
    covered = (1 - (1 - float(q)) ** RUN) / float(q)  # expected coins per run symbol
    return pattern_table(q, BLOCK).mean_digits / BLOCK, run_table(q).mean_digits / covered


@lru_cache(maxsize=16)
def _tables(
    p: Fraction, q: Fraction, sizes: frozenset[int], true_sizes: frozenset[int], run: bool
) -> _Tables:
    """The tables of q-coin blocks of ``sizes`` (or of runs, ``run``) and of true-coin blocks of ``true_sizes``."""
    tables: list[PatternTable | None] = [None]
    if run:
        tables += [run_table(q)] + [None] * (BLOCK - 1)
    else:
        tables += [pattern_table(q, t) if t in sizes else None for t in range(1, BLOCK + 1)]
    tables += [pattern_table(p, t) if t in true_sizes else None for t in range(1, BLOCK + 1)]
    window = np.zeros((2 * BLOCK + 1, 1 << WINDOW), dtype=np.uint16)
    lower = np.zeros((2 * BLOCK + 1, (1 << BLOCK) + 1), dtype=np.int64)
    upper = np.zeros_like(lower)
    cells = np.zeros(2 * BLOCK + 1, dtype=np.int64)
    for t, table in enumerate(tables):
        if table is not None:
            n = len(table.cuts)
            window[t], lower[t, :n], upper[t, :n], cells[t] = table.window, table.lower, table.upper, n - 1
    return _Tables(window, lower, upper, cells, tuple(tables), run)


def _block_sizes(widths: np.ndarray | None, width: int) -> frozenset[int]:
    """The block sizes of reports of ``widths`` coins (``width`` when they are all full)."""
    tails = {width % BLOCK} if widths is None else set(np.flatnonzero(np.bincount(widths % BLOCK)).tolist())
    full = BLOCK if (width if widths is None else int(widths.max(initial=0))) >= BLOCK else 0
    return frozenset(t for t in {*tails, full} if t)


def one_hot_coins(
    source: RandomSource,
    idx: np.ndarray,
    width: int,
    p: Fraction,
    q: Fraction,
    *,
    widths: np.ndarray | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Packed one-hot coin vectors: bit ``idx[i]`` of row i is 1 w.p. ``p``, every other bit w.p. ``q`` (exact).

    Parameters
    ----------
    source : RandomSource
        Where the uniform words come from (rows of whole words, see the module docstring).
    idx : (n,) int array
        Each report's true position.
    width : int
        Bits per report (the packed row holds ⌈width/8⌉ bytes).
    p, q : Fraction
        The probabilities, in (0, 1).
    widths : (n,) int array, optional
        Coins of each report when fewer than ``width`` (range-hierarchy's
        levels); its later bits are 0 and draw nothing. ``idx[i] < widths[i]``.
    backend : {"numba", "numpy"}, optional
        Force a backend (tests); by default the compiled kernel from
        :data:`NUMBA_THRESHOLD` reports when numba is installed. Both give
        the same reports from the same words.

    Returns
    -------
    numpy.ndarray
        (n, ⌈width/8⌉) uint8, in :func:`numpy.packbits` order.
    """
    p, q = _probability("p", p), _probability("q", q)
    idx, counts = _positions(idx, width, widths, backend)
    n = idx.size
    trues = np.ones(n, dtype=np.int64)
    out, truebits, _ = _draw(
        source, counts, trues, width, p, q, backend, alike=widths is None, runs=one_hot_draws_runs(q)
    )
    if n == 0:
        return out
    lane = (7 - (idx & 7)).astype(np.uint8)
    rows = np.arange(n)
    column = out[rows, idx >> 3]
    out[rows, idx >> 3] = (column & ~(np.uint8(1) << lane)) | ((truebits[:, 0] >> 7) << lane)
    return out


def marked_coins(
    source: RandomSource,
    marks: np.ndarray,
    width: int,
    p: Fraction,
    q: Fraction,
    *,
    backend: str | None = None,
) -> np.ndarray:
    """Packed coins: bit i of row r is 1 w.p. ``p`` where bit i of ``marks[r]`` is set, else w.p. ``q`` (exact).

    RAPPOR's coins (the Bloom bits B, or a persistent client's PRR bits B′,
    are the marks). The q-coins are drawn as :func:`one_hot_coins` draws
    them, but by runs wherever they read fewer digits than blocks
    (:func:`draws_runs`); the true coins, one per marked bit, as blocks of up to 8 coins of
    probability ``p`` before them in the report's stream (step 0 of a
    one-hot report is the block of its one true coin), and each replaces
    the q-coin at its marked bit, in order. When p + q = 1 (a p-coin is a
    flipped q-coin: 1 − Bern(q) ~ Bern(p)) no true coin is drawn: every bit
    is a q-coin and the marked ones are flipped, so the digits read do not
    depend on the marks. Otherwise a report reads the digits of its
    popcount's true coins, as many as it has marked bits (the bit-sliced
    lanes' further rounds depend on the marks too).

    Parameters
    ----------
    source : RandomSource
        Where the uniform words come from.
    marks : (n, ⌈width/8⌉) uint8
        Each report's marked bits, in :func:`numpy.packbits` order (no bit at or past ``width``).
    width : int
        Bits per report.
    p, q : Fraction
        The probabilities of a marked and of an unmarked bit, in (0, 1).
    backend : {"numba", "numpy"}, optional
        As for :func:`one_hot_coins`; both give the same reports from the same words.

    Returns
    -------
    numpy.ndarray
        (n, ⌈width/8⌉) uint8, in :func:`numpy.packbits` order.
    """
    p, q = _probability("p", p, "marked_coins"), _probability("q", q, "marked_coins")
    marks = _marks(marks, width, backend)
    n = marks.shape[0]
    counts = np.full(n, width, dtype=np.int64)
    if p + q == 1:
        trues = np.zeros(n, dtype=np.int64)
        out, _, _ = _draw(source, counts, trues, width, p, q, backend, MARKED_SLACK, alike=True)
        return np.bitwise_xor(out, marks, out=out)
    trues = _popcounts(marks)
    out, truebits, run = _draw(source, counts, trues, width, p, q, backend, MARKED_SLACK)
    if n:
        deposit = _deposit_numpy if run is _run_numpy else _deposit_kernel()
        deposit(out, marks, truebits)
    return out


def plain_coins(
    source: RandomSource,
    n: int,
    width: int,
    q: Fraction,
    *,
    backend: str | None = None,
    slack: int = MARKED_SLACK,
) -> np.ndarray:
    """Packed coins, every bit of every report 1 w.p. ``q`` (exact): :func:`marked_coins` without marks.

    Each report reads its own stream, as in :func:`marked_coins` with p + q = 1,
    but by blocks unless runs read fewer digits by more than :data:`PLAIN_RUNS_GAIN`
    (the compiled kernel steps blocks several times faster than runs); the
    digits read depend on ``n`` and ``width`` only.

    Parameters
    ----------
    source : RandomSource
        Where the uniform words come from.
    n, width : int
        Reports, and bits per report (at least 1).
    q : Fraction
        The coins' probability, in (0, 1).
    backend : {"numba", "numpy"}, optional
        As for :func:`one_hot_coins`.
    slack : int
        Digits a report's first row holds beyond its expected need (a report
        that reads past its row takes another pass); the reports depend on it.

    Returns
    -------
    numpy.ndarray
        (n, ⌈width/8⌉) uint8, in :func:`numpy.packbits` order.
    """
    q = _probability("q", q, "plain_coins")
    _check_width_and_backend(width, backend, "plain_coins")
    counts = np.full(n, width, dtype=np.int64)
    out, _, _ = _draw(
        source,
        counts,
        np.zeros(n, dtype=np.int64),
        width,
        1 - q,
        q,
        backend,
        slack,
        True,
        draws_runs(q, PLAIN_RUNS_GAIN),
    )
    return out


def _check_width_and_backend(width: int, backend: str | None, caller: str) -> None:
    """A one-line ParameterError naming ``caller`` unless a report holds a coin and ``backend`` is known."""
    if width < 1:
        raise ParameterError(f"{caller}: a report holds at least one coin, got width {width}")
    if backend not in (None, "numba", "numpy"):
        raise ParameterError(f"{caller}: backend is 'numba' or 'numpy', got {backend!r}")


def _marks(marks: Any, width: int, backend: str | None, caller: str = "marked_coins") -> np.ndarray:
    """``marks`` as a checked (n, ⌈width/8⌉) uint8 array, or a one-line ParameterError."""
    _check_width_and_backend(width, backend, caller)
    marks = np.asarray(marks)
    columns = (width + 7) // 8
    if marks.dtype != np.uint8 or marks.ndim != 2 or marks.shape[1] != columns:
        raise ParameterError(
            f"{caller}: marks are packed bits, uint8 of shape (n, {columns}), got {marks.dtype} {marks.shape}"
        )
    spare = -width % 8
    if spare and marks.size and np.any(marks[:, -1] & np.uint8((1 << spare) - 1)):
        raise ParameterError(f"{caller}: a mark lies past the report's {width} bits")
    return np.ascontiguousarray(marks)


def _popcounts(marks: np.ndarray) -> np.ndarray:
    """Marked bits per row (int64), counted eight bytes at a time where the rows allow it."""
    chunks = marks.view(np.uint64) if marks.shape[1] % 8 == 0 else marks
    return np.bitwise_count(chunks).sum(axis=1, dtype=np.int64)


def _deposit_numpy(out: np.ndarray, marks: np.ndarray, truebits: np.ndarray) -> None:
    """Write each report's true coins, in order, over its marked bits (the NumPy twin of the kernel's)."""
    width = 8 * out.shape[1]
    marked = np.unpackbits(marks, axis=1, count=width).astype(bool)
    rows, columns = np.nonzero(marked)  # row-major: each report's marked bits in order
    per_row = marked.sum(axis=1)
    rank = np.arange(rows.size) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    bits = np.unpackbits(out, axis=1, count=width)
    bits[rows, columns] = (truebits[rows, rank >> 3] >> (7 - (rank & 7)).astype(np.uint8)) & 1
    out[:] = np.packbits(bits, axis=1)


def _deposit_kernel() -> Any:
    from ldp.client.onehot_kernel import deposit_kernel

    return deposit_kernel


def _draw(
    source: RandomSource,
    counts: np.ndarray,
    trues: np.ndarray,
    width: int,
    p: Fraction,
    q: Fraction,
    backend: str | None,
    slack: int = ROW_SLACK,
    alike: bool = False,
    runs: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, Any]:
    """Each report's ``counts`` q-coins and ``trues`` true coins (p), by the module's streams.

    ``alike``: every report has the same counts (the caller knows; the rows and steps are then computed once).
    ``runs``: draw the q-coins by runs (True) or blocks (False); by default as :func:`draws_runs` says.
    Returns the packed q-coins (n, ⌈width/8⌉), the packed true coins
    (n, ⌈max trues/8⌉, at least 1 column) and the backend that drew them.
    """
    n = counts.size
    out = np.zeros((n, (width + 7) // 8), dtype=np.uint8)
    truebits = np.zeros((n, max(1, -(-int(trues.max(initial=0)) // BLOCK))), dtype=np.uint8)
    if n == 0:
        return out, truebits, _run_numpy
    run = _backend(backend, n)
    sizes = _block_sizes(None if alike or counts.min() == width else counts, width)
    true_sizes = _block_sizes(trues[:1] if alike else trues, 0)
    tables = _tables(p, q, sizes, true_sizes, draws_runs(q) if runs is None else runs)
    if alike:  # the first report's, for all (the same arithmetic; rows of one length end at its multiples)
        steps = np.broadcast_to(_steps(counts[:1], trues[:1], tables)[0], (n,))
        row = int(_row_bits(counts[:1], trues[:1], tables, q, sizes, true_sizes, slack)[0])
        end = np.arange(row, row * (n + 1), row, dtype=np.int64) if row else np.zeros(n, dtype=np.int64)
        pos = end - row
    else:
        steps = _steps(counts, trues, tables)
        row_bits = _row_bits(counts, trues, tables, q, sizes, true_sizes, slack)
        end = np.cumsum(row_bits)
        pos = end - row_bits
    pool = _Pool(source, -(-int(end[-1]) // 64), 4 * n if slack < 8 else n // 4)  # room for the refills
    step = np.zeros(n, dtype=np.int64)
    status = np.zeros(n, dtype=np.int8)
    prefix = np.zeros(n, dtype=np.int64)
    active = np.arange(n, dtype=np.int64)
    while active.size:
        run(pool.words, active, pos, end, step, counts, trues, tables, out, truebits, status, prefix)
        held = active[status[active] != _DONE]
        for r in held[status[held] == _EXACT].tolist():
            _finish_exact(pool, tables, r, pos, end, step, counts, trues, out, truebits, prefix)
        stalled = held[status[held] == _STALLED]
        if stalled.size:
            _refill(pool, stalled, pos, end)
        active = held[step[held] < steps[held]]
    return out, truebits, run


def _positions(
    idx: Any, width: int, widths: np.ndarray | None, backend: str | None
) -> tuple[np.ndarray, np.ndarray]:
    """(true positions, coins of each report), checked: one-line ParameterErrors for what cannot be drawn."""
    if width < 1:
        raise ParameterError(f"one_hot_coins: a report holds at least one coin, got width {width}")
    if backend not in (None, "numba", "numpy"):
        raise ParameterError(f"one_hot_coins: backend is 'numba' or 'numpy', got {backend!r}")
    idx = np.asarray(idx, dtype=np.int64)
    if idx.ndim > 1:
        raise ParameterError(f"one_hot_coins: idx is one position per report (1-D), got shape {idx.shape}")
    idx = idx.ravel()
    n = idx.size
    counts = np.full(n, width, dtype=np.int64) if widths is None else np.asarray(widths, dtype=np.int64)
    if n and (
        counts.shape != (n,)
        or counts.min() < 1
        or counts.max() > width
        or np.any(idx >= counts)
        or idx.min() < 0
    ):
        raise ParameterError("one_hot_coins: every position must be below its report's width")
    return idx, counts


def _probability(name: str, value: Any, caller: str = "one_hot_coins") -> Fraction:
    """A coin probability in (0, 1) as an exact Fraction, or a one-line ParameterError naming it."""
    try:
        probability = Fraction(value)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(f"{caller}: {name} must be a probability in (0, 1), got {value!r}") from None
    if not 0 < probability < 1:
        raise ParameterError(f"{caller}: {name} must be in (0, 1), got {probability}")
    return probability


def _row_bits(
    counts: np.ndarray,
    trues: np.ndarray,
    tables: _Tables,
    q: Fraction,
    sizes: frozenset[int],
    true_sizes: frozenset[int],
    slack: int,
) -> np.ndarray:
    """Digits of each report's first row: about its expected need (it depends on the widths and the true coins'
    counts only, never on digits)."""
    values = np.arange(int(trues.max(initial=0)) + 1)  # the true coins' part per count, then per report
    true_bits = np.zeros(values.size)
    for t in sorted(true_sizes):
        per_block = tables.tables[BLOCK + t].mean_digits  # type: ignore[union-attr]
        true_bits += per_block * ((values // BLOCK) if t == BLOCK else (values % BLOCK == t))
    mean_bits = true_bits[trues]
    if tables.run:  # a run symbol covers (1 − r^RUN)/q coins on average; the last one may overshoot
        runs = tables.tables[1]
        assert runs is not None
        per_symbol = float(q) / (1 - (1 - float(q)) ** RUN)
        mean_bits += runs.mean_digits * (counts * per_symbol + 0.5)
    else:
        tail = counts % BLOCK
        for t in sorted(sizes):
            per_block = tables.tables[t].mean_digits  # type: ignore[union-attr]
            mean_bits += per_block * ((counts // BLOCK) if t == BLOCK else (tail == t))
    return np.maximum(0, np.ceil(mean_bits).astype(np.int64) + slack)


def _steps(counts: np.ndarray, trues: np.ndarray, tables: _Tables) -> np.ndarray:
    """Each report's step count: one per block of true coins (T of them), then one per block of q-coins, or
    (runs) the step is T + the q-coins covered."""
    return (trues + BLOCK - 1) // BLOCK + (counts if tables.run else (counts + BLOCK - 1) // BLOCK)


class _Pool:
    """Every word drawn for one call, in the order drawn, and the carried digits, in one buffer with room to spare.

    ``words`` holds two words past the last used, so a window at a row's
    end may read past it (digits that decide nothing: a step that needs them waits).
    """

    def __init__(self, source: RandomSource, n: int, spare: int):
        self.source = source
        self.words = np.empty(n + spare + 2, dtype=np.uint64)
        self.words[:n] = source.words(n)
        self.words[n:] = 0
        self.used = n

    def reserve(self, n: int) -> int:
        """Room for ``n`` more words (nothing drawn); returns the index of the first."""
        first = self.used
        if first + n + 2 > self.words.size:
            grown = np.zeros(2 * (first + n + 2), dtype=np.uint64)
            grown[:first] = self.words[:first]
            self.words = grown
        self.used = first + n
        return first


def _refill(pool: _Pool, stalled: np.ndarray, pos: np.ndarray, end: np.ndarray) -> None:
    """New rows for the reports that stopped: each its unread digits, then REFILL_BITS fresh digits.

    A report stops when its next step may need digits past its row; the
    digits it has not consumed are carried to the head of its new row, so
    every report reads one unbroken stream of its own (nothing is discarded,
    and no step's result depends on where a row ends). The fresh digits are
    halves of words drawn together, in report order.
    """
    m = end[stalled] - pos[stalled]  # < 64: the carried digits
    carried = _bits_at(pool.words, pos[stalled], m)
    fresh = np.asarray(pool.source.words(-(-stalled.size // 2)), dtype=np.uint64)
    halves = np.stack([fresh >> np.uint64(32), fresh & np.uint64(0xFFFFFFFF)], axis=1).ravel()[: stalled.size]
    first = pool.reserve(2 * stalled.size)
    rows = first + 2 * np.arange(stalled.size, dtype=np.int64)
    pool.words[rows] = carried  # right-aligned: the row starts m digits before the word's end
    pool.words[rows + 1] = halves << np.uint64(64 - REFILL_BITS)
    pos[stalled] = 64 * rows + 64 - m
    end[stalled] = 64 * rows + 64 + REFILL_BITS


def _bits_at(words: np.ndarray, pos: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The ``m`` (0 to 63) digits at each bit position, right-aligned in uint64."""
    index = pos >> 6
    offset = (pos & 63).astype(np.uint64)
    word = words[index]
    window = np.where(offset > 0, (word << offset) | (words[index + 1] >> ((64 - offset) & 63)), word)
    keep = m.astype(np.uint64)
    return np.where(keep > 0, window >> ((np.uint64(64) - keep) & np.uint64(63)), np.uint64(0))


def _finish_exact(
    pool: _Pool,
    tables: _Tables,
    r: int,
    pos: np.ndarray,
    end: np.ndarray,
    step: np.ndarray,
    counts: np.ndarray,
    trues: np.ndarray,
    out: np.ndarray,
    truebits: np.ndarray,
    prefix: np.ndarray,
) -> None:
    """Settle report ``r``'s open block with the exact cuts (its first PRECISION digits are ``prefix[r]``)."""
    s, m = int(step[r]), int(trues[r])
    first = -(-m // BLOCK)  # the true coins' steps come first
    if s < first:
        size = min(BLOCK, m - BLOCK * s)
        table = tables.tables[BLOCK + size]
    else:
        size = 1 if tables.run else min(BLOCK, int(counts[r]) - BLOCK * (s - first))
        table = tables.tables[size]
    assert table is not None
    a, j = int(prefix[r]), PRECISION

    def digit() -> int:
        if pos[r] >= end[r]:  # a fresh word (this report's row is read to its end)
            first = pool.reserve(1)
            pool.words[first] = pool.source.words(1)[0]
            pos[r], end[r] = 64 * first, 64 * first + 64
        bit = (int(pool.words[pos[r] >> 6]) >> (63 - (int(pos[r]) & 63))) & 1
        pos[r] += 1
        return bit

    cell = _exact_cell(table.cuts, a, j, digit)
    if s < first:
        truebits[r, s] = cell << (BLOCK - size)
        step[r] = s + 1
    elif tables.run:  # cell k < RUN: k zeros then a one; RUN: RUN zeros
        covered = s - first + min(cell + 1, RUN)
        if cell < RUN and covered <= counts[r]:
            out[r, (covered - 1) >> 3] |= 1 << (7 - ((covered - 1) & 7))
        step[r] = first + covered
    else:
        out[r, s - first] = cell << (BLOCK - size)
        step[r] = s + 1


def _exact_cell(cuts: tuple[Fraction, ...], a: int, j: int, digit: Any) -> int:
    """The cell of U ∈ [a/2^j, (a+1)/2^j), reading further digits by ``digit()`` until exact cuts settle it."""
    last = len(cuts) - 2
    while True:
        k = min(bisect_right(cuts, Fraction(a, 1 << j)) - 1, last)
        if Fraction(a + 1, 1 << j) <= cuts[k + 1]:
            return k
        a, j = 2 * a + digit(), j + 1


_KERNEL_LOCK = threading.Lock()
_KERNEL: list[Any] = []
_NO_NUMBA = "the numba backend needs numba: pip install 'ldp-telemetry[fast]'"
_KERNEL_WHY: list[str] = []  # why the kernel is missing, when it is
_DRAWN = [0.0]  # secure one-hot reports (or their equivalent in coins) drawn by the lanes before the kernel


def serves_secure_batch(n: int, weight: float = 1.0) -> bool:
    """Whether the secure batch path draws ``n`` reports' one-hot coins here (see :data:`SECURE_BATCH`).

    Both samplers are exact, so the choice changes only the CSPRNG bytes read
    and the time: this module's (about 1.3× the entropy) where its compiled
    kernel runs, so that leaving ``ldp-telemetry[fast]`` out keeps the
    previous speed. Loading the kernel costs a process about 0.7 s of CPU
    once (numba's import and its cache; a first compile takes seconds), about
    what the bit-sliced lanes take for :data:`KERNEL_AFTER` reports, so the
    kernel is loaded only once a process has drawn that many with the lanes
    (the ski-rental rule: a process never pays more than about twice the
    better of the two choices, and a long run gets the kernel's speed).
    ``weight``: what one of these reports costs the lanes, in reports of
    :data:`KERNEL_AFTER_COINS` coins (1: a one-hot report of d = 1,024).
    """
    if SECURE_BATCH not in ("auto", "always", "never"):
        raise ParameterError(f"onehot.SECURE_BATCH is 'auto', 'always' or 'never', got {SECURE_BATCH!r}")
    if SECURE_BATCH == "always":
        return True
    if SECURE_BATCH == "never" or n < NUMBA_THRESHOLD:
        return False
    with _KERNEL_LOCK:
        if not _KERNEL:  # not loaded yet: only once this process has drawn KERNEL_AFTER reports
            _DRAWN[0] += n * weight
            if _DRAWN[0] <= KERNEL_AFTER:
                return False
    return _backend(None, n) is not _run_numpy


def serves_marked_batch(
    n: int, lane_digits: float, flipped: bool, coins: int = KERNEL_AFTER_COINS, *, fair: bool = False
) -> bool:
    """Whether the secure batch path draws ``n`` reports' RAPPOR coins by
    :func:`ldp.client.marked_correction.corrected_coins` (plain q-coins, the marked bits corrected).

    ``lane_digits`` is what the bit-sliced lanes would read per coin;
    ``flipped``: the two probabilities sum to 1; ``coins``: a report's coins
    (its bits); ``fair``: the unmarked bits' probability is 1/2 (their coins
    are the words' bits). Under ``"auto"`` only where the compiled kernel serves the
    batch (:func:`serves_secure_batch`, the batch counting toward
    :data:`KERNEL_AFTER` as ``n · coins / KERNEL_AFTER_COINS`` one-hot
    reports: a 128-bit RAPPOR report costs the lanes about an eighth of a
    1,024-bit one) and ``lane_digits`` ≥ :data:`FLIPPED_MIN_DIGITS`
    (flipped or fair) or :data:`MARKED_MIN_DIGITS`: elsewhere the lanes are no slower
    (both samplers are exact).
    """
    least = FLIPPED_MIN_DIGITS if flipped or fair else MARKED_MIN_DIGITS
    if SECURE_BATCH == "auto" and lane_digits < least:
        return False
    return serves_secure_batch(n, coins / KERNEL_AFTER_COINS)


def _backend(name: str | None, n: int) -> Any:
    if name == "numpy" or (name is None and n < NUMBA_THRESHOLD):
        return _run_numpy
    with _KERNEL_LOCK:
        if not _KERNEL:
            try:
                from ldp.client.onehot_kernel import run_kernel
            except ImportError:  # numba is an optional extra (ldp-telemetry[fast])
                _KERNEL.append(None)
                _KERNEL_WHY.append(_NO_NUMBA)
            except (
                RuntimeError,
                OSError,
            ) as exc:  # numba found no writable cache (a read-only install and HOME)
                _KERNEL.append(None)
                _KERNEL_WHY.append(f"the numba kernel could not be loaded: {exc}")
                warnings.warn(
                    f"{_KERNEL_WHY[0]}; one-hot and RAPPOR coins are drawn without it (set NUMBA_CACHE_DIR to a writable folder)",
                    LDPWarning,
                    stacklevel=2,
                )
            else:
                _KERNEL.append(run_kernel)
    if _KERNEL[0] is None:
        if name == "numba":
            raise ParameterError(_KERNEL_WHY[0] if _KERNEL_WHY else _NO_NUMBA)
        return _run_numpy
    return _KERNEL[0]


def _read(words: np.ndarray, pos: np.ndarray, digits: int) -> np.ndarray:
    """The next ``digits`` (≤ 32) digits at each bit position, as int64."""
    index = pos >> 6
    offset = (pos & 63).astype(np.uint64)
    word = words[index]
    shifted = np.where(offset > 0, (word << offset) | (words[index + 1] >> ((64 - offset) & 63)), word)
    return (shifted >> np.uint64(64 - digits)).astype(np.int64)


def _run_numpy(
    words: np.ndarray,
    active: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    step: np.ndarray,
    counts: np.ndarray,
    trues: np.ndarray,
    tables: _Tables,
    out: np.ndarray,
    truebits: np.ndarray,
    status: np.ndarray,
    prefix: np.ndarray,
) -> None:
    """One pass of the NumPy backend: every report of ``active`` advances until done, stalled or exact.

    One step of every live report per round, on compact copies of their
    state (written back as reports leave the pass).
    """
    status[active] = _DONE
    steps = _steps(counts, trues, tables)
    live = active[step[active] < steps[active]]
    p, s, e, n, stop, m = pos[live], step[live], end[live], counts[live], steps[live], trues[live]
    while live.size:
        first = (m + BLOCK - 1) // BLOCK  # the true coins' steps come first
        true = s < first
        qs = s - first  # the q-coins' block (or, by runs, coins covered)
        if tables.run:
            size = np.where(true, np.minimum(BLOCK, m - BLOCK * s), 1)
        else:
            size = np.minimum(BLOCK, np.where(true, m - BLOCK * s, n - BLOCK * qs))
        t = np.where(true, BLOCK + size, size)
        v = _read(words, p, WINDOW)
        entry = tables.window[t, v].astype(np.int64)
        digits, cell = entry >> 8, entry & 0xFF
        # a step whose digits may run past the row waits for the row's next part (the same stream)
        leave = p + np.where(digits > 0, digits, PRECISION) > e
        state = np.where(leave, _STALLED, _DONE)
        go = ~leave
        p = p + np.where(go, digits, 0)
        slow = np.flatnonzero(go & (digits == 0))
        if slow.size:
            settled, p[slow] = _slow_numpy(words, live[slow], v[slow], t[slow], p[slow], tables, prefix)
            cell[slow] = np.maximum(settled, 0)
            exact = slow[settled < 0]
            state[exact], leave[exact], go[exact] = _EXACT, True, False
        drawn = go & true
        truebits[live[drawn], s[drawn]] = (cell[drawn] << (BLOCK - size[drawn])).astype(np.uint8)
        rest = go & ~true
        if tables.run:  # cell k < RUN: k zeros then a one (if within the report); RUN: RUN zeros
            covered = qs + np.minimum(cell + 1, RUN)
            one = rest & (cell < RUN) & (covered <= n)
            at = covered[one] - 1
            out[live[one], at >> 3] |= (1 << (7 - (at & 7))).astype(np.uint8)
            s = np.where(rest, first + covered, s + drawn)
        else:
            out[live[rest], qs[rest]] = (cell[rest] << (BLOCK - size[rest])).astype(np.uint8)
            s = s + go
        leave |= s >= stop
        if leave.any():
            gone = live[leave]
            pos[gone], step[gone], status[gone] = p[leave], s[leave], state[leave]
            keep = ~leave
            live, p, s, e, n, stop, m = (x[keep] for x in (live, p, s, e, n, stop, m))


def _slow_numpy(
    words: np.ndarray,
    reports: np.ndarray,
    v: np.ndarray,
    t: np.ndarray,
    p: np.ndarray,
    tables: _Tables,
    prefix: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Steps the window left open (their digits from ``p``): the next digits against the fixed-point bounds.

    Returns each step's cell (−1 where 32 digits do not settle it: its
    32-digit prefix goes to ``prefix``) and the position after the digits read.
    """
    more = PRECISION - WINDOW
    after = p + WINDOW
    value = (v << more) | _read(words, after, more)  # the first 32 digits
    extra = np.arange(1, more + 1)  # digits read past the window
    low = (value[:, None] >> (more - extra)) << (more - extra)  # U's least value after each
    width = 1 << (more - extra)
    cell = np.full(reports.size, -1, dtype=np.int64)
    used = np.full(reports.size, more, dtype=np.int64)
    for table_index in np.unique(t).tolist():
        table = tables.tables[table_index]
        assert table is not None
        rows = np.flatnonzero(t == table_index)
        ks = np.minimum(np.searchsorted(table.upper, low[rows], side="right") - 1, len(table.cuts) - 2)
        settled = low[rows] + width <= table.lower[ks + 1]
        some = settled.any(axis=1)
        at = np.argmax(settled, axis=1)  # the first digit count that settles it
        cell[rows[some]] = ks[some, at[some]]
        used[rows[some]] = at[some] + 1
    open_ = cell < 0
    prefix[reports[open_]] = value[open_]
    return cell, after + used
