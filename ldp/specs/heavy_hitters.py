"""Heavy hitters over an unknown domain: PEM (docs/heavy-hitters.md).

A heavy-hitter spec has no domain: the users' values are strings of at most
``max_length`` bytes of UTF-8, and the aggregator *discovers* the ``top_k``
most frequent ones with no candidate list.

PEM (prefix extending method) splits the users uniformly at random into
g groups; group i reports the first γ + iη bits of its value's bit encoding
through OLH (the hash family of :mod:`ldp.hashing`, the exact randomized
response of :class:`ldp.specs.LocalHashing`), and the aggregator extends the
top prefixes (at least k, at most ``width``) η bits at a time
(:mod:`ldp.aggregator.pem`).

Bit encoding of a value (:meth:`PEM.value_bits`): its UTF-8 bytes, padded
with zero bytes to ``max_length``, read as an m = 8·max_length bit
big-endian integer. A UTF-8 string contains a zero byte only for U+0000,
which is refused, so the padding is unambiguous: a value is its bytes up to
the first zero byte. A prefix of length L is hashed through
:func:`prefix_key`, a fixed public map of (L, prefix) to [0, P) (SHA-256),
then through the local-hashing family H_seed as a domain index.

References
----------
.. [1] T. Wang, N. Li, S. Jha. "Locally differentially private heavy hitter
   identification". IEEE TDSC 18(2), 2021 (arXiv:1708.06674).
.. [2] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §4.4 (OLH).
"""

from __future__ import annotations

import codecs
import dataclasses
import hashlib
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

from ldp.errors import InputError, SpecError
from ldp.hashing import LH_PRIME
from ldp.report_schema import BoundedInt, ReportSchema
from ldp.specs.base import ExactPrivacySpec, MechanismView
from ldp.specs.frequency import LH_BUCKET_FIELD, LH_SEED_FIELD, HashedRandomizedResponse, optimal_hash_range
from ldp.specs.limits import OLH_MAX_EPSILON
from ldp.specs.validation import ProbabilityInput, check_epsilon, check_int

__all__ = [
    "HEAVY_HITTER_MECHANISMS",
    "PEM",
    "PEM_MAX_ETA",
    "PEM_MAX_LENGTH",
    "PEM_MAX_TOP_K",
    "PREFIX_HASH_LABEL",
    "HeavyHitterSpec",
    "PrefixHashing",
    "TreeHist",
    "prefix_key",
]

#: Longest value, in bytes of UTF-8 (m = 8·max_length bits).
PEM_MAX_LENGTH = 256
#: Largest k: the aggregator evaluates up to width·2^η (width ≥ k) candidates per round.
PEM_MAX_TOP_K = 4096
#: Largest step η: candidates per round grow as 2^η.
PEM_MAX_ETA = 12
#: At most this many candidates per round (width·2^η): the server's work and memory per round.
PEM_MAX_CANDIDATES = 1 << 20
#: PEM's default width (prefixes kept by a middle round) is this many times top_k.
PEM_DEFAULT_WIDTH_FACTOR = 4
#: Domain separation of the prefix hash (:func:`prefix_key`).
PREFIX_HASH_LABEL = b"ldp-pem-prefix-v1"


def prefix_key(prefix: int, length: int) -> int:
    """The local-hashing input of a ``length``-bit prefix: a fixed public map onto [0, P).

    SHA-256 of ``PREFIX_HASH_LABEL ‖ length (2 bytes, big-endian) ‖ the
    prefix left-aligned in ⌈length/8⌉ bytes`` (unused low bits zero); the
    first 8 digest bytes as a big-endian integer, modulo P = 2^31 − 1. The
    report then hashes this key with H_seed like an OLH domain index.
    """
    size = (length + 7) // 8
    data = (
        PREFIX_HASH_LABEL + length.to_bytes(2, "big") + (prefix << (8 * size - length)).to_bytes(size, "big")
    )
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big") % LH_PRIME


