"""RAPPOR spec: Bloom filter, permanent and instantaneous randomized response.

One spec covers the three RAPPOR encodings of Erlingsson et al.:

``encoding="bloom"`` (default)
    The value sets ``num_hashes`` bits of a ``num_bits`` Bloom filter whose
    hash functions depend on the client's cohort (``hash="mmh3"`` or
    ``hash="md5"``, Google's exact hashing).
``encoding="basic"``
    One-hot over a declared ``domain`` (no Bloom filter, one hash).
``encoding="boolean"``
    A single bit holding a boolean value.

``f = 0`` gives one-time RAPPOR (no permanent randomized response).

Probabilities (docs/mechanisms.md#rappor-prr-irr), with B the true bit and S the reported bit:
P[S=1 | B=1] = ½f(p+q) + (1−f)q and P[S=1 | B=0] = ½f(p+q) + (1−f)p.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response". ACM CCS 2014.
.. [2] google/rappor, analysis/R/decode.R (ComputePrivacyGuarantees) and
   client/python/rappor.py.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from ldp.domain import DomainIndex, DomainValue, normalize_domain
from ldp.errors import AccountingError, InputError, SpecError
from ldp.exact import epsilon_bound_of_ratio, epsilon_of_ratio
from ldp.hashing import bloom_positions, value_bytes
from ldp.report_schema import BitVector, BoundedInt, ReportSchema
from ldp.specs.base import Spec
from ldp.specs.limits import (
    MAX_DOMAIN_SIZE,
    MAX_TABLE_COUNTERS,
    REPRESENTABLE_MAX_EPSILON,
    check_domain_length,
    check_epsilon_limit,
    check_size_limit,
)
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_int, check_probability

__all__ = ["RAPPOR_ENCODINGS", "RAPPOR_HASHES", "Rappor"]

RAPPOR_ENCODINGS = ("bloom", "basic", "boolean")
RAPPOR_HASHES = ("mmh3", "md5")

_DOMAIN_WHY = "the aggregator keeps one int64 count per value, bit and cohort, and the spec a value index"

_TRUE_WORDS = {"1", "true", "t", "yes", "y"}
_FALSE_WORDS = {"0", "false", "f", "no", "n"}


@dataclasses.dataclass(frozen=True, init=False)
class Rappor(Spec):
    """RAPPOR (Bloom filter + PRR + IRR).

    Parameters
    ----------
    num_bits : int
        k, the Bloom filter size (``basic``: the domain size; ``boolean``: 1).
    num_hashes : int
        h, hash functions per value (``basic``/``boolean``: 1).
    num_cohorts : int
        m, number of cohorts; each client belongs to one, uniformly at random.
    f : Fraction, str or float
        Permanent randomized response: each bit is forced to 1 with
        probability f/2 and to 0 with probability f/2, in [0, 1).
    p, q : Fraction, str or float
        Instantaneous randomized response: P[S=1 | B'=0] = p, P[S=1 | B'=1] = q,
        with p < q. Decimals are read exactly ("0.39" is 39/100).
    hash : {"mmh3", "md5"}
        Bloom hashing; "md5" reproduces Google's RAPPOR bit for bit.
    encoding : {"bloom", "basic", "boolean"}
    domain : sequence, optional
        The values of ``basic`` RAPPOR.

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova. ACM CCS 2014.
    .. [2] G. Fanti, V. Pihur, Ú. Erlingsson. "Building a RAPPOR with the
       Unknown". PoPETs 2016.

    Examples
    --------
    >>> from ldp import Rappor
    >>> spec = Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")
    >>> spec.mechanism, round(spec.epsilon, 4)
    ('rappor', 1.0743)
    """

    mechanism: ClassVar[str] = "rappor"
    #: Fields a spec file may leave null: the sizes and domain the encoding derives (basic, boolean).
    json_nullable: ClassVar[frozenset[str]] = frozenset({"num_bits", "num_hashes", "domain"})
    report_kind: ClassVar[str] = "rappor"
    candidates_mode: ClassVar[str | None] = "decode"
    #: Reports carry the client's cohort and its num_bits perturbed Bloom filter bits.
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (
            BoundedInt("cohort", bound="num_cohorts", message="cohort {raw!r} is out of range [0, {bound})"),
            BitVector("bits", length="num_bits"),
        )
    )
    memoized: ClassVar[bool] = True
    #: r reports of one value are (r·ε₁)-DP: per Bloom bit the log likelihood ratio is odd in the IRR
    #: log ratio and concave beyond 0, hence subadditive (docs/accounting.md#memoized-streams).
    memo_linear: ClassVar[bool] = True

    num_bits: int
    num_hashes: int
    num_cohorts: int
    f: Fraction
    p: Fraction
    q: Fraction
    hash: str
    encoding: str
    domain: tuple[DomainValue, ...] | None

    def __init__(
        self,
        num_bits: int | None = None,
        num_hashes: int | None = None,
        num_cohorts: int = 1,
        f: ProbabilityInput | None = None,
        p: ProbabilityInput | None = None,
        q: ProbabilityInput | None = None,
        hash: str = "mmh3",
        encoding: str = "bloom",
        domain: Iterable[DomainValue] | None = None,
    ) -> None:
        kind = str(encoding).lower()
        if kind not in RAPPOR_ENCODINGS:
            raise SpecError(f"rappor encoding must be one of {RAPPOR_ENCODINGS}, got {encoding!r}")
        object.__setattr__(self, "encoding", kind)
        if f is None:
            raise SpecError("rappor needs f")
        if p is None:
            raise SpecError("rappor needs p")
        if q is None:
            raise SpecError("rappor needs q")
        prr = check_probability(f, "f", high_open=True)
        irr0 = check_probability(p, "p")
        irr1 = check_probability(q, "q")
        if irr0 >= irr1:
            raise SpecError(f"rappor needs p < q (IRR), got p={irr0}, q={irr1}")
        object.__setattr__(self, "f", prr)
        object.__setattr__(self, "p", irr0)
        object.__setattr__(self, "q", irr1)
        object.__setattr__(
            self, "num_cohorts", check_int(num_cohorts, "num_cohorts", minimum=1, maximum=2**32 - 1)
        )

        values: tuple[DomainValue, ...] | None = None
        if kind == "bloom":
            if domain is not None:
                raise SpecError("rappor with encoding='bloom' takes no domain (decode with a candidate list)")
            if num_bits is None or num_hashes is None:
                raise SpecError("rappor needs num_bits and num_hashes")
            hash_name = str(hash).lower()
            if hash_name not in RAPPOR_HASHES:
                raise SpecError(f"rappor hash must be one of {RAPPOR_HASHES}, got {hash!r}")
            max_bits, max_hashes = (256, 16) if hash_name == "md5" else (1 << 20, 64)
            k = check_int(num_bits, "num_bits", minimum=1, maximum=max_bits)
            h = check_int(num_hashes, "num_hashes", minimum=1, maximum=max_hashes)
            if h > k:
                raise SpecError(f"rappor num_hashes ({h}) cannot exceed num_bits ({k})")
        elif kind == "basic":
            if domain is None:
                raise SpecError("rappor with encoding='basic' needs a domain")
            check_domain_length(domain, MAX_DOMAIN_SIZE, "basic rappor", _DOMAIN_WHY)
            values = normalize_domain(domain)
            check_size_limit(
                len(values),
                MAX_DOMAIN_SIZE,
                "basic rappor",
                f"a domain of {len(values):,} values",
                _DOMAIN_WHY,
            )
            if len(values) < 2:
                raise SpecError("basic rappor needs a domain of at least 2 values")
            k, h, hash_name = len(values), 1, "none"
            if num_bits not in (None, k):
                raise SpecError(f"basic rappor has num_bits = domain size = {k}, got {num_bits}")
            if num_hashes not in (None, 1):
                raise SpecError(f"basic rappor has num_hashes = 1, got {num_hashes}")
        else:  # boolean
            if domain is not None:
                raise SpecError("boolean rappor takes no domain")
            if num_bits not in (None, 1) or num_hashes not in (None, 1):
                raise SpecError("boolean rappor has num_bits = num_hashes = 1")
            k, h, hash_name = 1, 1, "none"
        object.__setattr__(self, "num_bits", k)
        object.__setattr__(self, "num_hashes", h)
        object.__setattr__(self, "hash", hash_name)
        object.__setattr__(self, "domain", values)
        if self.prob_one_given_zero == 0 or self.prob_one_given_one == 1:
            raise SpecError(
                "rappor parameters give no single-report privacy (a reported bit can be certain); "
                f"got f={prr}, p={irr0}, q={irr1}"
            )
        m, k = self.num_cohorts, self.num_bits
        check_size_limit(
            m * k,
            MAX_TABLE_COUNTERS,
            "rappor",
            f"num_cohorts x num_bits = {m:,} x {k:,} = {m * k:,} counters",
            "the aggregator keeps one int64 count per cohort and bit: 128 MiB at the limit",
        )
        self._check_epsilon_limits()

    def _check_epsilon_limits(self) -> None:
        """ε₁ and ε∞ must stay where e^ε is a finite double (checked on ln of the exact ratios before rounding up)."""
        for name, ratio in (("epsilon_one", self.single_report_ratio), ("epsilon_inf", self.permanent_ratio)):
            if ratio is not None:
                check_epsilon_limit(
                    epsilon_of_ratio(ratio),
                    REPRESENTABLE_MAX_EPSILON,
                    "rappor",
                    "e^epsilon must be a finite double to certify the claim; it follows from f, p, q "
                    "and num_hashes",
                    name=name,
                )

    # -- named constructors ----------------------------------------------
    @classmethod
    def basic(
        cls,
        domain: Iterable[DomainValue],
        *,
        f: ProbabilityInput,
        p: ProbabilityInput,
        q: ProbabilityInput,
        num_cohorts: int = 1,
    ) -> Rappor:
        """Basic RAPPOR: one-hot over ``domain``, no Bloom filter."""
        return cls(
            encoding="basic", domain=domain, f=f, p=p, q=q, num_cohorts=num_cohorts
        )  # sized before copied

    @classmethod
    def boolean(
        cls, *, f: ProbabilityInput, p: ProbabilityInput, q: ProbabilityInput, num_cohorts: int = 1
    ) -> Rappor:
        """One-bit RAPPOR for a boolean value."""
        return cls(encoding="boolean", f=f, p=p, q=q, num_cohorts=num_cohorts)

    # -- probabilities ---------------------------------------------------
    @property
    def prob_one_given_one(self) -> Fraction:
        """P[S_i = 1 | B_i = 1] = ½f(p+q) + (1−f)q (q* in docs/mechanisms.md#rappor-prr-irr)."""
        return self.f * (self.p + self.q) / 2 + (1 - self.f) * self.q

    @property
    def prob_one_given_zero(self) -> Fraction:
        """P[S_i = 1 | B_i = 0] = ½f(p+q) + (1−f)p (p* in docs/mechanisms.md#rappor-prr-irr)."""
        return self.f * (self.p + self.q) / 2 + (1 - self.f) * self.p

    @property
    def num_bytes(self) -> int:
        return (self.num_bits + 7) // 8

    @property
    def _differing_bits(self) -> int:
        return 1 if self.encoding == "boolean" else 2 * self.num_hashes

    # -- privacy -----------------------------------------------------------
    @property
    def permanent_ratio(self) -> Fraction | None:
        """Worst-case ratio of the PRR over any number of reports (None when f = 0)."""
        if self.f == 0:
            return None
        return ((1 - self.f / 2) / (self.f / 2)) ** self._differing_bits

    @property
    def single_report_ratio(self) -> Fraction:
        """Worst-case ratio of one report: ∏ over differing bits of the larger bit ratio."""
        one, zero = self.prob_one_given_one, self.prob_one_given_zero
        up = one / zero  # a bit the input sets
        down = (1 - zero) / (1 - one)  # a bit the other input sets
        if self.encoding == "boolean":
            return max(up, down)
        return (up * down) ** self.num_hashes

    @property
    def epsilon_inf(self) -> float:
        """ε∞ = 2h·ln((1 − f/2)/(f/2)): any number of reports of one memoized value.

        Rounded up (certified: the exact ratio is at most e^ε∞), like every spec's claim.
        """
        ratio = self.permanent_ratio
        return math.inf if ratio is None else epsilon_bound_of_ratio(ratio)

    @property
    def epsilon_one(self) -> float:
        """ε₁ = h·ln(q*(1−p*)/(p*(1−q*))): a single report, rounded up (certified, as ε∞)."""
        return epsilon_bound_of_ratio(self.single_report_ratio)

    @property
    def epsilon(self) -> float:
        """Per-report ε (ε₁); see :attr:`epsilon_inf` for the longitudinal bound."""
        return self.epsilon_one

    def privacy_summary(self) -> dict[str, float]:
        return {"epsilon_inf": self.epsilon_inf, "epsilon_one": self.epsilon_one}

    # -- encoding ----------------------------------------------------------
    @cached_property
    def domain_index(self) -> DomainIndex | None:
        return None if self.domain is None else DomainIndex(self.domain)

    def _domain_position(self, value: Any) -> int:
        """Index of ``value`` in the domain of basic RAPPOR (the only encoding with a domain)."""
        index = self.domain_index
        if index is None:
            raise InputError(f"{self.encoding} rappor has no domain to look {value!r} up in")
        return index.index(value)

    def check_cohort(self, cohort: Any) -> int:
        """Validate a cohort number."""
        return check_int(cohort, "cohort", minimum=0, maximum=self.num_cohorts - 1)

    def bit_pair(self, reports: float = 1) -> PrivacyPiece:
        """One Bloom bit set by x and not by x′, over ``reports`` IRRs of one memoized value.

        The count of 1s over r reports is (1 − f/2)·Bin(r, q) + (f/2)·Bin(r, p)
        when the bit is set and (f/2)·Bin(r, q) + (1 − f/2)·Bin(r, p) when it is
        not; r = ``math.inf`` is the PRR bit itself.
        """
        from ldp.privacy._numeric import binom_logpmf, log_fraction

        f, p, q = self.f, self.p, self.q
        if math.isinf(reports):
            if f == 0:
                raise AccountingError(
                    "rappor with f = 0 has no permanent randomized response (epsilon_inf = inf)"
                )
            return piece([f / 2, 1 - f / 2], [1 - f / 2, f / 2])
        r = int(reports)
        if r == 1:
            a, b = self.prob_one_given_one, self.prob_one_given_zero
            return piece([1 - a, a], [1 - b, b])
        count_if_one = binom_logpmf(
            r, log_fraction(q), log_fraction(1 - q)
        )  # PRR bit 1: each report 1 w.p. q
        count_if_zero = binom_logpmf(r, log_fraction(p), log_fraction(1 - p))  # PRR bit 0: w.p. p
        keep, flip = log_fraction(1 - f / 2), log_fraction(f / 2)
        return PrivacyPiece(
            np.logaddexp(keep + count_if_one, flip + count_if_zero),
            np.logaddexp(flip + count_if_one, keep + count_if_zero),
        )

    def privacy_pieces(self, reports: float = 1) -> tuple[PrivacyPiece, ...]:
        """``reports`` reports of one memoized value (``math.inf``: the PRR): the differing Bloom bits.

        Boolean: the one bit. Otherwise the h bits set by x only and the h set
        by x′ only, which the worst pair of values keeps disjoint.
        """
        bit = self.bit_pair(reports)
        if self.encoding == "boolean":
            return (bit,)
        return (bit.repeated(self.num_hashes), bit.swapped().repeated(self.num_hashes))

    @property
    def memo_domain_size(self) -> int | None:
        """How many distinct values can be memoized: the domain size, 2 for boolean, None (unbounded) for Bloom."""
        if self.encoding == "boolean":
            return 2
        return len(self.domain) if self.encoding == "basic" and self.domain else None

    def memo_key(self, value: Any) -> bytes:
        """The identity of ``value`` for memoization: the key of its PRR and of its ledger stream.

        Basic: the domain index; boolean: ``b"1"``/``b"0"``; Bloom: the bytes
        hashed into the filter. Two spellings of one value have one key.

        Raises
        ------
        InputError
            If ``value`` is not valid for this spec (None, outside a basic domain,
            not a boolean).
        """
        if self.encoding == "basic":
            return str(self._domain_position(value)).encode()
        if self.encoding == "boolean":
            return b"1" if parse_boolean(value) else b"0"
        if value is None:
            raise InputError("rappor value must not be None")
        return value_bytes(value)

    def bit_positions(self, value: Any, cohort: int) -> list[int]:
        """Positions of the true bits B set by ``value`` in ``cohort``."""
        if self.encoding == "bloom":
            if value is None:
                raise InputError("rappor value must not be None")
            return bloom_positions(value, cohort, self.num_hashes, self.num_bits, self.hash)
        if self.encoding == "basic":
            return [self._domain_position(value)]
        return [0] if parse_boolean(value) else []


def parse_boolean(value: Any) -> bool:
    """Read a boolean from True/False, 0/1 or common words; clear error otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    raise InputError(f"boolean rappor value must be true/false or 1/0, got {value!r}")
