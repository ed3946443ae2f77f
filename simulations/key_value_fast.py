"""Fast path of the key-value mechanisms: each accumulator's counts drawn from their exact distribution.

The population is the simulator's (:mod:`ldp.simulations.key_value`): every
user holds one (key, value) pair and all holders of key k hold the value
m_k (:class:`KeyValuePopulation`). Instead of encoding every user, each
function draws the counts the mechanism's accumulator would hold
(``KeyValueAccumulator.from_counts``), as binomials and multinomials over
the (true input, output) pairs, in O(d'²) for a padded domain of d' keys
(PCKV-GRR's and PrivKVM's uniform other key), independent of n.

Exactness, mechanism by mechanism (the encoders: :mod:`ldp.client.key_value`):

Padding-and-sampling (PCKV)
    A user with one pair samples it with probability 1/ℓ (then v* = +1 with
    probability π_k = ⌊(1 + m_k)·2^63⌋/2^64, the client's exact threshold),
    else one of the dummy keys d, …, d + ℓ − 2 uniformly (v* = ±1 with probability 1/2).
    The real samples of key k are Bin(n_k, 1/ℓ), independently over keys,
    the dummies one multinomial of the rest over the ℓ − 1 dummy keys: the
    joint distribution of the (sampled key, v*) classes, exactly.
PCKV-UE
    Given the classes, each position's output (+1, −1, 0) is independent
    over users and positions: the sampled key's is (a·p, a(1 − p), 1 − a)
    for v* = +1 (swapped for −1), every other key's (b/2, b/2, 1 − b). Per
    key, three multinomials: the exact joint distribution.
PCKV-GRR
    A class (s, v*) keeps its key with probability a, then its sign with p;
    the others report a uniform other key with a uniform sign. Kept counts
    are binomials; the rest of each sampled key s is one multinomial over
    the d' − 1 other keys, its signs binomials: exact.
PrivKVM
    Each user draws a key j uniformly: per key k one multinomial of its
    n_k holders over the d keys (and of the users who hold no key). A
    holder of j reports presence with probability p₁ and a sign that is
    +1 with probability π_j·p₂ + (1 − π_j)(1 − p₂); a non-holder presence
    with probability 1 − p₁ and a sign ±1 with probability 1/2: exact.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np

from ldp.errors import InputError, ParameterError

__all__ = [
    "KeyValuePopulation",
    "pckv_grr_counts",
    "pckv_ue_counts",
    "privkvm_counts",
    "sign_probabilities",
]

#: Cells of the (rows × keys) multinomial draws made at once (bounds their memory to ~32 MB of int64).
_CELLS_PER_DRAW = 1 << 22


@dataclasses.dataclass(frozen=True)
class KeyValuePopulation:
    """One (key, value) pair per user: ``counts[k]`` users hold key k, each with the value ``means[k]``.

    Parameters
    ----------
    counts : numpy.ndarray of int
        n_k per key, in ``spec.domain`` order.
    means : numpy.ndarray of float
        m_k ∈ [−1, 1] per key.
    """

    counts: np.ndarray
    means: np.ndarray

    def checked(self, keys: int) -> tuple[np.ndarray, np.ndarray]:
        """(counts as int64, means as float) for a domain of ``keys`` keys; InputError when they disagree."""
        counts = np.asarray(self.counts, dtype=np.int64)
        means = np.asarray(self.means, dtype=float)
        if counts.shape != (keys,) or means.shape != (keys,):
            raise InputError(
                f"a key-value population needs one count and one value per key ({keys}), "
                f"got shapes {counts.shape} and {means.shape}"
            )
        if counts.size and counts.min() < 0:
            raise InputError("key-value population counts must be >= 0")
        if not np.all(np.isfinite(means)) or np.any(np.abs(means) > 1):
            raise InputError("key-value population values must be finite numbers in [-1, 1]")
        return counts, means


def sign_probabilities(means: np.ndarray) -> np.ndarray:
    """π_k = P[v* = +1] = ⌊(1 + m_k)·2^63⌋/2^64, the client's exact threshold (1 for m_k ≥ 1), as floats."""
    out = np.empty(len(means), dtype=float)
    for k, m in enumerate(np.asarray(means, dtype=float).tolist()):
        out[k] = 1.0 if m >= 1 else float(Fraction(int((1 + Fraction(m)) * (1 << 63)), 1 << 64))
    return out


def _population(spec: Any, population: Any) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(population, KeyValuePopulation):
        raise ParameterError(
            f"{spec.mechanism}: the fast simulator takes a KeyValuePopulation, got {type(population).__name__}"
        )
    return population.checked(spec.domain_size)