@dataclasses.dataclass(frozen=True, init=False)
class HeavyHitterSpec(ExactPrivacySpec):
    """Common interface of the heavy-hitter specs: string values, no domain, ``top_k`` discovered values.

    Their accumulators' ``estimate`` returns the discovered values with
    their count estimates, standard errors and intervals (the columns of a
    frequency table, one row per discovered value).
    """

    report_kind: ClassVar[str] = ""
    epsilon: float
    max_length: int
    top_k: int

    def value_bits(self, value: Any) -> int:
        """The m-bit integer encoding ``value`` (see the module docstring); a clear error for a bad value."""
        if not isinstance(value, str):
            raise InputError(
                f"{self.mechanism} values are strings, got {type(value).__name__} {str(value)[:40]!r}"
            )
        if "\x00" in value:
            raise InputError(
                f"{self.mechanism} values cannot contain U+0000 (the zero byte pads values to max_length)"
            )
        data = _utf8(value, self.mechanism)
        if len(data) > self.max_length:
            raise InputError(
                f"{self.mechanism}: value {value[:40]!r} is {len(data)} bytes of UTF-8, "
                f"above max_length={self.max_length}"
            )
        return int.from_bytes(data.ljust(self.max_length, b"\x00"), "big")

    def bits_value(self, bits: int) -> str | None:
        """The string an m-bit encoding stands for, or None when it is no valid encoding.

        Valid: UTF-8 bytes, then only zero bytes (the padding).
        """
        data = bits.to_bytes(self.max_length, "big")
        text = data.rstrip(b"\x00")
        if b"\x00" in text:
            return None
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def prefix_possible(self, prefix: int, length: int) -> bool:
        """Whether some valid encoding starts with this ``length``-bit prefix (its whole bytes are checked).

        Valid encodings are UTF-8 bytes then zero bytes: no non-zero byte
        after a zero byte, and the bytes before the first zero byte a
        possible start of UTF-8 text whose last character fits in
        ``max_length`` bytes (a prefix that ends inside a character needing
        more bytes than remain is a dead end; the leading bits of a
        partial last byte are checked the same way).
        """
        whole = length // 8
        data = (prefix >> (length - 8 * whole)).to_bytes(whole, "big") if whole else b""
        text, zero, rest = data.partition(b"\x00")
        if zero and (
            rest.strip(b"\x00") or (length > 8 * whole and prefix & ((1 << (length - 8 * whole)) - 1))
        ):
            return False
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            decoder.decode(text, final=bool(zero))
        except UnicodeDecodeError:
            return False
        if zero:
            return True
        # The character the prefix ends inside must fit in max_length bytes: count the bytes it still needs.
        pending = decoder.getstate()[0]
        bits = length - 8 * whole  # leading bits of the next byte, 0 to 7
        top = (prefix & ((1 << bits) - 1)) if bits else 0
        if pending:
            width = _utf8_width(pending[0])
            if (bits >= 2 and top >> (bits - 2) != 0b10) or (bits == 1 and top != 1):
                return False  # the next byte must continue the character: 10xxxxxx
            return whole + width - len(pending) <= self.max_length
        if not bits:
            return True  # at a character boundary: the value may end here
        if bits >= 2 and top >> (bits - 2) == 0b10:
            return False  # a continuation byte with no character to continue
        lead = 1  # the bytes the next character needs at least, from the leading bits of its first byte
        for ones in range(1, 5):
            if bits >= ones and top >> (bits - ones) == (1 << ones) - 1:
                lead = max(2, ones)
        return whole + lead <= self.max_length

    @property
    def num_bits(self) -> int:
        """m = 8·max_length, the length of a value's encoding."""
        return 8 * self.max_length


