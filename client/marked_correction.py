"""RAPPOR's coins as plain q-coins, the marked bits then corrected by one coin each (exact).

:func:`ldp.client.onehot.marked_coins` draws a report's marked bits (its
Bloom bits B, or a persistent client's PRR bits B′) as true coins of
probability p before its q-coins, and places them: per report, steps of
their own and a placing pass. Where the marks are few (a Bloom filter's h
of k bits; a PRR's quarter or so reads about as much) :func:`corrected_coins`
draws the same distribution faster:

1. every bit of every report is a q-coin x (by blocks of 8 from a few long
   digit streams, :func:`ldp.client.plain_streams.stream_coins`, or by runs,
   each report's stream as :func:`ldp.client.onehot.plain_coins` reads it,
   where :func:`ldp.client.onehot.draws_runs` takes runs), and the
   marked bits are flipped when that brings them nearer p (a flipped q-coin
   is a (1 − q)-coin);
2. each marked bit, now 1 with probability a (q or 1 − q), is combined with
   one further coin y of probability w: S = x OR y when p ≥ a, with
   w = (p − a)/(1 − a), so P[S = 1] = a + (1 − a) w = p; S = x AND y when
   p < a, with w = p/a, so P[S = 1] = a w = p. Of the two a's the one whose
   w has the least entropy is taken (w = 0 or 1, no coin, when p = 1 − q).

The y coins are drawn after the x coins, in rows of :data:`ROW` coins the
same way (about 1.3× their entropy), one for
every marked bit of the batch (whatever its x), and used in the marked
bits' row-major order (each report's packed bytes in turn, each byte from
its least significant bit). So the
digits read depend on the batch's size and its total count of marked bits
only, not on where the marks are (the count, as with
:func:`~ldp.client.onehot.marked_coins`, is visible to whoever watches the
device's CSPRNG use, never in a report). Every coin has exactly its
probability and all are independent: S's bits are independent with P[1] = p
on marked bits and q elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp.client import onehot
from ldp.client.plain_streams import stream_coins
from ldp.client.randomness import RandomSource
from ldp.errors import ParameterError

__all__ = ["ROW", "ROW_SLACK", "Correction", "corrected_coins", "correction"]

#: The y coins are drawn in rows of this many (a row's last coins may go unused).
ROW = 512
#: Digits a row of y coins holds beyond its expected need: the rows are few, so a wide margin (a row that
#: needs more takes another kernel pass, the draw's largest cost) costs a few bytes a batch.
ROW_SLACK = 64


@dataclass(frozen=True)
class Correction:
    """How the marked bits get probability p from q-coins.

    Attributes
    ----------
    flip : bool
        The marked bits' q-coins are flipped first (then 1 w.p. 1 − q).
    keep_ones : bool
        S = x OR y (True) or S = x AND y (False).
    coin : Fraction
        w, the probability of each marked bit's further coin y: 0 (OR) or 1 (AND) when none is needed.
    """

    flip: bool
    keep_ones: bool
    coin: Fraction

    @property
    def needs_coins(self) -> bool:
        """Whether the marked bits take a further coin (w strictly inside (0, 1))."""
        return 0 < self.coin < 1


def correction(p: Fraction, q: Fraction) -> Correction:
    """The :class:`Correction` that turns q-coins into p-coins with the least entropy of further coins.

    Parameters
    ----------
    p, q : Fraction
        The marked and the unmarked bits' probabilities, in (0, 1).
    """
    p, q = Fraction(p), Fraction(q)
    if not (0 < p < 1 and 0 < q < 1):
        raise ParameterError(f"correction: p and q must be in (0, 1), got {p}, {q}")
    options = []
    for flip, a in ((False, q), (True, 1 - q)):
        keep_ones = p >= a
        coin = (p - a) / (1 - a) if keep_ones else p / a
        options.append(Correction(flip, keep_ones, coin))
    return min(options, key=lambda option: onehot.coin_entropy(option.coin))  # a tie keeps the unflipped


def corrected_coins(
    source: RandomSource,
    marks: np.ndarray,
    width: int,
    p: Fraction,
    q: Fraction,
    *,
    backend: str | None = None,
) -> np.ndarray:
    """Packed coins: bit i of row r is 1 w.p. ``p`` where bit i of ``marks[r]`` is set, else w.p. ``q`` (exact).

    The distribution of :func:`ldp.client.onehot.marked_coins`, drawn as
    the module docstring says (not the same reports from the same words).

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
        As for :func:`ldp.client.onehot.marked_coins`; both give the same reports from the same words.

    Returns
    -------
    numpy.ndarray
        (n, ⌈width/8⌉) uint8, in :func:`numpy.packbits` order.
    """
    p = onehot._probability("p", p, "corrected_coins")
    q = onehot._probability("q", q, "corrected_coins")
    marks = onehot._marks(marks, width, backend, "corrected_coins")
    n = marks.shape[0]
    fix = correction(p, q)
    compiled = onehot._backend(backend, n) is not onehot._run_numpy
    backend = "numba" if compiled else "numpy"  # the y coins' few rows too
    out = _plain_coins(source, n, width, q, backend, onehot.MARKED_SLACK)
    if fix.flip:
        np.bitwise_xor(out, marks, out=out)
    if not fix.needs_coins or n == 0:
        return out
    total = _marked_bits(marks)
    if total == 0:
        return out
    rows = -(-total // ROW)
    coins = _plain_coins(source, rows, ROW, fix.coin, backend, ROW_SLACK).reshape(-1)
    (_correct_kernel() if compiled else _correct_numpy)(out, marks, coins, fix.keep_ones)
    return out


def _plain_coins(
    source: RandomSource, n: int, width: int, q: Fraction, backend: str, slack: int
) -> np.ndarray:
    """``n`` reports of ``width`` q-coins: by blocks from a few long streams (:func:`ldp.client.plain_streams.stream_coins`),
    or by runs (:func:`ldp.client.onehot.plain_coins`, first rows of ``slack`` spare digits) where
    :func:`~ldp.client.onehot.draws_runs` takes them."""
    if onehot.draws_runs(q):
        return onehot.plain_coins(source, n, width, q, backend=backend, slack=slack)
    return stream_coins(source, n, width, q, backend=backend)


def _marked_bits(marks: np.ndarray) -> int:
    """The batch's count of marked bits, eight bytes at a time (then the last bytes)."""
    flat = marks.reshape(-1)
    whole = flat.size - flat.size % 8
    return int(np.bitwise_count(flat[:whole].view(np.uint64)).sum(dtype=np.int64)) + int(
        np.bitwise_count(flat[whole:]).sum(dtype=np.int64)
    )


def _correct_numpy(out: np.ndarray, marks: np.ndarray, coins: np.ndarray, keep_ones: bool) -> None:
    """Combine each marked bit of ``out`` with the next coin, in the kernel's order (the kernel's twin)."""
    bits = np.unpackbits(out.reshape(-1), bitorder="little")
    marked = np.flatnonzero(np.unpackbits(marks.reshape(-1), bitorder="little"))
    y = np.unpackbits(coins.reshape(-1), count=marked.size, bitorder="little")
    bits[marked] = (bits[marked] | y) if keep_ones else (bits[marked] & y)
    out[:] = np.packbits(bits, bitorder="little").reshape(out.shape)


def _correct_kernel() -> Any:
    """The compiled twin (importing it imports numba)."""
    from ldp.client.onehot_kernel import correct_kernel

    return correct_kernel
