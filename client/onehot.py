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

1. Each report reads a stream of uniform digits (most significant digit of
   each word first): its own (:func:`plain_coins`, :func:`marked_coins`),
   or, in :func:`one_hot_coins`, its chain's (a few consecutive reports,
   each reading from where the one before it stopped).
2. The first T = ⌈m/8⌉ steps draw the report's m true coins (one-hot: m = 1,
   step 0 draws the true coin) as blocks of up to 8 coins of probability p,
   like the q-blocks below. Then either
   **blocks**: step T + s draws coins 8s … 8s+7 (the last block holds
   what is left) as one of the 2^t patterns of t ≤ 8 coins, pattern j
   (coin i = bit t−1−i of j, so j is the packed byte) with probability
   q^|j| (1−q)^(t−|j|); or **runs**, for sparse coins (small q) where they
   read fewer digits per coin and blocks would read too many (more than
   :data:`BLOCKS_ENTROPY` × the entropy, :func:`draws_runs`: the kernel
   steps blocks several times faster): a step draws k < L zeros then a
   one (probability (1−q)^k q) or L zeros ((1−q)^L), until the report's
   coins are covered (a one past them is dropped); L is 255, or, in a
   report of at most 256 coins, the least of 2, 4, …, 128 that covers the
   coins left (:func:`run_step`: no digits spent on where a one falls past
   the report's end).
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

Streams. The first rows are drawn in one call: a chain's row is the next
⌈Σ E_i⌉ + slack digits of ``source.words(…)`` (E_i the expected digits
of its report i; the slack is 0 for one-hot reports). A report stops before a
step that may need digits past its row (the table says how many the step
reads; 32 when it does not settle it); a report that is done hands the
rest of its row to the next report of its chain, which starts there (the
digits after a report's last step are unread: its steps' outcomes and
where it stopped are decided by the digits before). The reports that
stopped get new rows together, in report order: the digits each had not
read, carried over, then fresh digits, the next of words drawn together:
:data:`REFILL_BITS` for a report reading its own stream, about what its
chain still needs for one-hot reports (:data:`REFILL_MARGIN`). So each
chain reads one unbroken stream of its own, every digit drawn decides at
most one report's coins (a 16-digit lookup may look at digits past the
ones its entry is decided by, which never change that entry), and where a
row ends changes no outcome: the coins are exact and independent whatever
the rows. The digits drawn depend on the batch's size and widths and on
the coins drawn (how many stop, where), as before. For one-hot reports
the digits drawn and every q-coin do not depend on the true position (the
true coin is every report's first step; a q-coin is drawn at every
position): the amount of randomness read reveals nothing about the value. :func:`marked_coins` with
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
    "BLOCKS_ENTROPY",
    "KERNEL_AFTER",
    "MARKED_MIN_DIGITS",
    "NUMBA_THRESHOLD",
    "PRECISION",
    "RUN_LENGTHS",
    "SECURE_BATCH",
    "SHORT_RUNS_MOST",
    "coin_entropy",
    "draws_runs",
    "marked_coins",
    "one_hot_coins",
    "pattern_table",
    "plain_coins",
    "run_step",
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
#: The longest runs of run tables 1 to 8 (index 0 unused): a run step takes the shortest that covers the report's
#: remaining coins (or RUN), so it spends no digits on where a one falls past the report's end.
RUN_LENGTHS = (0, 2, 4, 8, 16, 32, 64, 128, RUN)
#: Reports of more coins take runs of RUN only (their few last runs gain little, and the further tables cost
#: the kernel ~10 % at d = 1,024).
SHORT_RUNS_MOST = 256
#: Fresh digits of a stopped report's new row (after the digits it carries over) where each report reads its own
#: stream (:func:`plain_coins`, :func:`marked_coins`).
REFILL_BITS = 32
#: :func:`one_hot_coins` chains its reports: a chain of consecutive reports reads one stream, each report from
#: where the one before it stopped, so only a chain's last report leaves digits unread (a report of d = 64
#: needs 0.5–8 bytes; 32 fresh digits for each report that stopped at its own row's end, mostly left unread,
#: read 2.5–7.4× the entropy at small q). A chain holds enough reports that its expected digits reach
#: CHAIN_DIGITS, at most CHAIN_MOST (d = 1,024: one report a chain; d = 64: 6 at q = 3/8, 39 at 1/64).
CHAIN_DIGITS = 512
#: See :data:`CHAIN_DIGITS`.
CHAIN_MOST = 64
#: A stopped chain's new row holds, after its carried digits, the expected digits of its report's remaining steps
#: and of the chain's later reports, plus this many, and at least :data:`REFILL_LEAST`: a chain stops about
#: once or twice (d = 64, q = 1/4: of 22,322 chains of 7 reports, 8,335 stop once and 156 twice), where a
#: report's own 32 more digits left most of them unread.
REFILL_MARGIN = 4
#: See :data:`REFILL_MARGIN`.
REFILL_LEAST = 8
#: Digits a chain's (one-hot) or a report's first row holds beyond its expected need.
ROW_SLACK = 0
#: The same for :func:`marked_coins` (RAPPOR, whose reports are short): about 2 bytes a report buys one
#: kernel pass where ROW_SLACK = 0 takes two (about 40 % of the reports stop at their row's end).
MARKED_SLACK = 16
#: Blocks or runs, one rule for every caller (:func:`draws_runs`): q-coins are drawn by blocks unless blocks would
#: read more than this many times the q-coins' entropy h(q) per coin and runs fewer (then by runs, 1.25–1.5×
#: h(q)), so the q-coins read under 2× their entropy either way. On the compiled kernel (d = 1,024, CPU time per
#: coin, benchmarks/bench_onehot_coins.py) blocks take 0.41–0.47 ns a coin at every q from 3/8 down to 1/256 (one
#: table step per 8 coins), runs 1.1 to 11 ns from q = 1/32 to 3/8 (one general step per symbol): runs are the
#: faster only below q ≈ 0.01, where blocks read over 4× h(q). Blocks stay under this bound down to q ≈ 0.035
#: (the longitudinal OUE at ε = 2: q = 0.048, blocks 1.66× h(q)); at q = 1/32 they read 1.82× h(q) and OUE at
#: ε = 4 (q = 0.018) 2.6×: runs. (RAPPOR's :func:`plain_coins` took runs wherever they read 1.25× fewer
#: digits, :func:`marked_coins` wherever fewer: the former rules chose runs at some q in 0.033–0.046, and
#: marked_coins up to q ≈ 0.118, where blocks read 1.36–1.74× h(q) at about a third of the runs' CPU.)
BLOCKS_ENTROPY = 1.75
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
#: 8) plus ~1.3× the entropy. From 2 digits they are no slower: with p + q = 1 (every coin a q-coin, the marked
#: ones flipped) 3/4 and 1/4 at 0.93–0.97× the lanes' CPU; with fair q-coins (q = 1/2: the words' bits, no
#: lookup) 3/4 and 1/2 at 0.77–0.80×; with each marked bit's q-coin combined with a further coin
#: (:mod:`ldp.client.marked_correction`) 7/8 and 5/8, 3/8 and 1/8 (3 digits) at 0.82–0.95×, and 1/2 and 1/4
#: (2 digits) at about the lanes' CPU (1.00–1.03× in three runs of 9–11 pairs, 0.98–1.06× in two before) for
#: 1.29× the entropy against the lanes' 2.40×. Below 2 digits (f = 1: every coin fair) the lanes.
MARKED_MIN_DIGITS = 2
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