def _utf8_width(lead: int) -> int:
    """The bytes of the UTF-8 character that starts with byte ``lead`` (a valid lead byte)."""
    return 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _utf8(value: str, mechanism: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate
        raise InputError(
            f"{mechanism}: value {value[:40]!r} is not encodable as UTF-8 ({exc.reason})"
        ) from None


@dataclasses.dataclass(frozen=True, init=False)
class PrefixHashing(HashedRandomizedResponse, HeavyHitterSpec):
    """Heavy hitters by local hashing of prefixes: each user reports OLH of one prefix of its value, chosen by a uniform group.

    Subclasses fix the prefix length of each group (:attr:`prefix_lengths`).
    A report is ⟨round, seed, y⟩: the group (round) i uniform in
    [0, num_rounds) and independent of the value, then OLH of the key of the
    value's first ℓ_i bits (:func:`prefix_key`) with hash range ``g`` and
    keep probability ``p``. The privacy, the report form, the client and the
    aggregation state are shared (docs/heavy-hitters.md#pem-privacy).
    """

    report_kind: ClassVar[str] = "prefix-hashed"
    #: Reports carry the user's group (round), the hash seed and the reported bucket in [0, g).
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (
            BoundedInt("round", bound="num_rounds", message="round {raw!r} is out of range [0, {bound})"),
            LH_SEED_FIELD,
            LH_BUCKET_FIELD,
        )
    )
    max_epsilon: ClassVar[float] = OLH_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "its hash range g = e^epsilon + 1 must stay below the hash prime 2^31 - 1"
    )

    g: int
    p: Fraction

    def _set_common(self, epsilon: float, max_length: int, top_k: int) -> None:
        """Validate and store ε (its limit first), ``max_length`` and ``top_k``."""
        object.__setattr__(self, "epsilon", check_epsilon(epsilon))
        self._check_epsilon_limit()
        length = check_int(max_length, "max_length", minimum=1, maximum=PEM_MAX_LENGTH)
        k = check_int(top_k, "top_k", minimum=1, maximum=PEM_MAX_TOP_K)
        if k >= 1 << (8 * length):
            raise SpecError(
                f"{self.mechanism}: top_k={k} must be below 2^m = 2^{8 * length} (m = 8·max_length)"
            )
        object.__setattr__(self, "max_length", length)
        object.__setattr__(self, "top_k", k)

    def _set_olh(self, g: int | None, p: ProbabilityInput | None) -> None:
        """OLH's hash range (e^ε + 1 when omitted) and exact keep probability, then the claim check."""
        self._set_hash_range(optimal_hash_range(self.epsilon) if g is None else g, p)

    # -- the rounds --------------------------------------------------------
    @property
    def prefix_lengths(self) -> tuple[int, ...]:
        """ℓ_0, …, ℓ_{g−1}: the bits each group reports."""
        raise NotImplementedError

    @property
    def num_rounds(self) -> int:
        """The number of groups."""
        return len(self.prefix_lengths)

    def prefix_length(self, round_: int) -> int:
        """ℓ_i: the bits group i reports."""
        return self.prefix_lengths[round_]

    # -- privacy (OLH's, given the group) ----------------------------------
    # q, the collision probability, report_pieces, privacy_ratio, p* and q* (exact and float):
    # HashedRandomizedResponse's.
    # The group has the same law under both inputs; the worst pair differs in its first bit, so its
    # prefixes (and, but for a prefix-key collision, which only merges outputs, their keys) differ in
    # every group.

    @property
    def variance_star(self) -> float:
        """n·Var of a discovered value's frequency at f → 0: g times OLH's Var* (one group of n/g estimates it)."""
        from ldp.frequency_math import variance_star

        return self.num_rounds * variance_star(self.p_star, self.q_star)

    def variance(self, frequency: Any = 0.0, group_size: int = 1) -> Any:
        """Var of one group's frequency estimate of a prefix (fixed data), docs/heavy-hitters.md#pem-variance."""
        from ldp.frequency_math import frequency_variance

        return frequency_variance(frequency, group_size, self.p_star, self.q_star)


