"""Discrete privacy-loss distributions: exact Neyman–Pearson accounting (docs/accounting.md#mechanism-curves).

A pair of output distributions (P, Q) of a mechanism on two inputs x, x' is
summarized, without loss, by its *atoms*: groups of outputs with the same
likelihood ratio, each holding its P-mass and Q-mass. The privacy loss of an
atom is L = ln(P/Q). Everything the accountant needs follows from the atoms:

- the hockey-stick divergence H_{e^ε}(P‖Q) = Σ (P − e^ε Q)₊ = E_P[(1 − e^{ε−L})₊],
  i.e. the δ(ε) of the pair;
- the trade-off curve T(P, Q): sort the atoms by Q/P descending (L ascending)
  and join (Σ P, 1 − Σ Q) by straight lines;
- composition (independent mechanisms): the product pair, whose atoms are
  all pairs of atoms, with losses added.

All masses are kept as logarithms, so nothing overflows or underflows at
ε = 20 or k = 10,000 reports.

Atoms whose losses agree to within :data:`MERGE_TOLERANCE` are merged (the
likelihood ratios then differ by a factor of at most 1 + 1e-9, far below any
δ one would state). Small products are built exactly. Beyond
:data:`EXACT_ATOMS` atoms (k reports of randomized response, or a product of
more than ``max_atoms`` atoms) and when the losses lie on one lattice (GRR,
OLH, SS, each bit of SUE/OUE, randomized response), the pair is computed in
two windows where P and Q have their mass (:mod:`ldp.privacy._lattice`): the
cost grows with √k, not k, and the mass left outside the windows (at most
10⁻²⁹, :attr:`PrivacyLoss.tail_p`, :attr:`PrivacyLoss.tail_q`) is added to
δ in full, so the result is a sound bound within 10⁻²⁹ of the exact δ(ε).
A δ target below 1,000 times that mass is refused (the answer would be set
by the truncation, not the mechanism). Otherwise :meth:`PrivacyLoss.compose`
returns a :class:`ProductLoss`, which keeps the two factors and evaluates
δ(ε) exactly without building the product; its trade-off curve is the
envelope of tangent lines at a grid of ε values, a sound lower bound of the
true curve that touches it at every grid point.

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy".
   JRSS-B 84(1), 2022 (arXiv:1905.02383).
.. [2] S. Meiser, E. Mohammadi. "Tight on budget? Tight bounds for r-fold
   approximate differential privacy". ACM CCS 2018.
.. [3] V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi.
   "Connect the dots: tighter discrete approximations of privacy loss
   distributions". PoPETs 2022.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from ldp.errors import AccountingError
from ldp.privacy._lattice import Lattice
from ldp.privacy._numeric import (
    at_or_above_root,
    binom_logpmf,
    check_delta_value,
    check_epsilon_value,
    log1mexp,
    logsumexp,
)
from ldp.privacy.curves import PiecewiseLinearTradeoff

__all__ = ["DEFAULT_MAX_ATOMS", "EXACT_ATOMS", "MERGE_TOLERANCE", "PrivacyLoss", "ProductLoss"]

#: Atoms whose privacy losses differ by less than this are merged.
MERGE_TOLERANCE = 1e-9

#: Largest product built explicitly by :meth:`PrivacyLoss.compose`.
DEFAULT_MAX_ATOMS = 2_000_000

#: Largest self-composition kept on its full support; beyond it a lattice pair is kept in windows.
EXACT_ATOMS = 4097

#: A δ target must be at least this many times the mass left out of a windowed pair.
_TAIL_MARGIN = 1000.0

_KEY_SCALE = 1.0 / MERGE_TOLERANCE
_EXACT_KEYS = 2.0**53 * MERGE_TOLERANCE


def _merge(log_p: np.ndarray, log_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop empty atoms, merge atoms of (nearly) equal loss, sort by loss ascending."""
    log_p = np.asarray(log_p, dtype=float).ravel()
    log_q = np.asarray(log_q, dtype=float).ravel()
    keep = ~(np.isneginf(log_p) & np.isneginf(log_q))
    log_p, log_q = log_p[keep], log_q[keep]
    with np.errstate(invalid="ignore"):
        loss = log_p - log_q
    # keys: losses rounded to the 1e-9 grid; from 2^53·1e-9 on (and ±inf) the doubles are coarser than
    # the grid and are their own keys (no overflow of loss·1e9 at any ε)
    small = np.abs(loss) < _EXACT_KEYS
    key = np.where(small, np.round(np.where(small, loss, 0.0) * _KEY_SCALE) / _KEY_SCALE, loss)
    order = np.argsort(key, kind="stable")
    key, log_p, log_q = key[order], log_p[order], log_q[order]
    if key.size == 0:
        return log_p, log_q
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    if starts.size == key.size:
        return log_p, log_q
    return np.logaddexp.reduceat(log_p, starts), np.logaddexp.reduceat(log_q, starts)


