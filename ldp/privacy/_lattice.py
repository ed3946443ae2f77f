"""Privacy-loss distributions on a lattice, kept where their mass is (private; docs/accounting.md#mechanism-curves).

Composing many reports of a mechanism whose losses are L = offset + i·step
(randomized response, GRR, OLH, SS, each bit of SUE/OUE) gives a pair whose
atoms lie on the same lattice. Its P-mass sits in a window of O(√k) indices
around k·E_P[i] and its Q-mass in another around k·E_Q[i]; everything else
holds less than 10⁻³² of either. :class:`Lattice` keeps the two windows as
dense arrays, composes by direct convolution of each (all terms are
nonnegative, so the sums lose only relative rounding, never a small mass to
cancellation), and drops at most :data:`TRUNCATION_TAIL` of mass at each end
of a window per step. The dropped mass is an upper bound, carried to the
result (``tail_p``, ``tail_q`` of :class:`ldp.privacy.loss.PrivacyLoss`) and
added to δ in full: the result is a sound bound that differs from the exact
δ(ε) by at most that much (at most 10⁻²⁹ over any computation here).

The two-atom case (k reports of a binary piece) is a binomial and is built in
closed form (:func:`ldp.privacy._numeric.binom_window`), so its cost is
O(√k) at any k.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ldp.errors import AccountingError
from ldp.privacy._numeric import binom_window

__all__ = ["TRUNCATION_TAIL", "Lattice", "lattice_of"]

#: Mass dropped at most at each end of a window per operation (added to δ).
TRUNCATION_TAIL = 1e-32

#: Losses this close (relative to the largest) are the same lattice point.
_LATTICE_TOLERANCE = 1e-9


def lattice_of(
    loss: np.ndarray, grid: tuple[float, float] | None = None
) -> tuple[float, float, np.ndarray] | None:
    """(offset, step, integer indices ≥ 0) when every loss is offset + i·step; None otherwise.

    ``grid``: a known (offset, step) the losses lie on (a pair built in
    windows). Otherwise the step is the smallest gap between losses, and the
    losses must sit on it to within 1e-9 (relative) and 1/1000 of a step and
    span at most 8 lattice points per atom (so that a generic set of losses is
    not taken for a fine lattice).
    """
    loss = np.asarray(loss, dtype=float)
    if loss.size < 2 or not np.all(np.isfinite(loss)):
        return None
    scale = max(1.0, float(np.abs(loss).max()))
    if grid is not None:
        offset, step = grid
    else:
        values = np.unique(loss)
        gaps = np.diff(values)
        gaps = gaps[gaps > _LATTICE_TOLERANCE * scale]
        if gaps.size == 0:
            return None
        step = float(gaps.min())
        offset = float(values[0])
    index = np.round((loss - offset) / step)
    if grid is None and index.max() > 1:
        step = float((values[-1] - offset) / index.max())  # the whole span: rounding of one gap divided out
    tolerance = min(_LATTICE_TOLERANCE * scale, 1e-3 * step)
    if not np.allclose(offset + index * step, loss, rtol=0, atol=tolerance) or np.any(index < 0):
        return None
    if grid is None and float(index.max()) > 8 * loss.size + 16:
        return None
    return offset, step, index.astype(np.int64)


@dataclasses.dataclass(frozen=True)
class _Window:
    """Masses e^log_scale · mass[j] at the lattice indices lo + j."""

    lo: int
    log_scale: float
    mass: np.ndarray

    @classmethod
    def from_log(cls, lo: int, log_mass: np.ndarray) -> _Window:
        top = float(np.max(log_mass))
        return cls(lo, top, np.exp(log_mass - top))

    def log_mass(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.mass) + self.log_scale

    def trimmed(self, budget: float) -> tuple[_Window, float]:
        """Drop at most ``budget`` of mass from each end; the window kept and the mass dropped."""
        exponent = math.log(budget) - self.log_scale
        limit = math.exp(exponent) if exponent < 700 else math.inf
        left = np.cumsum(self.mass)
        right = np.cumsum(self.mass[::-1])
        start = int(np.searchsorted(left, limit, side="right"))
        stop = self.mass.size - int(np.searchsorted(right, limit, side="right"))
        if start >= stop:  # the whole window holds less than the budget: keep its largest mass
            start = int(np.argmax(self.mass))
            stop = start + 1
        dropped = (float(left[start - 1]) if start > 0 else 0.0) + (
            float(right[self.mass.size - stop - 1]) if stop < self.mass.size else 0.0
        )
        kept = self.mass[start:stop]
        top = float(kept.max())
        window = _Window(self.lo + start, self.log_scale + math.log(top), kept / top)
        return window, dropped * math.exp(self.log_scale)


def _sparse_window(index: np.ndarray, log_mass: np.ndarray, budget: float) -> tuple[_Window, float]:
    """The dense window of atoms at lattice ``index`` after dropping at most ``budget`` from each end."""
    order = np.argsort(index, kind="stable")
    index, log_mass = index[order], log_mass[order]
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    index, log_mass = index[starts], np.logaddexp.reduceat(log_mass, starts)
    log_budget = math.log(budget)
    left = np.logaddexp.accumulate(log_mass)
    right = np.logaddexp.accumulate(log_mass[::-1])
    start = int(np.searchsorted(left, log_budget, side="right"))
    stop = index.size - int(np.searchsorted(right, log_budget, side="right"))
    if start >= stop:
        start = int(np.argmax(log_mass))
        stop = start + 1
    dropped = (math.exp(left[start - 1]) if start > 0 else 0.0) + (
        math.exp(right[index.size - stop - 1]) if stop < index.size else 0.0
    )
    lo, hi = int(index[start]), int(index[stop - 1])
    dense = np.full(hi - lo + 1, -np.inf)
    dense[index[start:stop] - lo] = log_mass[start:stop]
    return _Window.from_log(lo, dense), dropped


def _convolve(a: _Window, b: _Window) -> _Window:
    out = np.convolve(a.mass, b.mass)
    top = float(out.max())
    return _Window(a.lo + b.lo, a.log_scale + b.log_scale + math.log(top), out / top)


@dataclasses.dataclass(frozen=True)
class Lattice:
    """A pair (P, Q) with losses offset + i·step, kept in two windows (P's mass and Q's).

    Attributes
    ----------
    offset, step : float
        Loss of index i is offset + i·step.
    p, q : _Window
        P-masses where P has its mass, Q-masses where Q has its mass.
    tail_p, tail_q : float
        Upper bounds of the P- and Q-mass outside the windows.
    top : int
        Largest index of the full support (index 0 is the smallest).
    """

    offset: float
    step: float
    p: _Window
    q: _Window
    tail_p: float
    tail_q: float
    top: int

    @classmethod
    def from_atoms(
        cls,
        log_p: np.ndarray,
        log_q: np.ndarray,
        loss: np.ndarray,
        tail_p: float = 0.0,
        tail_q: float = 0.0,
        loss_range: tuple[float, float] | None = None,
        grid: tuple[float, float] | None = None,
    ) -> Lattice | None:
        """The lattice form of a pair's atoms (windows trimmed), or None when the losses are on no lattice.

        ``loss_range``: the smallest and largest loss of the full support when
        the atoms given are only part of it (a pair kept in windows), and
        ``grid`` its (offset, step).
        """
        found = lattice_of(loss, grid)
        if found is None:
            return None
        offset, step, index = found
        top = int(index.max())
        if loss_range is not None:
            shift = round((offset - loss_range[0]) / step)
            offset, index = offset - shift * step, index + shift
            top = max(top, round((loss_range[1] - offset) / step))
        p, lost_p = _sparse_window(index, np.asarray(log_p, dtype=float), TRUNCATION_TAIL)
        q, lost_q = _sparse_window(index, np.asarray(log_q, dtype=float), TRUNCATION_TAIL)
        return cls(offset, step, p, q, tail_p + lost_p, tail_q + lost_q, top)

    @classmethod
    def binomial(cls, k: int, log_p: np.ndarray, log_q: np.ndarray) -> Lattice:
        """k copies of a two-outcome piece, in closed form: the count of its higher-loss outcome is binomial."""
        loss = log_p - log_q
        hi, lo = (1, 0) if loss[1] >= loss[0] else (0, 1)
        step = float(loss[hi] - loss[lo])
        if not step > 0:
            raise AccountingError("a two-outcome piece with equal losses has no lattice")
        windows = []
        tails = []
        for log_mass in (log_p, log_q):
            start, log_window, outside = binom_window(
                k, float(log_mass[hi]), float(log_mass[lo]), TRUNCATION_TAIL
            )
            windows.append(_Window.from_log(start, log_window))
            tails.append(outside)
        return cls(k * float(loss[lo]), step, windows[0], windows[1], tails[0], tails[1], k)

    def compose(self, other: Lattice) -> Lattice | None:
        """The product pair (windows convolved and trimmed); None when the steps differ."""
        if abs(self.step - other.step) > 1e-12 * self.step:
            return None
        p, lost_p = _convolve(self.p, other.p).trimmed(TRUNCATION_TAIL)
        q, lost_q = _convolve(self.q, other.q).trimmed(TRUNCATION_TAIL)
        return Lattice(
            self.offset + other.offset,
            self.step,
            p,
            q,
            self.tail_p + other.tail_p + lost_p,
            self.tail_q + other.tail_q + lost_q,
            self.top + other.top,
        )

    def power(self, k: int) -> Lattice:
        """k-fold composition with itself (repeated squaring)."""
        result: Lattice | None = None
        base: Lattice = self
        while True:
            if k & 1:
                result = base if result is None else result.compose(base)
            k >>= 1
            if not k:
                assert result is not None
                return result
            squared = base.compose(base)
            assert squared is not None
            base = squared

    @property
    def width(self) -> int:
        """Entries held (both windows)."""
        return int(self.p.mass.size + self.q.mass.size)

    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        """(log P, log Q) of the atoms of both windows, each a lower bound of the true mass."""
        p_index = np.arange(self.p.lo, self.p.lo + self.p.mass.size)
        q_index = np.arange(self.q.lo, self.q.lo + self.q.mass.size)
        index = np.union1d(p_index, q_index)
        loss = self.offset + index * self.step
        from_p = np.full(index.size, -np.inf)
        from_q = np.full(index.size, -np.inf)
        from_p[np.searchsorted(index, p_index)] = self.p.log_mass()
        from_q[np.searchsorted(index, q_index)] = self.q.log_mass() + loss[np.searchsorted(index, q_index)]
        # both are lower bounds of the atom's P-mass (Q-mass · e^loss is its P-mass); the larger is kept
        log_p = np.fmax(from_p, from_q)
        return log_p, log_p - loss

    def loss_range(self) -> tuple[float, float]:
        """Smallest and largest loss of the full support."""
        return self.offset, self.offset + self.top * self.step