@dataclasses.dataclass(frozen=True, init=False)
class PEM(PrefixHashing):
    """Prefix extending method: heavy hitters of strings through OLH on growing prefixes (docs/heavy-hitters.md#pem).

    Each user draws a group i uniformly from [0, g) (independent of the
    value), and reports (i, seed, y): OLH of the key of its value's first
    ℓ_i = min(γ + iη, m) bits, with γ = ⌊log₂ k⌋ + 1 and
    g = 1 + ⌈(m − γ)/η⌉. One report per user, ε-LDP (the group carries no
    information on the value).

    Parameters
    ----------
    epsilon : float
        Privacy claim of the one report.
    max_length : int, default 16
        Longest value, in bytes of UTF-8 (m = 8·max_length bits).
    top_k : int, default 10
        Number of heavy hitters to discover.
    eta : int, default 4
        Bits added per round: the server evaluates width·2^η candidates per
        round, and fewer rounds (larger η) give each group more users.
    width : int, optional
        Most prefixes kept by a middle round (server side only; the reports
        do not depend on it): those whose estimate is significantly above 0,
        at least the top k, at most ``width``. 4·top_k by default (capped at
        2^20 / 2^η candidates per round). The last round outputs the top k.
    g : int, optional
        OLH hash range; e^ε + 1 (the best integer) by default.
    p : Fraction or str, optional
        Keep probability of the bucket; derived from ``epsilon`` when omitted.

    References
    ----------
    .. [1] T. Wang, N. Li, S. Jha. "Locally differentially private heavy
       hitter identification". IEEE TDSC 18(2), 2021.

    Examples
    --------
    >>> from ldp import PEM
    >>> spec = PEM(epsilon=2.0, max_length=16, top_k=10)
    >>> spec.mechanism, spec.max_length
    ('pem', 16)
    """

    mechanism: ClassVar[str] = "pem"
    #: A spec file may leave ``width`` out (or null): it follows from top_k and eta, not from epsilon.
    json_nullable: ClassVar[frozenset[str]] = frozenset({"width"})

    eta: int
    width: int

    def __init__(
        self,
        epsilon: float,
        max_length: int = 16,
        top_k: int = 10,
        eta: int = 4,
        width: int | None = None,
        g: int | None = None,
        p: ProbabilityInput | None = None,
    ) -> None:
        self._set_common(epsilon, max_length, top_k)
        step = check_int(eta, "eta", minimum=1, maximum=PEM_MAX_ETA)
        if self.top_k * (1 << step) > PEM_MAX_CANDIDATES:
            raise SpecError(
                f"pem: top_k * 2^eta = {self.top_k * (1 << step):,} candidates per round is above the limit of "
                f"{PEM_MAX_CANDIDATES:,} (the aggregator evaluates each against every report of its round)"
            )
        if width is None:
            width = max(self.top_k, min(PEM_DEFAULT_WIDTH_FACTOR * self.top_k, PEM_MAX_CANDIDATES >> step))
        kept = check_int(width, "width", minimum=self.top_k, maximum=PEM_MAX_CANDIDATES)
        if kept * (1 << step) > PEM_MAX_CANDIDATES:
            raise SpecError(
                f"pem: width * 2^eta = {kept * (1 << step):,} candidates per round is above the limit of "
                f"{PEM_MAX_CANDIDATES:,} (the aggregator evaluates each against every report of its round)"
            )
        object.__setattr__(self, "eta", step)
        object.__setattr__(self, "width", kept)
        self._set_olh(g, p)

    # -- the rounds --------------------------------------------------------
    @property
    def first_length(self) -> int:
        """γ = ⌊log₂ k⌋ + 1 (capped at m): the first round's prefix length, 2^γ > k candidates."""
        return min(self.top_k.bit_length(), self.num_bits)

    @property
    def num_rounds(self) -> int:
        """g = 1 + ⌈(m − γ)/η⌉ groups, one per round."""
        return 1 + -(-(self.num_bits - self.first_length) // self.eta)

    def prefix_length(self, round_: int) -> int:
        """ℓ_i = min(γ + iη, m): the bits group i reports."""
        return min(self.first_length + round_ * self.eta, self.num_bits)

    @property
    def prefix_lengths(self) -> tuple[int, ...]:
        """ℓ_0, …, ℓ_{g−1}."""
        return tuple(self.prefix_length(i) for i in range(self.num_rounds))

    def describe(self) -> Mapping[str, Any]:
        """The derived parameters, for ``ldp spec`` and the docs."""
        return {
            "bits": self.num_bits,
            "first_length": self.first_length,
            "rounds": self.num_rounds,
            "candidates_per_round": self.width * (1 << self.eta),
        }


#: Largest TreeHist width (survivors kept per level).
TREEHIST_MAX_WIDTH = 1 << 16


@dataclasses.dataclass(frozen=True, init=False)
class TreeHist(PrefixHashing):
    """TreeHist: a binary prefix tree walked level by level with a threshold (docs/heavy-hitters.md#treehist).

    Users are split uniformly into m + 1 groups: group ℓ − 1 (ℓ = 1…m)
    reports OLH of its value's first ℓ bits, and the last group the whole
    value. The server keeps, level by level, the children of the survivors
    whose estimate clears a threshold (at most ``width`` of them), then
    estimates the survivors on the last group, whose reports played no part
    in the selection.

    Parameters
    ----------
    epsilon : float
        Privacy claim of the one report.
    max_length : int, default 8
        Longest value, in bytes of UTF-8 (m = 8·max_length bits; m + 1 groups).
    top_k : int, default 10
        Most values output (the survivors with the largest final estimates).
    width : int, optional
        Most survivors per level; 4·top_k by default.
    beta : float, default 0.05
        Probability that any prefix of frequency 0 clears a threshold
        (Bonferroni over the levels and candidates).
    g : int, optional
        OLH hash range; e^ε + 1 (the best integer) by default.
    p : Fraction or str, optional
        Keep probability of the bucket; derived from ``epsilon`` when omitted.

    References
    ----------
    .. [1] R. Bassily, K. Nissim, U. Stemmer, A. Thakurta. "Practical
       locally private heavy hitters". NeurIPS 2017.

    Examples
    --------
    >>> from ldp import TreeHist
    >>> spec = TreeHist(epsilon=2.0, max_length=8, top_k=10)
    >>> spec.mechanism, spec.max_length
    ('treehist', 8)
    """

    mechanism: ClassVar[str] = "treehist"
    #: A spec file may leave ``width`` out (or null): it is 4·top_k.
    json_nullable: ClassVar[frozenset[str]] = frozenset({"width"})

    width: int
    beta: float

    def __init__(
        self,
        epsilon: float,
        max_length: int = 8,
        top_k: int = 10,
        width: int | None = None,
        beta: float = 0.05,
        g: int | None = None,
        p: ProbabilityInput | None = None,
    ) -> None:
        self._set_common(epsilon, max_length, top_k)
        survivors = check_int(
            4 * self.top_k if width is None else width, "width", minimum=1, maximum=TREEHIST_MAX_WIDTH
        )
        if isinstance(beta, bool) or not isinstance(beta, int | float) or not 0 < beta < 1:
            raise SpecError(f"treehist: beta must be a number in (0, 1), got {beta!r}")
        object.__setattr__(self, "width", survivors)
        object.__setattr__(self, "beta", float(beta))
        self._set_olh(g, p)

    @property
    def prefix_lengths(self) -> tuple[int, ...]:
        """1, 2, …, m (the levels), then m again (the final estimation group)."""
        return (*range(1, self.num_bits + 1), self.num_bits)

    @property
    def num_rounds(self) -> int:
        """m + 1 groups."""
        return self.num_bits + 1

    def prefix_length(self, round_: int) -> int:
        """ℓ_i = min(i + 1, m)."""
        return min(round_ + 1, self.num_bits)


#: Heavy-hitter mechanisms: a live view of the spec registry.
HEAVY_HITTER_MECHANISMS: Mapping[str, type[HeavyHitterSpec]] = MechanismView(HeavyHitterSpec)