def _hockey_stick(loss: np.ndarray, log_p: np.ndarray, epsilon: np.ndarray) -> np.ndarray:
    """Σ_{L > ε} P·(1 − e^{ε−L}) for each ε (atoms sorted by loss ascending)."""
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    out = np.empty(eps.shape)
    for i, e in enumerate(eps.flat):
        start = np.searchsorted(loss, e, side="right")
        if start >= loss.size:
            out.flat[i] = 0.0
            continue
        terms = log_p[start:] + log1mexp(e - loss[start:])
        out.flat[i] = float(np.exp(logsumexp(terms)))
    return out


def _solve_epsilon(delta_of, delta: float, upper: float) -> float:
    """Smallest ε ≥ 0 with delta_of(ε) ≤ delta (delta_of nonincreasing); inf if none."""
    if delta_of(0.0) <= delta:
        return 0.0
    hi = max(upper, 1.0)
    if delta_of(hi) > delta:
        return math.inf
    root = float(brentq(lambda e: delta_of(e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12, maxiter=500))
    return at_or_above_root(lambda e: delta_of(e) - delta, root, hi)


def check_delta_resolution(delta: float, tail: float) -> None:
    """Refuse a δ target too close to the probability a windowed pair leaves out (``tail``)."""
    if tail > 0 and delta < _TAIL_MARGIN * tail:
        raise AccountingError(
            f"delta = {delta:.3g} is below {_TAIL_MARGIN * tail:.1g}: at this many reports the exact "
            f"accounting leaves out up to {tail:.1g} of probability (added to delta); give a larger delta"
        )


class _LossBase:
    """What both loss representations offer (δ, ε, swap, composition)."""

    @property
    def tail(self) -> float:  # pragma: no cover - abstract
        """Upper bound of the probability (P or Q) outside the atoms held, added to δ."""
        raise NotImplementedError

    def hockey_stick(self, epsilon):  # pragma: no cover - abstract
        raise NotImplementedError

    def swap(self):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def max_loss(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def finite_max_loss(self) -> float:  # pragma: no cover - abstract
        """The largest finite loss of an atom with positive P-mass (0 when none)."""
        raise NotImplementedError

    def delta(self, epsilon):
        """δ(ε) = max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)): the pair is (ε, δ(ε))-indistinguishable both ways."""
        forward = self.hockey_stick(epsilon)
        backward = self.swap().hockey_stick(epsilon)
        out = np.maximum(forward, backward)
        return float(out[0]) if np.ndim(epsilon) == 0 else out

    def epsilon(self, delta: float) -> float:
        """Smallest ε ≥ 0 with δ(ε) ≤ ``delta`` (``inf`` when no finite ε works).

        At δ = 0 it is the exact pure ε, the largest privacy loss either way
        (``inf`` when an output is possible under one input only).
        """
        delta = check_delta_value(delta)
        upper = max(self.max_loss, self.swap().max_loss)
        if delta == 0:
            return max(0.0, upper)
        check_delta_resolution(delta, self.tail)
        if not math.isfinite(upper):
            # infinite-loss atoms: beyond the largest finite loss δ(ε) is their mass, a constant, so
            # the bracket ends there (a fixed bracket would turn any larger finite answer into inf)
            upper = max(self.finite_max_loss, self.swap().finite_max_loss)
        return _solve_epsilon(lambda e: self.delta(e), delta, upper + 1e-9 * max(1.0, upper))


class PrivacyLoss(_LossBase):
    """Exact atoms of a discrete pair (P, Q).

    Parameters
    ----------
    log_p, log_q : array_like
        Log-masses of the outputs (or groups of outputs) under P and Q; each
        side must sum to 1 (checked to 1e-9). Outputs of equal likelihood
        ratio are merged.

    Attributes
    ----------
    log_p, log_q : numpy.ndarray
        Log-masses of the merged atoms, sorted by loss ln(P/Q) ascending.
    loss : numpy.ndarray
        The privacy loss ln(P/Q) of each atom.
    tail_p, tail_q : float
        Upper bounds of the P- and Q-mass of atoms not held (0 for an exact
        pair; at most 10⁻²⁹ for a pair kept in windows). ``tail_p`` is added
        to H_{e^ε}(P‖Q) and ``tail_q`` to H_{e^ε}(Q‖P).
    loss_range : tuple of float or None
        Smallest and largest loss of the full support when atoms are left out.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. JRSS-B 84(1), 2022, §2 (Neyman–Pearson).
    """

    def __init__(
        self,
        log_p,
        log_q,
        *,
        check: bool = True,
        tail_p: float = 0.0,
        tail_q: float = 0.0,
        loss_range: tuple[float, float] | None = None,
    ):
        log_p, log_q = _merge(log_p, log_q)
        if np.any(np.isnan(log_p)) or np.any(np.isnan(log_q)):
            raise AccountingError("privacy loss: a mass is NaN (a numerical failure upstream)")
        if check:
            for name, arr in (("P", log_p), ("Q", log_q)):
                total = float(np.exp(logsumexp(arr))) if arr.size else 0.0
                if not abs(total - 1.0) <= 1e-9:
                    raise AccountingError(f"privacy loss: the {name}-masses must sum to 1, got {total!r}")
        self.log_p = log_p
        self.log_q = log_q
        with np.errstate(invalid="ignore"):
            self.loss = log_p - log_q
        self.tail_p = float(tail_p)
        self.tail_q = float(tail_q)
        self.loss_range = loss_range if (tail_p > 0 or tail_q > 0) else None

    @classmethod
    def _from_lattice(cls, lattice: Lattice, gdp_mu: float) -> PrivacyLoss:
        log_p, log_q = lattice.atoms()
        out = cls(
            log_p,
            log_q,
            check=False,
            tail_p=lattice.tail_p,
            tail_q=lattice.tail_q,
            loss_range=lattice.loss_range(),
        )
        out.gdp_mu_bound = gdp_mu
        out.grid = (lattice.offset, lattice.step)
        return out

    #: For a pair kept in windows: a GDP μ it is known to satisfy (from its factors' μ by
    #: G_μ ⊗ G_ν = G_√(μ²+ν²)); its curve's tightest μ needs the atoms left out.
    gdp_mu_bound: float | None = None

    #: For a pair kept in windows: the (offset, step) of the lattice its losses lie on.
    grid: tuple[float, float] | None = None

    def gdp_mu(self) -> float:
        """The smallest μ with G_μ ≤ T(P, Q); for a pair kept in windows, the sound :attr:`gdp_mu_bound`."""
        if self.tail > 0 and self.gdp_mu_bound is not None:
            return self.gdp_mu_bound
        return self.tradeoff().gdp_mu()

    def _lattice(self) -> Lattice | None:
        return Lattice.from_atoms(
            self.log_p, self.log_q, self.loss, self.tail_p, self.tail_q, self.loss_range, self.grid
        )

    # -- constructors ----------------------------------------------------
    @classmethod
    def from_probabilities(cls, p, q) -> PrivacyLoss:
        """Atoms from two probability vectors over the same outputs."""
        p = np.asarray(p, dtype=float)
        q = np.asarray(q, dtype=float)
        if p.shape != q.shape or np.any(p < 0) or np.any(q < 0):
            raise AccountingError("privacy loss: p and q must be nonnegative vectors of the same length")
        with np.errstate(divide="ignore"):
            return cls(np.log(p), np.log(q))

    @classmethod
    def randomized_response(cls, epsilon: float) -> PrivacyLoss:
        """The pair of ε-randomized response, whose trade-off curve is f_{ε,0}."""
        eps = check_epsilon_value(epsilon)
        hi, lo = -np.logaddexp(0.0, -eps), -np.logaddexp(0.0, eps)  # log e^ε/(1+e^ε), log 1/(1+e^ε)
        return cls(np.array([lo, hi]), np.array([hi, lo]))

    @classmethod
    def binomial(cls, epsilon: float, k: int) -> PrivacyLoss:
        """k-fold composition of ε-randomized response, exactly (f_{ε,0}^{⊗k}).

        The count X of 1s is sufficient: X ~ Bin(k, e^ε/(1+e^ε)) under P and
        Bin(k, 1/(1+e^ε)) under Q, with loss ε(2X − k).
        """
        eps = check_epsilon_value(epsilon)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise AccountingError(f"number of reports must be an integer >= 0, got {k!r}")
        if k == 0 or eps == 0:
            return cls.identity()
        out = cls.randomized_response(eps).self_compose(int(k))
        assert isinstance(out, PrivacyLoss)  # two atoms: a binomial, never a lazy product
        return out

    @classmethod
    def identity(cls) -> PrivacyLoss:
        """The pair P = Q (no information): the neutral element of composition."""
        return cls(np.zeros(1), np.zeros(1))

    # -- basic properties ------------------------------------------------
    @property
    def size(self) -> int:
        """Number of atoms."""
        return int(self.loss.size)

    @property
    def tail(self) -> float:
        return max(self.tail_p, self.tail_q)

    @property
    def max_loss(self) -> float:
        finite = self.loss[~np.isneginf(self.log_p)]
        held = float(finite.max()) if finite.size else 0.0
        return held if self.loss_range is None else max(held, self.loss_range[1])

    @property
    def finite_max_loss(self) -> float:
        live = self.loss[~np.isneginf(self.log_p) & np.isfinite(self.loss)]
        held = float(live.max()) if live.size else 0.0
        return held if self.loss_range is None else max(held, self.loss_range[1])

    @property
    def pure_epsilon(self) -> float:
        """max |L| over atoms: the pair is pure ε-indistinguishable for this ε."""
        live = ~(np.isneginf(self.log_p) | np.isneginf(self.log_q))
        extra = np.isneginf(self.log_p) ^ np.isneginf(self.log_q)
        if np.any(extra):
            return math.inf
        held = float(np.max(np.abs(self.loss[live]))) if np.any(live) else 0.0
        if self.loss_range is not None:
            held = max(held, abs(self.loss_range[0]), abs(self.loss_range[1]))
        return held

    def swap(self) -> PrivacyLoss:
        """The pair (Q, P)."""
        out = object.__new__(PrivacyLoss)
        out.log_p, out.log_q = self.log_q[::-1].copy(), self.log_p[::-1].copy()
        with np.errstate(invalid="ignore"):
            out.loss = out.log_p - out.log_q
        out.tail_p, out.tail_q = self.tail_q, self.tail_p
        out.gdp_mu_bound = self.gdp_mu_bound  # μ-GDP is symmetric: T(Q, P) is the inverse of T(P, Q)
        out.grid = (
            None if self.grid is None or self.loss_range is None else (-self.loss_range[1], self.grid[1])
        )
        out.loss_range = None if self.loss_range is None else (-self.loss_range[1], -self.loss_range[0])
        return out

    def is_symmetric(self, tol: float = 1e-9) -> bool:
        """True when (P, Q) and (Q, P) have the same atoms (so T(P,Q) = T(Q,P))."""
        other = self.swap()
        if other.size != self.size:
            return False
        return bool(
            np.allclose(np.exp(self.log_p), np.exp(other.log_p), atol=tol, rtol=0)
            and np.allclose(self.loss, other.loss, atol=1e-7, rtol=0)
        )

    # -- accounting ------------------------------------------------------
    def hockey_stick(self, epsilon):
        """H_{e^ε}(P‖Q) = Σ (P − e^ε Q)₊ for a scalar or array ε (any real ε), plus ``tail_p``."""
        out = _hockey_stick(self.loss, self.log_p, epsilon)
        if self.tail_p == 0:
            return out
        # an atom left out has a loss of at most the support's largest: none counts from there on
        beyond = np.atleast_1d(np.asarray(epsilon, dtype=float)) >= self.max_loss
        return np.where(beyond, out, np.minimum(out + self.tail_p, 1.0))

    def compose(
        self, other: PrivacyLoss | ProductLoss, *, max_atoms: int = DEFAULT_MAX_ATOMS
    ) -> PrivacyLoss | ProductLoss:
        """The pair (P × P', Q × Q') of two independent mechanisms.

        Returns a :class:`ProductLoss` (exact δ, lazily) when the explicit
        product would have more than ``max_atoms`` atoms.
        """
        if isinstance(other, ProductLoss):  # a product is never a factor of another (ProductLoss.compose)
            raise AccountingError("ProductLoss composes two exact PrivacyLoss pairs")
        if self.size == 1 and self.tail == 0:
            return other
        if other.size == 1 and other.tail == 0:
            return self
        windowed = self.tail > 0 or other.tail > 0
        if not windowed and self.size * other.size <= max_atoms:
            log_p = (self.log_p[:, None] + other.log_p[None, :]).ravel()
            log_q = (self.log_q[:, None] + other.log_q[None, :]).ravel()
            return PrivacyLoss(log_p, log_q, check=False)
        a, b = self._lattice(), other._lattice()
        if a is not None and b is not None:
            product = a.compose(b)
            if product is not None:
                return PrivacyLoss._from_lattice(product, math.hypot(self.gdp_mu(), other.gdp_mu()))
        return ProductLoss(self, other)

    def self_compose(self, k: int, *, max_atoms: int = DEFAULT_MAX_ATOMS) -> PrivacyLoss | ProductLoss:
        """k-fold composition with itself (exactly; binomial for two-atom pairs).

        Beyond :data:`EXACT_ATOMS` atoms a lattice pair is kept in windows
        (a sound bound within 10⁻²⁹ of δ; :mod:`ldp.privacy._lattice`).
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise AccountingError(f"number of reports must be an integer >= 0, got {k!r}")
        k = int(k)
        if k == 0:
            return PrivacyLoss.identity()
        if self.size == 1 or k == 1:
            return self
        if self.size == 2 and self.tail == 0:
            lp, lq = self.log_p, self.log_q
            if k + 1 <= EXACT_ATOMS:
                # two atoms: the count of the second atom is Bin(k, ·) under both P and Q
                return PrivacyLoss(binom_logpmf(k, lp[1], lp[0]), binom_logpmf(k, lq[1], lq[0]), check=False)
            return PrivacyLoss._from_lattice(Lattice.binomial(k, lp, lq), math.sqrt(k) * self.gdp_mu())
        lattice = self._lattice()
        if lattice is not None and (self.tail > 0 or k * (lattice.top + 1) > EXACT_ATOMS):
            return PrivacyLoss._from_lattice(lattice.power(k), math.sqrt(k) * self.gdp_mu())
        result: PrivacyLoss | ProductLoss = PrivacyLoss.identity()
        base: PrivacyLoss | ProductLoss = self
        while True:
            if k & 1:
                result = _compose_any(result, base, max_atoms)
            k >>= 1
            if not k:
                return result
            base = _compose_any(base, base, max_atoms)

    def tradeoff(self) -> PiecewiseLinearTradeoff:
        """The exact trade-off curve T(P, Q) (piecewise linear).

        For a pair kept in windows, the mass left out becomes two extreme
        atoms (``tail_p`` of P with loss +∞, ``tail_q`` of Q with loss −∞): a
        pair the true one is a post-processing of, so its curve is a sound
        lower bound (within 10⁻²⁹ of the exact curve).
        """
        if self.tail == 0:
            return PiecewiseLinearTradeoff.from_masses(self.log_p, self.log_q, privacy_loss=self)
        with np.errstate(divide="ignore"):
            lp_tail, lq_tail = (
                math.log(self.tail_p) if self.tail_p > 0 else -np.inf,
                (math.log(self.tail_q) if self.tail_q > 0 else -np.inf),
            )
        log_p = np.r_[-np.inf, self.log_p, lp_tail]
        log_q = np.r_[lq_tail, self.log_q, -np.inf]
        return PiecewiseLinearTradeoff.from_masses(log_p, log_q, privacy_loss=self)

    def __repr__(self) -> str:
        return f"PrivacyLoss(atoms={self.size}, max |loss|={self.pure_epsilon:.6g})"


def _compose_any(a, b, max_atoms):
    if isinstance(a, PrivacyLoss) and a.size == 1:
        return b
    if isinstance(a, ProductLoss) or isinstance(b, ProductLoss):
        raise AccountingError(
            "exact composition needs more than max_atoms atoms; use the GDP or CLT bound instead"
        )
    return a.compose(b, max_atoms=max_atoms)


#: Largest |ε| of a tangent line of :meth:`ProductLoss.tradeoff` (e^ε stays finite).
_TANGENT_SPAN = 700.0


class ProductLoss(_LossBase):
    """The product of two exact pairs, evaluated without building it.

    δ(ε) = Σ_i P_i · H_{e^{ε − L_i}}(Y) over the atoms i of the first factor,
    with H(Y) read from suffix sums of the second: O(n₁ log n₂) per ε.

    Parameters
    ----------
    first, second : PrivacyLoss
    """

    def __init__(self, first: PrivacyLoss, second: PrivacyLoss):
        if not isinstance(first, PrivacyLoss) or not isinstance(second, PrivacyLoss):
            raise AccountingError("ProductLoss composes two exact PrivacyLoss pairs")
        self.first, self.second = first, second
        # suffix sums of the second factor, in log space: S_P[j] = log Σ_{i≥j} P_i
        y = second
        self._suffix_p = np.r_[np.logaddexp.accumulate(y.log_p[::-1])[::-1], -np.inf]
        self._suffix_q = np.r_[np.logaddexp.accumulate(y.log_q[::-1])[::-1], -np.inf]

    @property
    def size(self) -> int:
        return self.first.size * self.second.size

    @property
    def tail(self) -> float:
        return self.first.tail + self.second.tail

    @property
    def max_loss(self) -> float:
        return self.first.max_loss + self.second.max_loss

    @property
    def finite_max_loss(self) -> float:
        return self.first.finite_max_loss + self.second.finite_max_loss

    @property
    def pure_epsilon(self) -> float:
        """The largest privacy loss either way (the pair's pure ε)."""
        return max(self.max_loss, self.swap().max_loss)

    def gdp_mu(self) -> float:
        """A GDP μ the product satisfies: √(μ₁² + μ₂²) of its factors (G_μ ⊗ G_ν = G_√(μ²+ν²))."""
        return math.hypot(self.first.gdp_mu(), self.second.gdp_mu())

    def swap(self) -> ProductLoss:
        return ProductLoss(self.first.swap(), self.second.swap())

    def _second_hockey(self, t: np.ndarray) -> np.ndarray:
        """H_{e^t}(second) for many t, from suffix sums (linear-space difference)."""
        y = self.second
        start = np.searchsorted(y.loss, t, side="right")
        sp = self._suffix_p[start]
        sq = self._suffix_q[start]
        with np.errstate(over="ignore", invalid="ignore"):
            value = np.exp(sp) * -np.expm1(np.minimum(t + sq - sp, 0.0))
        return np.where(np.isneginf(sp), 0.0, np.maximum(value, 0.0))

    def hockey_stick(self, epsilon):
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        x = self.first
        out = np.empty(eps.shape)
        weights = np.exp(x.log_p)
        for i, e in enumerate(eps.flat):
            out.flat[i] = float(np.dot(weights, self._second_hockey(e - x.loss)))
        # atoms left out of either factor: at most their P-mass each
        extra = self.first.tail_p + self.second.tail_p
        return np.minimum(out + extra, 1.0) if extra > 0 else out

    def compose(self, other, *, max_atoms: int = DEFAULT_MAX_ATOMS):
        raise AccountingError("a ProductLoss cannot be composed further; use the GDP or CLT bound instead")

    def tradeoff(self, grid: int = 801) -> PiecewiseLinearTradeoff:
        """Sound lower bound of T(P, Q): envelope of its tangent lines at ``grid`` values of ε.

        Lines with |ε| beyond :data:`_TANGENT_SPAN` (slopes e^ε beyond the
        double range) are left out: fewer lines give a lower envelope, still
        a sound bound, and those lines matter only for α < e^−700.
        """
        span = min(max(self.max_loss, self.swap().max_loss, 1e-6), _TANGENT_SPAN)
        eps = np.linspace(-span, span, grid)
        # T(P,Q)(α) = sup_ε [1 − H_{e^ε}(Q‖P) − e^ε α]
        deltas = self.swap().hockey_stick(eps)
        return PiecewiseLinearTradeoff.from_tangent_lines(eps, deltas)

    def __repr__(self) -> str:
        return f"ProductLoss({self.first.size} x {self.second.size} atoms)"