def _sampled_classes(
    spec: Any, population: KeyValuePopulation, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(N_{s,+}, N_{s,−}) over the d' padded keys: users whose padding-and-sampling gave (s, v*)."""
    counts, means = _population(spec, population)
    d, width, ell = spec.domain_size, spec.padded_size, int(spec.ell)
    real = rng.binomial(counts, 1.0 / ell)
    plus = np.zeros(width, dtype=np.int64)
    minus = np.zeros(width, dtype=np.int64)
    plus[:d] = rng.binomial(real, sign_probabilities(means))
    minus[:d] = real - plus[:d]
    if ell > 1:
        dummies = rng.multinomial(int(counts.sum() - real.sum()), np.full(ell - 1, 1.0 / (ell - 1)))
        fake = slice(d, d + ell - 1)  # a one-pair user's dummy keys d .. d + ℓ − 2 (of the ℓ padded ones)
        plus[fake] = rng.binomial(dummies, 0.5)
        minus[fake] = dummies - plus[fake]
    return plus, minus


def pckv_ue_counts(spec: Any, population: KeyValuePopulation, rng: np.random.Generator) -> np.ndarray:
    """PCKV-UE's (d' × 2) counts: per padded key, the reports with +1 and with −1 there (module docstring)."""
    plus, minus = _sampled_classes(spec, population, rng)
    n = int(plus.sum() + minus.sum())
    a, b, p = float(spec.a), float(spec.b), float(spec.p)
    own_plus = rng.multinomial(plus, [a * p, a * (1 - p), 1 - a])
    own_minus = rng.multinomial(minus, [a * (1 - p), a * p, 1 - a])
    others = rng.multinomial(n - plus - minus, [b / 2, b / 2, 1 - b])
    return (own_plus + own_minus + others)[:, :2].astype(np.int64)


def _uniform_others(sources: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per target key t, how many of ``sources[s]`` users (each of key s) land on t: uniform over the others."""
    size = sources.size
    landed = np.zeros(size, dtype=np.int64)
    if size < 2:
        return landed
    even = np.full(size - 1, 1.0 / (size - 1))
    step = max(1, _CELLS_PER_DRAW // size)
    for start in range(0, size, step):
        rows = np.arange(start, min(size, start + step))
        draws = rng.multinomial(sources[rows], even)  # (rows, size − 1): the other keys, in order
        full = np.zeros((rows.size, size), dtype=np.int64)
        columns = np.arange(size - 1)[None, :] + (np.arange(size - 1)[None, :] >= rows[:, None])
        np.put_along_axis(full, columns, draws, axis=1)
        landed += full.sum(axis=0)
    return landed


def pckv_grr_counts(spec: Any, population: KeyValuePopulation, rng: np.random.Generator) -> np.ndarray:
    """PCKV-GRR's (d' × 2) counts: per padded key, the reports (key, +1) and (key, −1) (module docstring)."""
    plus, minus = _sampled_classes(spec, population, rng)
    a, p = float(spec.a), float(spec.p)
    kept_plus, kept_minus = rng.binomial(plus, a), rng.binomial(minus, a)
    same_plus, same_minus = rng.binomial(kept_plus, p), rng.binomial(kept_minus, p)
    moved = _uniform_others(plus + minus - kept_plus - kept_minus, rng)
    moved_plus = rng.binomial(moved, 0.5)
    out = np.empty((spec.padded_size, 2), dtype=np.int64)
    out[:, 0] = same_plus + (kept_minus - same_minus) + moved_plus
    out[:, 1] = same_minus + (kept_plus - same_plus) + (moved - moved_plus)
    return out


def privkvm_counts(spec: Any, population: KeyValuePopulation, rng: np.random.Generator) -> np.ndarray:
    """PrivKVM's (d × 3) counts: per key, the responses −1, absent and +1 of the users that drew it."""
    counts, means = _population(spec, population)
    d = spec.domain_size
    even = np.full(d, 1.0 / d)
    holders = np.zeros(d, dtype=np.int64)  # users who drew the key they hold
    drew = np.zeros(d, dtype=np.int64)  # every user who drew the key
    step = max(1, _CELLS_PER_DRAW // d)
    for start in range(0, d, step):
        rows = np.arange(start, min(d, start + step))
        picks = rng.multinomial(counts[rows], even)  # (rows, d): key k's holders over the drawn keys
        holders[rows] = picks[np.arange(rows.size), rows]
        drew += picks.sum(axis=0)
    p1, p2 = float(spec.p1), float(spec.p2)
    pi = sign_probabilities(means)
    shown = rng.binomial(holders, p1)
    shown_plus = rng.binomial(shown, pi * p2 + (1 - pi) * (1 - p2))
    fake = rng.binomial(drew - holders, 1 - p1)
    fake_plus = rng.binomial(fake, 0.5)
    out = np.empty((d, 3), dtype=np.int64)
    out[:, 2] = shown_plus + fake_plus
    out[:, 0] = (shown - shown_plus) + (fake - fake_plus)
    out[:, 1] = drew - shown - fake
    return out
