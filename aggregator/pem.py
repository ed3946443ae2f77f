"""PEM aggregation: keep each group's OLH reports, extend the top prefixes round by round (docs/heavy-hitters.md#pem).

The accumulator keeps, per group (round), the (seed, bucket) pairs of its
reports: OLH's support of an arbitrary prefix needs each report's hash
function, so the pairs are the sufficient statistic (a multiset; merging
concatenates, which is associative and commutative).

The search (:func:`pem_search`): round 0 evaluates all 2^γ prefixes of
length γ on group 0's reports; round i evaluates the kept prefixes × their
2^(ℓ_i − ℓ_{i−1}) extensions on group i's reports (only prefixes a valid
encoding can start with). A middle round keeps the top k, then the next
prefixes significantly above 0, at most ``width``; the last round's
candidates are whole values and it outputs the top k. A prefix's support
count in a round is the number of its reports ⟨seed, y⟩ with
H_seed(key(prefix)) = y, and its estimate OLH's unbiased
(C/n_i − q*)/(p* − q*); a candidate that determines its whole value pools
the support of every group whose prefix determines it (:func:`_pool`).

References
----------
.. [1] T. Wang, N. Li, S. Jha. "Locally differentially private heavy hitter
   identification". IEEE TDSC 18(2), 2021.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ldp.aggregator.accumulators import Accumulator, check_int_column, require_field, state_value
from ldp.aggregator.estimates import FREQUENCY_COLUMNS, estimate_table
from ldp.aggregator.multiple_testing import adjust_p_values, check_options
from ldp.batch import ReportBatch
from ldp.errors import EstimateError, InputError, ParameterError, ReportError
from ldp.frequency_math import frequency_variance, unbiased_frequency
from ldp.hashing import LH_SEED_SPACE, lh_buckets
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.heavy_hitters import PEM, PrefixHashing, TreeHist, prefix_key

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_HELD_OUT_SHARE",
    "HEAVY_HITTER_COLUMNS",
    "PEMAccumulator",
    "Round",
    "TreeHistAccumulator",
    "candidate_support",
    "heavy_hitter_table",
    "held_out_mask",
    "held_out_round",
    "pem_search",
    "treehist_search",
    "treehist_thresholds",
    "value_length",
    "zero_frequency_p_values",
]

#: The columns of a heavy-hitter table: a frequency table's, and the test of each value against 0.
HEAVY_HITTER_COLUMNS = (*FREQUENCY_COLUMNS, "p_value", "significant")
#: Default family-wise error of the ``significant`` column (Bonferroni over the table's rows).
DEFAULT_ALPHA = 0.05
#: Reports × candidates evaluated per NumPy step (a few MiB of uint64 temporaries).
_BLOCK = 1 << 20
#: Default share of each group's reports the held-out estimate sets aside to estimate (docs/heavy-hitters.md#pem-selection).
DEFAULT_HELD_OUT_SHARE = 0.125
#: The held-out split reads the seed's low bits: a report estimates when seed mod 2^20 < share·2^20.
_SPLIT_BITS = 20


def candidate_support(seeds: np.ndarray, buckets: np.ndarray, keys: np.ndarray, g: int) -> np.ndarray:
    """For each key K, the number of reports ⟨seed, y⟩ with H_seed(K) = y (:mod:`ldp.hashing`'s family).

    Parameters
    ----------
    seeds : uint64 array (n,)
    buckets : int array (n,), each in [0, g)
    keys : int array (c,), each in [0, P)
    g : int

    Returns
    -------
    numpy.ndarray of int64, shape (c,)
    """
    keys = np.asarray(keys, dtype=np.uint64)
    out = np.zeros(keys.size, dtype=np.int64)
    n = seeds.shape[0]
    if n == 0 or keys.size == 0:
        return out
    per = max(1, _BLOCK // max(keys.size, 1))
    for start in range(0, n, per):
        y = buckets[start : start + per].astype(np.uint64)[None, :]
        hashed = lh_buckets(seeds[start : start + per][None, :], keys[:, None], g)  # (c, chunk)
        out += np.count_nonzero(hashed == y, axis=1)
    return out


@dataclasses.dataclass(frozen=True)
class Round:
    """One round of the search: the candidates evaluated on one group and their estimates.

    Attributes
    ----------
    length : int
        Prefix length ℓ_i in bits.
    reports : int
        n_i, the group's reports.
    candidates : numpy.ndarray of object (Python ints)
        The prefixes evaluated.
    support : numpy.ndarray of int64
        Their support counts.
    frequency : numpy.ndarray of float
        Unbiased frequency estimates within the group.
    kept : numpy.ndarray of int64
        Indices (into ``candidates``) of the top k, best first.
    sizes : numpy.ndarray of int64, optional
        Reports behind each candidate's support and estimate, when they
        differ from ``reports`` (a whole value pooled over every group whose
        prefix determines it, docs/heavy-hitters.md#pem-pooling).
    """

    length: int
    reports: int
    candidates: np.ndarray
    support: np.ndarray
    frequency: np.ndarray
    kept: np.ndarray
    sizes: np.ndarray | None = None


def _top(frequency: np.ndarray, candidates: np.ndarray, eligible: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k eligible candidates with the largest estimates (ties: the smaller prefix)."""
    idx = np.flatnonzero(eligible)
    order = np.lexsort((candidates[idx].astype(object), -frequency[idx]))
    return idx[order[:k]]


def _kept_middle(spec: PEM, frequency: np.ndarray, candidates: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """A middle round's survivors, best first: the top k, then the next prefixes significantly above 0, at most ``width``.

    Significant: estimate ≥ z·σ₀, σ₀ the standard error of a prefix of
    frequency 0 in the group and z = Φ⁻¹(1 − 1/c) for the round's c
    candidates, so at most one prefix of frequency 0 is expected among the
    extra survivors (docs/heavy-hitters.md#pem-width).
    """
    from statistics import NormalDist

    order = _top(frequency, candidates, np.ones(candidates.size, dtype=bool), spec.width)
    if order.size <= spec.top_k:
        return order
    z = NormalDist().inv_cdf(1 - 1 / candidates.size)
    sigma0 = np.sqrt(frequency_variance(0.0, sizes[order], spec.p_star, spec.q_star))
    significant = frequency[order] >= z * sigma0
    significant[: spec.top_k] = True
    return order[significant]


def value_length(spec: PrefixHashing, prefix: int, length: int) -> int | None:
    """The shortest prefix length that determines the value a ``length``-bit prefix starts, or None.

    A prefix determines its value once it holds the value's first zero
    (padding) byte whole, or when it is the whole encoding: no valid
    encoding has a non-zero byte after a zero byte. The length is then
    8·(bytes before that zero byte + 1), capped at m.
    """
    whole = length // 8
    data = (prefix >> (length - 8 * whole)).to_bytes(whole, "big") if whole else b""
    zero = data.find(b"\x00")
    if zero >= 0:
        return min(8 * (zero + 1), spec.num_bits)
    return spec.num_bits if length == spec.num_bits else None


def _pool(
    spec: PrefixHashing,
    groups: list[tuple[np.ndarray, np.ndarray]],
    round_: int,
    candidates: np.ndarray,
    support: np.ndarray,
    cache: dict[int, tuple[int, int]],
    usable: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(support, reports) of each candidate, pooled over every group whose prefix determines its value.

    A candidate that determines its value v (:func:`value_length` d) is
    estimated from all groups j with ℓ_j ≥ d: in each, the support of v's
    ℓ_j-bit prefix counts exactly the reports of users holding v (but for
    the hash's q*), so the pooled count over their N = Σ n_j reports is OLH's
    estimate on a uniform random subset of N users. Other candidates keep
    their round's support and n_i. ``cache`` maps a value's encoding to its
    pooled (support, N) across rounds. Only the first ``usable`` groups are
    pooled (all by default).
    """
    m = spec.num_bits
    length = spec.prefix_length(round_)
    n_i = int(groups[round_][0].shape[0])
    pooled = support.astype(np.int64, copy=True)
    sizes = np.full(candidates.size, n_i, dtype=np.int64)
    todo: dict[int, list[int]] = {}
    for idx, c in enumerate(candidates.tolist()):
        full = int(c) << (m - length)
        if full in cache:
            pooled[idx], sizes[idx] = cache[full]
            continue
        d = value_length(spec, int(c), length)
        if d is not None:
            todo.setdefault(d, []).append(idx)
    for d, idxs in todo.items():
        values = [int(candidates[x]) << (m - length) for x in idxs]
        for j, (seeds, buckets) in enumerate(groups[:usable]):
            ell = spec.prefix_length(j)
            if j == round_ or ell < d:
                continue
            keys = np.array([prefix_key(v >> (m - ell), ell) for v in values], dtype=np.uint64)
            pooled[idxs] += candidate_support(seeds, buckets, keys, spec.g)
            sizes[idxs] += int(seeds.shape[0])
        for x, v in zip(idxs, values, strict=True):
            cache[v] = (int(pooled[x]), int(sizes[x]))
    return pooled, sizes


def pem_search(spec: PEM, groups: list[tuple[np.ndarray, np.ndarray]], *, pool: bool = True) -> list[Round]:
    """The rounds of PEM's prefix extension over the groups' (seeds, buckets).

    With ``pool`` (the default), a candidate that determines a whole value is
    estimated from every group whose prefix determines it (:func:`_pool`);
    ``pool=False`` is the paper's estimate, from the round's group only.

    Raises
    ------
    ParameterError
        When a group has no reports (its round cannot rank its candidates).
    """
    rounds: list[Round] = []
    p_star, q_star = spec.p_star, spec.q_star
    kept_prefixes = np.zeros(1, dtype=object)
    previous = 0
    last = spec.num_rounds - 1
    cache: dict[int, tuple[int, int]] = {}
    for i, (seeds, buckets) in enumerate(groups):
        n_i = int(seeds.shape[0])
        length = spec.prefix_length(i)
        if n_i == 0:
            raise EstimateError(
                f"pem: group {i} of {spec.num_rounds} has no reports, so its round cannot rank its "
                "candidates (collect more reports)"
            )
        step = length - previous
        ext = np.arange(1 << step, dtype=object)
        candidates = (kept_prefixes[:, None] * (1 << step) + ext[None, :]).ravel()
        # Only prefixes a valid encoding can start with are evaluated (public structure, no data).
        if i == last:
            possible = [spec.bits_value(int(c)) is not None for c in candidates]
        else:
            possible = [spec.prefix_possible(int(c), length) for c in candidates]
        candidates = candidates[np.array(possible, dtype=bool)]
        keys = np.array([prefix_key(int(c), length) for c in candidates], dtype=np.uint64)
        support = candidate_support(seeds, buckets, keys, spec.g)
        sizes = np.full(candidates.size, n_i, dtype=np.int64)
        if pool:
            support, sizes = _pool(spec, groups, i, candidates, support, cache)
        frequency = np.asarray(unbiased_frequency(support, sizes, p_star, q_star), dtype=float)
        if i == last:
            kept = _top(frequency, candidates, np.ones(candidates.size, dtype=bool), spec.top_k)
        else:
            kept = _kept_middle(spec, frequency, candidates, sizes)
        rounds.append(Round(length, n_i, candidates, support, frequency, kept, sizes if pool else None))
        kept_prefixes = candidates[kept]
        previous = length
    return rounds


def held_out_round(spec: PrefixHashing, final: Round, seeds: np.ndarray, buckets: np.ndarray) -> Round:
    """The last round's kept candidates re-estimated on held-out reports, best first by the new estimates.

    Raises
    ------
    ParameterError
        When there are no held-out reports.
    """
    n_b = int(seeds.shape[0])
    if n_b == 0:
        raise EstimateError(f"{spec.mechanism}: the last group has no held-out reports; collect more reports")
    length = spec.prefix_length(spec.num_rounds - 1)
    candidates = final.candidates[final.kept]
    keys = np.array([prefix_key(int(c), length) for c in candidates], dtype=np.uint64)
    support = candidate_support(seeds, buckets, keys, spec.g)
    frequency = np.asarray(unbiased_frequency(support, n_b, spec.p_star, spec.q_star), dtype=float)
    kept = _top(frequency, candidates, np.ones(candidates.size, dtype=bool), candidates.size)
    return Round(length, n_b, candidates, support, frequency, kept)


def held_out_mask(seeds: np.ndarray, share: float = DEFAULT_HELD_OUT_SHARE) -> np.ndarray:
    """Which reports the held-out estimate sets aside: seed mod 2^20 < round(share·2^20).

    The seed is drawn independently of the value and of every other report,
    so the two parts are independent collections of the same population
    (docs/heavy-hitters.md#pem-selection); the split uses no data.

    Raises
    ------
    ParameterError
        When ``share`` is not a number in (0, 1).
    """
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
        raise ParameterError(f"held_out_share must be a number in (0, 1), got {share!r}")
    cut = np.uint64(max(1, min((1 << _SPLIT_BITS) - 1, round(share * (1 << _SPLIT_BITS)))))
    return np.asarray(seeds, dtype=np.uint64) % np.uint64(1 << _SPLIT_BITS) < cut


def zero_frequency_p_values(support: np.ndarray, reports: np.ndarray | int, q_star: float) -> np.ndarray:
    """One-sided exact p-values of H₀: nobody holds the value (f = 0) against f > 0.

    When nobody holds a value, each of the N reports behind its support
    count supports it independently with probability q* exactly (the seed is
    uniform), so C ~ Bin(N, q*) and p = P[Bin(N, q*) ≥ C].
    """
    from scipy.stats import binom

    support = np.asarray(support, dtype=np.int64)
    return np.asarray(binom.sf(support - 1, np.asarray(reports, dtype=np.int64), q_star), dtype=float)


def heavy_hitter_table(
    spec: PrefixHashing,
    final: Round,
    n: int,
    confidence: float,
    *,
    selection_biased: bool = True,
    alpha: float = DEFAULT_ALPHA,
) -> pd.DataFrame:
    """The discovered values: count estimate n·f̂, its standard error and normal interval, and its test against 0.

    f̂ is the last group's unbiased frequency estimate. Its variance is the
    mechanism's (fixed data, n_i reports) plus the sampling of the group
    from the n users: f(1 − f)(n − n_i)/(n_i(n − 1)), both at the plug-in
    f̂ clipped to [0, 1] (docs/heavy-hitters.md#pem-variance). ``p_value``
    is the exact one-sided test of f = 0 (:func:`zero_frequency_p_values`)
    and ``significant`` its Bonferroni-adjusted decision over the table's
    rows at ``alpha``: when the estimates are independent of the selection
    (``selection_biased`` False), the probability that any value nobody
    holds is marked significant is at most ``alpha``
    (docs/heavy-hitters.md#significance).
    """
    n_i = final.reports if final.sizes is None else final.sizes[final.kept]
    f_hat = final.frequency[final.kept]
    f_clip = np.clip(f_hat, 0.0, 1.0)
    variance = frequency_variance(f_clip, n_i, spec.p_star, spec.q_star)
    if n > 1:
        variance = variance + f_clip * (1 - f_clip) * (n - n_i) / (n_i * (n - 1))
    values = [spec.bits_value(int(c)) for c in final.candidates[final.kept]]
    table = estimate_table(values, n * f_hat, n * np.sqrt(variance), n, confidence=confidence)
    p_values = zero_frequency_p_values(final.support[final.kept], n_i, spec.q_star)
    table["p_value"] = p_values
    table["significant"] = adjust_p_values(p_values, "bonferroni") <= alpha
    table.attrs.update(
        mechanism=spec.mechanism,
        group_reports=final.reports,
        reports=n,
        selection_biased=selection_biased,
        top_k=spec.top_k,
        alpha=alpha,
    )
    return table


class PEMAccumulator(Accumulator):
    """The (seed, bucket) pairs of each group's reports; :meth:`estimate` runs the search.

    Parameters
    ----------
    spec : PEM

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import PEMAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.PEM(epsilon=4.0, max_length=8, top_k=4)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["cat", "dog", "cat"]))
    >>> isinstance(aggregator, PEMAccumulator), aggregator.n
    (True, 3)
    """

    _BUFFER = 4096

    def __init__(self, spec: PEM):
        self.spec = spec
        g = spec.num_rounds
        self._seeds: list[list[np.ndarray]] = [[] for _ in range(g)]
        self._buckets: list[list[np.ndarray]] = [[] for _ in range(g)]
        self._pending: list[tuple[int, int, int]] = []
        self._n = 0

    # -- adding ----------------------------------------------------------------
    def _flush(self) -> None:
        if not self._pending:
            return
        pending = np.array(self._pending, dtype=np.uint64).reshape(-1, 3)
        self._pending = []
        self._store(pending[:, 0].astype(np.int64), pending[:, 1], pending[:, 2].astype(np.int64))

    def _store(self, rounds: np.ndarray, seeds: np.ndarray, buckets: np.ndarray) -> None:
        for i in np.unique(rounds).tolist():
            mask = rounds == i
            self._seeds[i].append(np.ascontiguousarray(seeds[mask], dtype=np.uint64))
            self._buckets[i].append(np.ascontiguousarray(buckets[mask], dtype=np.int64))

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        round_ = require_field(checked.field("round"), "round")
        self._pending.append((round_, require_field(checked.seed, "seed"), checked.value))
        self._n += 1
        if len(self._pending) >= self._BUFFER:
            self._flush()

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        rounds = check_int_column(batch.column("round"), "round", self.spec.num_rounds)
        if batch.seeds is None:
            raise ReportError("batch has no 'seeds' column")
        seeds = np.asarray(batch.seeds)
        if seeds.ndim != 1 or seeds.dtype.kind not in "iu":
            raise ReportError(f"batch seeds must be a 1-D integer array, got {seeds.dtype} {seeds.shape}")
        if seeds.size and (
            (seeds.dtype.kind == "i" and seeds.min() < 0) or seeds.astype(np.uint64).max() >= LH_SEED_SPACE
        ):
            raise ReportError(f"batch seeds must be in [0, {LH_SEED_SPACE})")
        buckets = check_int_column(batch.values, "values", self.spec.g)
        if not rounds.shape == seeds.shape == buckets.shape:
            raise ReportError("batch round, seeds and values columns differ in length")
        self._store(rounds.astype(np.int64), seeds.astype(np.uint64), buckets.astype(np.int64))
        self._n += int(rounds.shape[0])

    # -- state -------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of reports counted."""
        return self._n

    def groups(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per group, its reports' (seeds, buckets), sorted (the canonical multiset)."""
        self._flush()
        out = []
        for i in range(self.spec.num_rounds):
            seeds = np.concatenate(self._seeds[i]) if self._seeds[i] else np.zeros(0, dtype=np.uint64)
            buckets = np.concatenate(self._buckets[i]) if self._buckets[i] else np.zeros(0, dtype=np.int64)
            order = np.lexsort((buckets, seeds))
            seeds, buckets = seeds[order], buckets[order]
            self._seeds[i], self._buckets[i] = [seeds], [buckets]
            out.append((seeds, buckets))
        return out

    @property
    def group_sizes(self) -> np.ndarray:
        """n_i, the reports of each group."""
        return np.array([seeds.shape[0] for seeds, _ in self.groups()], dtype=np.int64)

    def state(self) -> dict[str, Any]:
        """``{"seeds", "buckets"}``: per group, its reports' (seed, bucket) pairs, sorted (16 bytes a report)."""
        groups = self.groups()
        return {"seeds": [seeds for seeds, _ in groups], "buckets": [buckets for _, buckets in groups]}

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"seeds", "buckets"}``, checked: one pair of equal length per group, seeds and buckets in range."""
        seeds, buckets = state_value(state, "seeds"), state_value(state, "buckets")
        rounds = spec.num_rounds
        if not (
            isinstance(seeds, list) and isinstance(buckets, list) and len(seeds) == len(buckets) == rounds
        ):
            raise InputError(
                f"the saved {spec.mechanism} state must hold seeds and buckets of {rounds} groups"
            )
        acc = cls(spec)
        for i, (s, b) in enumerate(zip(seeds, buckets, strict=True)):
            s, b = np.asarray(s), np.asarray(b)
            if s.ndim != 1 or s.shape != b.shape or s.dtype != np.uint64 or b.dtype.kind not in "iu":
                raise InputError(
                    f"group {i} of the saved {spec.mechanism} state is not two columns of one length"
                )
            if s.size and (int(s.max()) >= LH_SEED_SPACE or b.min() < 0 or b.max() >= spec.g):
                raise InputError(
                    f"group {i} of the saved {spec.mechanism} state has a seed or bucket out of range"
                )
            acc._seeds[i], acc._buckets[i] = [s.copy()], [b.astype(np.int64)]
        acc._n = sum(int(s.shape[0]) for s in seeds)
        return acc

    def merge(self, other: Self) -> Self:
        """A new accumulator holding the reports of both (same spec required)."""
        self._check_mergeable(other)
        merged = type(self)(self.spec)
        for i, ((s1, b1), (s2, b2)) in enumerate(zip(self.groups(), other.groups(), strict=True)):
            merged._seeds[i] = [np.concatenate([s1, s2])]
            merged._buckets[i] = [np.concatenate([b1, b2])]
        merged._n = self.n + other.n
        return merged

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, PEMAccumulator)
        if other.spec.fingerprint != self.spec.fingerprint or other.n != self.n:
            return False
        return all(
            np.array_equal(s1, s2) and np.array_equal(b1, b2)
            for (s1, b1), (s2, b2) in zip(self.groups(), other.groups(), strict=True)
        )

    __hash__ = None  # mutable: unhashable

    # -- estimates ---------------------------------------------------------------
    def _check_estimate(self, consistency: str, options: dict[str, Any]) -> None:
        """Refuse unknown options, a consistency method (the table is the discovered values only), no reports."""
        self._refuse_options(options)
        if str(consistency).strip().lower() != "none":
            raise ParameterError(
                f"{self.spec.mechanism} estimates are the discovered values only; --consistency {consistency} "
                "does not apply (use none)"
            )
        if self.n == 0:
            raise EstimateError("cannot estimate from zero reports")

    def rounds(self) -> list[Round]:
        """The search's rounds (:func:`pem_search`)."""
        return pem_search(self.spec, self.groups())

    def estimate(
        self,
        confidence: float = 0.95,
        *,
        consistency: str = "none",
        held_out: bool = True,
        alpha: float = DEFAULT_ALPHA,
        held_out_share: float = DEFAULT_HELD_OUT_SHARE,
        **options: Any,
    ) -> pd.DataFrame:
        """The discovered heavy hitters, best first: ``value, estimate, std_error, ci_low, ci_high, proportion, p_value, significant``.

        At most ``top_k`` rows (fewer when the last round has fewer valid
        encodings among its candidates), scaled to all n users.

        Parameters
        ----------
        confidence : float
            Level of the intervals.
        consistency : str
            ``none`` only.
        held_out : bool, default True
            Split every group by the report's seed (independent of the
            value, :func:`held_out_mask`): ``held_out_share`` of each group
            estimates the found values (pooled the same way), the rest runs
            the search, so the estimates, intervals and tests are valid
            given the selection (1/share times the variance, a selection
            from 1 − share of the reports).
            ``False``: the same reports select and estimate, so a value
            *selected* by its own estimate is biased upward near the
            selection threshold and neither its interval nor its test
            accounts for that (``attrs["selection_biased"]``,
            docs/heavy-hitters.md#pem-selection).
        alpha : float, default 0.05
            Family-wise error of ``significant`` over the table's rows
            (Bonferroni): with ``held_out``, the probability that any
            value nobody holds is marked significant is at most ``alpha``.
        held_out_share : float, default 0.125
            The share of each group's reports set aside to estimate (with
            ``held_out``): a value's estimate pools the groups that determine
            it, a prefix's selection sees one group, so the search gets the
            larger part (docs/heavy-hitters.md#pem-held-out-share).
        """
        self._check_estimate(consistency, options)
        check_options(alpha, "bonferroni", confidence)
        held_out_mask(np.zeros(0, dtype=np.uint64), held_out_share)  # validate before the search
        if not held_out:
            rounds = self.rounds()
            return heavy_hitter_table(self.spec, rounds[-1], self.n, confidence, alpha=alpha)
        selecting, estimating = [], []
        for seeds, buckets in self.groups():
            held = held_out_mask(seeds, held_out_share)
            selecting.append((seeds[~held], buckets[~held]))
            estimating.append((seeds[held], buckets[held]))
        rounds = pem_search(self.spec, selecting)
        final = held_out_round(self.spec, rounds[-1], *estimating[-1])
        support, sizes = _pool(
            self.spec, estimating, self.spec.num_rounds - 1, final.candidates, final.support, {}
        )
        frequency = np.asarray(
            unbiased_frequency(support, sizes, self.spec.p_star, self.spec.q_star), dtype=float
        )
        kept = _top(
            frequency, final.candidates, np.ones(final.candidates.size, dtype=bool), final.candidates.size
        )
        final = Round(final.length, final.reports, final.candidates, support, frequency, kept, sizes)
        table = heavy_hitter_table(self.spec, final, self.n, confidence, selection_biased=False, alpha=alpha)
        table.attrs["held_out_share"] = held_out_share
        return table

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.mechanism}, n={self.n})"


# -- TreeHist ----------------------------------------------------------------------------------------


def treehist_thresholds(spec: TreeHist) -> tuple[float, float]:
    """(z of the levels 1…m − 1, z of the last level m), in standard errors of a prefix of frequency 0.

    The last level: z = Φ⁻¹(1 − β/(2·width)). Its at most 2·width candidates
    were selected on the other groups, so they are independent of its
    reports, and a value of frequency 0 clears it with probability at most
    β/(2·width); a value of frequency 0 is output only if it clears it, so
    P[any output has frequency 0] ≤ β (Bonferroni over the 2·width). The
    middle levels only bound the work: z = Φ⁻¹(1 − 1/(2·width)), at most
    one expected survivor of frequency 0 per level among 2·width candidates.
    """
    from statistics import NormalDist

    normal = NormalDist()
    candidates = 2 * spec.width
    return normal.inv_cdf(1 - 1 / candidates), normal.inv_cdf(1 - spec.beta / candidates)


def treehist_search(spec: TreeHist, groups: list[tuple[np.ndarray, np.ndarray]]) -> list[Round]:
    """TreeHist's levels, then the final group's estimates of the survivors (docs/heavy-hitters.md#treehist).

    Level ℓ (group ℓ − 1) estimates the two children of every survivor and
    keeps those whose estimate is at least z·σ₀, with σ₀ the standard error
    of a prefix of frequency 0 in that group and z from
    :func:`treehist_thresholds` (P[a value of frequency 0 survives the last
    level] ≤ β), at most ``width`` of them (the largest); the last level
    ranks valid encodings only. At the middle levels a candidate that
    determines its value is estimated from the middle groups that determine
    it (:func:`_pool`), never from the last level's group or the final
    group, so both stay independent of the selection. The last round
    re-estimates the survivors on the final group.
    """
    p_star, q_star = spec.p_star, spec.q_star
    m = spec.num_bits
    z_mid, z_last = treehist_thresholds(spec)
    rounds: list[Round] = []
    cache: dict[int, tuple[int, int]] = {}
    survivors = np.zeros(1, dtype=object)
    for level in range(1, m + 1):
        seeds, buckets = groups[level - 1]
        n_i = int(seeds.shape[0])
        if n_i == 0:
            raise EstimateError(
                f"treehist: group {level - 1} of {spec.num_rounds} has no reports, so level {level} cannot be "
                "estimated (collect more reports)"
            )
        candidates = (survivors[:, None] * 2 + np.arange(2, dtype=object)[None, :]).ravel()
        keys = np.array([prefix_key(int(c), level) for c in candidates], dtype=np.uint64)
        support = candidate_support(seeds, buckets, keys, spec.g)
        sizes = np.full(candidates.size, n_i, dtype=np.int64)
        if level < m:  # the middle levels pool the middle groups only (the last level's stays independent)
            support, sizes = _pool(spec, groups, level - 1, candidates, support, cache, usable=m - 1)
        frequency = np.asarray(unbiased_frequency(support, sizes, p_star, q_star), dtype=float)
        z = z_last if level == m else z_mid
        threshold = z * np.sqrt(frequency_variance(0.0, sizes, p_star, q_star))
        if level == m:
            possible = [spec.bits_value(int(c)) is not None for c in candidates]
        else:
            possible = [spec.prefix_possible(int(c), level) for c in candidates]
        eligible = np.array(possible, dtype=bool) & (frequency >= threshold)
        kept = _top(frequency, candidates, eligible, spec.width)
        rounds.append(Round(level, n_i, candidates, support, frequency, kept, sizes if level < m else None))
        survivors = candidates[kept]
        if survivors.size == 0:
            break
    return rounds


class TreeHistAccumulator(PEMAccumulator):
    """TreeHist: the same state as PEM's (each group's (seed, bucket) pairs); :meth:`estimate` walks the tree."""

    def rounds(self) -> list[Round]:
        """The levels of the walk (:func:`treehist_search`)."""
        return treehist_search(self.spec, self.groups())

    def estimate(
        self,
        confidence: float = 0.95,
        *,
        consistency: str = "none",
        alpha: float = DEFAULT_ALPHA,
        **options: Any,
    ) -> pd.DataFrame:
        """The survivors of the last level, estimated on the final group (unbiased given the selection), best first.

        At most ``top_k`` rows: the survivors with the largest final
        estimates; no row when no prefix cleared a level's threshold. The
        final group played no part in the selection, so the intervals and
        the ``significant`` test (Bonferroni over the rows at ``alpha``,
        as PEM's) are valid given it.
        """
        self._check_estimate(consistency, options)
        check_options(alpha, "bonferroni", confidence)
        spec = self.spec
        groups = self.groups()
        last = treehist_search(spec, groups)[-1]
        seeds, buckets = groups[-1]
        if last.length == spec.num_bits and last.kept.size:
            final = held_out_round(spec, last, seeds, buckets)
            final = dataclasses.replace(final, kept=final.kept[: spec.top_k])
        else:  # the walk stopped before the last level, or nothing cleared it: an empty table
            final = Round(
                spec.num_bits,
                max(int(seeds.shape[0]), 1),
                np.zeros(0, dtype=object),
                np.zeros(0, dtype=np.int64),
                np.zeros(0),
                np.zeros(0, dtype=np.int64),
            )
        return heavy_hitter_table(spec, final, self.n, confidence, selection_biased=False, alpha=alpha)