@lru_cache(maxsize=64)
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
    table t the runs of at most RUN_LENGTHS[t] q-coins (:func:`run_step`); table BLOCK + t (9 to 16) the
    blocks of t true coins (probability p). Table 0 is unused."""

    window: np.ndarray  # (17, 2^16) uint16
    lower: np.ndarray  # (17, 257) int64
    upper: np.ndarray  # (17, 257) int64
    cells: np.ndarray  # (17,) int64
    tables: tuple[PatternTable | None, ...]
    run: bool


def draws_runs(q: Fraction) -> bool:
    """Whether q-coins are drawn by runs (:func:`one_hot_coins`, :func:`plain_coins`, :func:`marked_coins` and
    RAPPOR's corrected coins alike): where blocks of 8 would read more than :data:`BLOCKS_ENTROPY` × h(q) digits
    per coin and runs fewer (blocks take less CPU down to q ≈ 0.01)."""
    q = Fraction(q)
    blocks, runs = _digits_per_coin(q)
    return runs < blocks and blocks > BLOCKS_ENTROPY * coin_entropy(q)


def coin_entropy(q: Fraction) -> float:
    """h(q), the bits of entropy of one coin of probability ``q`` (0 for a certain coin)."""
    x = float(q)
    return 0.0 if x in (0.0, 1.0) else -x * math.log2(x) - (1 - x) * math.log2(1 - x)


def run_step(remaining: Any, coins: Any) -> Any:
    """The run table (1 to 8) of a run step with ``remaining`` (≥ 1) of its report's ``coins`` q-coins left to
    cover: in a report of at most :data:`SHORT_RUNS_MOST` coins the shortest of :data:`RUN_LENGTHS` that covers
    them, else the longest (ints, or int64 arrays)."""
    return np.where(
        np.asarray(coins) > SHORT_RUNS_MOST, BLOCK, np.searchsorted(_RUN_BOUNDS, remaining, side="left") + 1
    )


_RUN_BOUNDS = np.array(RUN_LENGTHS[1:BLOCK], dtype=np.int64)
_RUN_LONGEST = np.array(RUN_LENGTHS, dtype=np.int64)


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
        tables += [run_table(q, RUN_LENGTHS[t]) for t in range(1, BLOCK + 1)]
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
        source,
        counts,
        trues,
        width,
        p,
        q,
        backend,
        slack=ROW_SLACK,
        alike=widths is None,
        chained=True,
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
    them, by blocks or runs as :func:`draws_runs` says; the true coins, one per marked bit, as blocks of up to 8 coins of
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
    by blocks or runs as :func:`draws_runs` says (the compiled kernel steps
    blocks several times faster than runs); the digits read depend on ``n``,
    ``width`` and the coins drawn only.

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
    chained: bool = False,
) -> tuple[np.ndarray, np.ndarray, Any]:
    """Each report's ``counts`` q-coins and ``trues`` true coins (p), by the module's streams.

    ``alike``: every report has the same counts (the caller knows; the rows and steps are then computed once).
    The q-coins are drawn by runs or by blocks as :func:`draws_runs` says.
    ``chained``: consecutive reports share one stream (:func:`_chain_length` of them; a report starts where the
    one before it stopped) and a stalled report's new row holds about what its chain still needs; else each
    report reads its own stream and a new row holds REFILL_BITS more digits.
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
    tables = _tables(p, q, sizes, true_sizes, draws_runs(q))
    if alike:  # the first report's, for all
        steps = np.broadcast_to(_steps(counts[:1], trues[:1], tables)[0], (n,))
        need = np.broadcast_to(_row_bits(counts[:1], trues[:1], tables, q, sizes, true_sizes, 0, False), (n,))
    else:
        steps = _steps(counts, trues, tables)
        need = _row_bits(counts, trues, tables, q, sizes, true_sizes, 0, False)
    length = _chain_length(float(need[0] if alike else need.mean())) if chained else 1
    heads, follow, after, pos, end = _layout(need, length, slack)
    pool = _Pool(source, -(-int(end[-1]) // 64), 4 * n if slack < 8 else n // 4)  # room for the refills
    step = np.zeros(n, dtype=np.int64)
    status = np.zeros(n, dtype=np.int8)
    prefix = np.zeros(n, dtype=np.int64)
    active = heads
    compiled = run is not _run_numpy
    while active.size:
        run(pool.words, active, pos, end, step, counts, trues, tables, out, truebits, status, prefix, follow)
        held = active[status[active] != _DONE]  # each chain's report that stopped (the run left it in active)
        for r in held[status[held] == _EXACT].tolist():
            _finish_exact(pool, tables, r, pos, end, step, counts, trues, out, truebits, prefix)
        stalled = held[status[held] == _STALLED]
        if stalled.size:
            if chained:
                more = _refill_sizes(tables, q, counts, trues, steps, step, stalled, after)
            else:
                more = np.full(stalled.size, REFILL_BITS, dtype=np.int64)
            _refill(pool, stalled, pos, end, more, compiled)
        if length > 1:
            held = _next_in_chain(held, step, steps, pos, end, follow)
        active = held[step[held] < steps[held]]
    if length > 1 and np.any(step < steps):  # every chain ran to its end (a backend that left one: zeros)
        raise AssertionError("one-hot coins: a report was left undrawn")
    return out, truebits, run


def _layout(
    need: np.ndarray, length: int, slack: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """The first rows: (chain heads, each report's next in its chain or −1, the later reports' expected digits
    (None for chains of one), row starts, row ends); a chain's row is its reports' expected digits plus ``slack``."""
    n = need.size
    if length > 1:  # the chain's members share its row (a member's position is set when it starts)
        heads = np.arange(0, n, length, dtype=np.int64)
        rows = np.maximum(0, np.ceil(np.add.reduceat(need, heads)).astype(np.int64) + slack)
        end = np.repeat(np.cumsum(rows), length)[:n]
        follow = np.where(np.arange(1, n + 1) % length == 0, -1, np.arange(1, n + 1))
        follow[-1] = -1
        return heads, follow, _chain_after(need, length), end - np.repeat(rows, length)[:n], end
    heads, follow = np.arange(n, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    rows = np.maximum(0, np.ceil(need).astype(np.int64) + slack)
    end = np.cumsum(rows)
    return heads, follow, None, end - rows, end


def _next_in_chain(
    held: np.ndarray, step: np.ndarray, steps: Any, pos: np.ndarray, end: np.ndarray, follow: np.ndarray
) -> np.ndarray:
    """``held`` with each report that is done (a block the exact cuts settled was its last) replaced by the
    next of its chain, which starts where it stopped (its row ending where that report's ends)."""
    done = held[(step[held] >= steps[held]) & (follow[held] >= 0)]
    if done.size == 0:
        return held
    held = held.copy()
    where = np.searchsorted(held, done)
    nxt = follow[done]
    pos[nxt], end[nxt] = pos[done], end[done]
    held[where] = nxt
    return held


def _chain_length(need: float) -> int:
    """Reports per chain: enough that a chain's expected digits reach CHAIN_DIGITS, at most CHAIN_MOST."""
    return int(min(CHAIN_MOST, max(1, CHAIN_DIGITS // max(need, 1.0))))


def _chain_after(need: np.ndarray, length: int) -> np.ndarray:
    """For each report, the expected digits of the reports after it in its chain (int64)."""
    n = need.size
    total = np.concatenate([[0], np.cumsum(need)])
    last = np.minimum((np.arange(n) // length + 1) * length, n)  # one past the chain's last report
    return np.ceil(total[last] - total[np.arange(1, n + 1)]).astype(np.int64)


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
    rounded: bool = True,
) -> np.ndarray:
    """Each report's expected digits, rounded up, plus ``slack`` (a first row's share: it depends on the widths
    and the true coins' counts only, never on digits); ``rounded=False``: the expected digits (float64)."""
    values = np.arange(int(trues.max(initial=0)) + 1)  # the true coins' part per count, then per report
    true_bits = np.zeros(values.size)
    for t in sorted(true_sizes):
        per_block = tables.tables[BLOCK + t].mean_digits  # type: ignore[union-attr]
        true_bits += per_block * ((values // BLOCK) if t == BLOCK else (values % BLOCK == t))
    mean_bits = true_bits[trues]
    if tables.run:
        runs = tables.tables[BLOCK]  # the runs of RUN coins: a symbol covers (1 − r^RUN)/q coins on average
        assert runs is not None
        per_symbol = float(q) / (1 - (1 - float(q)) ** RUN)
        short = (
            counts <= SHORT_RUNS_MOST
        )  # the shorter runs' exact expectation, else the last one may overshoot
        mean_bits += np.where(
            short,
            _runs_digits(q, np.minimum(counts, SHORT_RUNS_MOST), np.minimum(counts, SHORT_RUNS_MOST)),
            runs.mean_digits * (counts * per_symbol + 0.5),
        )
    else:
        tail = counts % BLOCK
        for t in sorted(sizes):
            per_block = tables.tables[t].mean_digits  # type: ignore[union-attr]
            mean_bits += per_block * ((counts // BLOCK) if t == BLOCK else (tail == t))
    if not rounded:
        return mean_bits
    return np.maximum(0, np.ceil(mean_bits).astype(np.int64) + slack)


def _runs_digits(q: Fraction, remaining: np.ndarray, coins: np.ndarray) -> np.ndarray:
    """The expected digits runs read to cover ``remaining`` of a report's ``coins`` q-coins (float64)."""
    short = coins <= SHORT_RUNS_MOST
    if short.all():
        return _run_digits(q, SHORT_RUNS_MOST, True)[remaining]
    long = _run_digits(q, int(coins.max()), False)[remaining]
    return np.where(
        short, _run_digits(q, SHORT_RUNS_MOST, True)[np.minimum(remaining, SHORT_RUNS_MOST)], long
    )


@lru_cache(maxsize=16)
def _run_digits(q: Fraction, most: int, short: bool) -> np.ndarray:
    """The expected digits runs read to cover c q-coins, for c = 0 … ``most``, in a report of at most
    :data:`SHORT_RUNS_MOST` coins (``short``: the shorter runs) or more (float64; rows are sized by it)."""
    x = float(q)
    expected = np.zeros(most + 1)
    masses = {t: x * (1 - x) ** np.arange(RUN_LENGTHS[t]) for t in range(1, BLOCK + 1)}
    digits = {t: run_table(q, RUN_LENGTHS[t]).mean_digits for t in range(1, BLOCK + 1)}
    steps = run_step(np.arange(most + 1), 1 if short else SHORT_RUNS_MOST + 1)
    for c in range(1, most + 1):  # k zeros then a one leave c − k − 1 coins; L zeros (no one), c − L
        t = int(steps[c])
        longest = RUN_LENGTHS[t]
        k = min(c, longest)
        expected[c] = digits[t] + masses[t][:k] @ expected[c - k : c][::-1]
        if c > longest:
            expected[c] += (1 - x) ** longest * expected[c - longest]
    return expected


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


def _refill(
    pool: _Pool, stalled: np.ndarray, pos: np.ndarray, end: np.ndarray, more: np.ndarray, compiled: bool
) -> None:
    """New rows for the reports that stopped: each its unread digits, then ``more`` fresh digits.

    A report stops when its next step may need digits past its row; the
    digits it has not consumed are carried to the head of its new row, so
    every report's steps read one unbroken stream (nothing a step has looked
    at is discarded or read twice, and no step's result depends on where a
    row ends). The fresh digits are, in report order, the next ``more`` of
    words drawn together; the new rows are those digits joined, one after
    another, past the pool's last word.
    """
    m = end[stalled] - pos[stalled]  # the carried digits
    total = int(more.sum())
    words = -(-total // 64)
    first = pool.reserve(words)
    pool.words[first : first + words] = pool.source.words(words)
    starts = np.stack([pos[stalled], 64 * first + np.cumsum(more) - more], axis=1).ravel()
    joined, _ = _concatenate(pool.words, starts, np.stack([m, more], axis=1).ravel(), compiled)
    base = pool.reserve(joined.size)
    pool.words[base : base + joined.size] = joined
    row = m + more
    end[stalled] = 64 * base + np.cumsum(row)
    pos[stalled] = end[stalled] - row


def _refill_sizes(
    tables: _Tables,
    q: Fraction,
    counts: np.ndarray,
    trues: np.ndarray,
    steps: Any,
    step: np.ndarray,
    stalled: np.ndarray,
    after: np.ndarray | None,
) -> np.ndarray:
    """Fresh digits of a stalled report's new row in a chain: the expected digits of its remaining steps and of
    the chain's later reports (``after``), plus REFILL_MARGIN, at least REFILL_LEAST (from steps, never digits)."""
    if tables.run:
        first = (trues[stalled] + BLOCK - 1) // BLOCK
        covered = np.maximum(step[stalled] - first, 0)
        rest = _runs_digits(q, counts[stalled] - covered, counts[stalled])
    else:
        per_step = max(table.mean_digits for table in tables.tables[1 : BLOCK + 1] if table is not None)
        rest = (steps[stalled] - step[stalled]) * per_step
    later = 0 if after is None else after[stalled]  # (None: every report alone in its chain)
    return np.maximum(np.ceil(rest).astype(np.int64) + later + REFILL_MARGIN, REFILL_LEAST)


def _concatenate(
    words: np.ndarray, starts: np.ndarray, lengths: np.ndarray, compiled: bool
) -> tuple[np.ndarray, int]:
    """The digits of the segments [starts, starts + lengths) of ``words``, joined in order: (packed words, digits).

    ``compiled``: by the numba kernel's loop (:func:`ldp.client.onehot_kernel.join_kernel`), else by NumPy; the same words.
    """
    total = int(lengths.sum())
    joined = np.zeros(-(-total // 64) + 1, dtype=np.uint64)
    if total:
        if compiled:
            from ldp.client.onehot_kernel import join_kernel

            join_kernel(words, starts, lengths, joined)
        else:
            _join_numpy(words, starts, lengths, joined)
    return joined[: -(-total // 64)], total


def _join_numpy(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray, joined: np.ndarray) -> None:
    """Write the segments' digits, joined in order, into ``joined`` (zeros, a word to spare), in pieces of ≤ 32."""
    pieces = (lengths + 31) >> 5
    count = int(pieces.sum())
    segment = np.repeat(np.arange(lengths.size), pieces)
    k = np.arange(count, dtype=np.int64) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    size = np.minimum(32, lengths[segment] - 32 * k)
    value = _bits_at(words, starts[segment] + 32 * k, size)
    at = np.cumsum(size) - size
    index, offset = at >> 6, at & 63
    over = offset + size - 64  # > 0: the piece runs into the next word
    inside = over <= 0
    head = np.where(
        inside,
        value << np.where(inside, -over, 0).astype(np.uint64),
        value >> np.where(inside, 0, over).astype(np.uint64),
    )
    first = np.flatnonzero(np.concatenate([[True], index[1:] != index[:-1]]))
    joined[index[first]] = np.add.reduceat(head, first)  # the pieces' digits are disjoint: a sum is their OR
    cross = np.flatnonzero(~inside)
    joined[index[cross] + 1] |= value[cross] << (64 - over[cross]).astype(np.uint64)


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
        if tables.run:  # the run table covering the remaining coins (s − first covered)
            size = int(run_step(int(counts[r]) - (s - first), int(counts[r])))
        else:
            size = min(BLOCK, int(counts[r]) - BLOCK * (s - first))
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
    elif tables.run:  # cell k < L: k zeros then a one; L: L zeros (L = RUN_LENGTHS[table])
        longest = RUN_LENGTHS[size]
        covered = s - first + min(cell + 1, longest)
        if cell < longest and covered <= counts[r]:
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


def serves_marked_batch(n: int, lane_digits: float, coins: int = KERNEL_AFTER_COINS) -> bool:
    """Whether the secure batch path draws ``n`` reports' RAPPOR coins by
    :func:`ldp.client.marked_correction.corrected_coins` (plain q-coins, the marked bits corrected).

    ``lane_digits`` is what the bit-sliced lanes would read per coin;
    ``coins``: a report's coins (its bits). Under ``"auto"`` only where the compiled kernel serves the
    batch (:func:`serves_secure_batch`, the batch counting toward
    :data:`KERNEL_AFTER` as ``n · coins / KERNEL_AFTER_COINS`` one-hot
    reports: a 128-bit RAPPOR report costs the lanes about an eighth of a
    1,024-bit one) and ``lane_digits`` ≥ :data:`MARKED_MIN_DIGITS`: elsewhere the
    lanes are no slower (both samplers are exact).
    """
    if SECURE_BATCH == "auto" and lane_digits < MARKED_MIN_DIGITS:
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
    follow: np.ndarray,
) -> None:
    """One pass of the NumPy backend: every report of ``active`` advances until done, stalled or exact.

    One step of every live report per round, on compact copies of their
    state (written back as reports leave the pass). A report that is done
    hands its place to the next of its chain (``follow``), which starts
    where it stopped, in the same row; ``active`` is left holding each
    chain's last report run.
    """
    status[active] = _DONE
    steps = _steps(counts, trues, tables)
    slot = np.flatnonzero(step[active] < steps[active])  # (chains: a report starts at step 0 < its steps)
    live = active[slot]
    p, s, e, n, stop, m = pos[live], step[live], end[live], counts[live], steps[live], trues[live]
    while live.size:
        first = (m + BLOCK - 1) // BLOCK  # the true coins' steps come first
        true = s < first
        qs = s - first  # the q-coins' block (or, by runs, coins covered)
        if tables.run:  # a run step's table: the shortest run covering the report's remaining coins
            size = np.where(true, np.minimum(BLOCK, m - BLOCK * s), run_step(np.maximum(n - qs, 1), n))
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
        if tables.run:  # cell k < L: k zeros then a one (if within the report); L: L zeros
            longest = _RUN_LONGEST[size]
            covered = qs + np.minimum(cell + 1, longest)
            one = rest & (cell < longest) & (covered <= n)
            at = covered[one] - 1
            out[live[one], at >> 3] |= (1 << (7 - (at & 7))).astype(np.uint8)
            s = np.where(rest, first + covered, s + drawn)
        else:
            out[live[rest], qs[rest]] = (cell[rest] << (BLOCK - size[rest])).astype(np.uint8)
            s = s + go
        done = s >= stop
        leave |= done
        if leave.any():
            gone = live[leave]
            pos[gone], step[gone], status[gone] = p[leave], s[leave], state[leave]
            handed = np.flatnonzero(done & (state == _DONE) & (follow[live] >= 0))
            if handed.size:  # the next report of each finished one's chain, from where it stopped
                nxt = follow[live[handed]]
                live[handed], s[handed], n[handed], stop[handed] = nxt, step[nxt], counts[nxt], steps[nxt]
                m[handed], end[nxt], status[nxt], active[slot[handed]] = trues[nxt], e[handed], _DONE, nxt
                leave[handed] = False
            keep = ~leave
            live, p, s, e, n, stop, m, slot = (x[keep] for x in (live, p, s, e, n, stop, m, slot))


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
