"""Client encoders: randomize one value on the device, with the CSPRNG.

Every coin comes from the operating system's CSPRNG (``os.urandom``, read
bit by bit: :mod:`ldp.client.report_bits`) and every probability is sampled
exactly (the spec's probabilities are rationals). RAPPOR's permanent randomized response comes
from a keyed PRF of (client secret, spec fingerprint, value) so it is the
same every time the client reports the same value.

References
----------
.. [1] S. L. Warner. "Randomized response: a survey technique for eliminating
   evasive answer bias". JASA 60(309), 1965.
.. [2] T. Wang, J. Blocki, N. Li, S. Jha. "Locally differentially private
   protocols for frequency estimation". USENIX Security 2017 (GRR, SUE/OUE,
   OLH/BLH).
.. [3] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response". ACM CCS 2014.
.. [4] I. Mironov. "On significance of the least significant bits for
   differential privacy". ACM CCS 2012 (why coins are exact, never floats).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from math import lcm
from typing import TYPE_CHECKING, Any, Protocol, overload

from ldp.client.report_bits import KnuthYao, LaneSampler, draw, uniform
from ldp.client.sampling import PRFStream, expansion, lanes_to_packed, sample_expanded
from ldp.client.state import ClientState, is_cohort
from ldp.errors import ParameterError
from ldp.hashing import LH_SEED_SPACE, lh_bucket
from ldp.plugins import implementation
from ldp.report import Report
from ldp.specs import GRR, LocalHashing, Rappor, Spec, UnaryEncoding

if TYPE_CHECKING:  # the client imports the ledger only when a budget is asked for
    from ldp.client.budgeted import BudgetedEncoder
    from ldp.privacy.budget import Budget, PrivacyLedger

__all__ = [
    "Encoder",
    "GRREncoder",
    "LocalHashingEncoder",
    "RapporEncoder",
    "UnaryEncoder",
    "grr_encoder",
    "local_hashing_encoder",
    "make_encoder",
    "randomized_response_index",
    "rappor_encoder",
    "rr_thresholds",
    "stateless_factory",
    "unary_encoder",
]

_PRR_LABEL = b"ldp-rappor-prr-v1"


class Encoder(Protocol):
    """What every client encoder offers: its spec, and :meth:`encode` (one value, one report).

    Encoders satisfy it structurally (they share no base class); the type
    checker checks each one where it is registered or returned as an encoder.

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import Encoder, make_encoder
    >>> encoder: Encoder = make_encoder(ldp.OUE(domain=("a", "b"), epsilon=1.0))
    >>> encoder.encode("a").spec == encoder.spec.fingerprint
    True
    """

    @property
    def spec(self) -> Spec:
        """The spec the encoder randomizes with (reports carry its fingerprint)."""

    def encode(self, value: Any) -> Report:
        """Randomize ``value`` into a report."""


def rr_thresholds(keep: Fraction, other: Fraction) -> tuple[int, int, int]:
    """Integers (den, keep_num, other_num) with keep = keep_num/den, other = other_num/den."""
    den = lcm(keep.denominator, other.denominator)
    return den, keep.numerator * (den // keep.denominator), other.numerator * (den // other.denominator)


@lru_cache(maxsize=64)
def _response_table(den: int, keep_num: int, other_num: int) -> KnuthYao:
    others = (den - keep_num) // other_num if other_num else 0
    return KnuthYao([(1, Fraction(keep_num, den)), (others, Fraction(other_num, den))])


def randomized_response_index(index: int, den: int, keep_num: int, other_num: int) -> int:
    """Keep ``index`` with probability keep_num/den, else each other value with other_num/den.

    One Knuth–Yao walk over (the value, keep_num/den) and the
    (den − keep_num)/other_num other values of other_num/den each, on the
    CSPRNG's bits (:mod:`ldp.client.report_bits`): about H + 2 bits a report.
    """
    group, other = draw(_response_table(den, keep_num, other_num))
    if group == 0:
        return index
    return other + (other >= index)


def stateless_factory(encoder_class: Callable[[Any], Encoder]) -> Callable[..., Encoder]:
    """An encoder factory ``(spec, state)`` for an encoder class that keeps no client state."""

    def factory(spec: Any, state: ClientState | str | os.PathLike[str] | None = None) -> Encoder:
        return encoder_class(spec)

    factory.__qualname__ = f"stateless {getattr(encoder_class, '__name__', encoder_class)}"
    return factory


class GRREncoder:
    """Generalized randomized response (also BinaryRR); see :class:`ldp.GRR`.

    Keeps the true value with the spec's exact probability p, else reports
    each other value with probability q, from one Knuth–Yao walk on the CSPRNG's bits.

    References
    ----------
    .. [1] S. L. Warner. JASA 60(309), 1965.
    .. [2] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017.

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import GRREncoder
    >>> GRREncoder(ldp.GRR(domain=("a", "b", "c"), epsilon=2.0)).encode("a").value in ("a", "b", "c")
    True
    """

    def __init__(self, spec: GRR):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._domain = spec.domain
        self._den, self._keep, self._other = rr_thresholds(spec.p, spec.q)

    def encode(self, value: Any) -> Report:
        index = self.spec.index_of(value)
        reported = randomized_response_index(index, self._den, self._keep, self._other)
        return Report.of_encoder(self._fingerprint, value=self._domain[reported])


#: The encoder factory of GRR and binary RR (declared in :mod:`ldp.registry`).
grr_encoder = stateless_factory(GRREncoder)


class UnaryEncoder:
    """Unary encoding (SUE, OUE): one-hot vector, each bit randomized; see :class:`ldp.OUE`.

    The true bit is 1 with probability p, every other bit with q; all bits
    are sampled exactly, as runs (:func:`ldp.client.report_bits.sample_lanes`).

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017.
    .. [2] Ú. Erlingsson, V. Pihur, A. Korolova. ACM CCS 2014 (SUE is basic one-time RAPPOR).

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import UnaryEncoder
    >>> len(UnaryEncoder(ldp.OUE(domain=("a", "b", "c"), epsilon=2.0)).encode("a").bits)  # 3 bits in one byte
    1
    """

    def __init__(self, spec: UnaryEncoding):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._width = spec.domain_size
        self._full = (1 << self._width) - 1
        self._lanes = LaneSampler((spec.p, spec.q))

    def encode(self, value: Any) -> Report:
        return Report.of_encoder(self._fingerprint, bits=self.perturb(self.spec.index_of(value)))

    def perturb(self, index: int | None) -> bytes:
        """The packed bits of the one-hot vector of domain index ``index`` perturbed (``None``: the zero vector).

        The zero vector's perturbation (every bit 1 with q) is RS+FD's ``-z``
        fake data (:mod:`ldp.specs.multiattr`).
        """
        one_hot = 0 if index is None else 1 << index
        lanes = self._lanes.sample(self._width, (one_hot, self._full ^ one_hot))
        return lanes_to_packed(lanes, self._width)


#: The encoder factory of SUE and OUE (declared in :mod:`ldp.registry`).
unary_encoder = stateless_factory(UnaryEncoder)


class LocalHashingEncoder:
    """Local hashing (OLH, BLH): random hash from the family, then GRR over [g]; see :class:`ldp.OLH`.

    The hash seed is drawn uniformly from the family on the CSPRNG and sent
    in the clear with the randomized bucket.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017.
    .. [2] R. Bassily, A. Smith. "Local, private, efficient protocols for succinct histograms". STOC 2015.

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import LocalHashingEncoder
    >>> spec = ldp.OLH(domain=("a", "b", "c"), epsilon=2.0)
    >>> report = LocalHashingEncoder(spec).encode("a")
    >>> 0 <= report.value < spec.g and report.seed is not None
    True
    """

    def __init__(self, spec: LocalHashing):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._g = spec.g
        self._den, self._keep, self._other = rr_thresholds(spec.p, spec.q)

    def encode(self, value: Any) -> Report:
        index = self.spec.index_of(value)
        seed = uniform(LH_SEED_SPACE)
        bucket = lh_bucket(seed, index, self._g)
        reported = randomized_response_index(bucket, self._den, self._keep, self._other)
        return Report.of_encoder(self._fingerprint, seed=seed, value=reported)


#: The encoder factory of OLH and BLH (declared in :mod:`ldp.registry`).
local_hashing_encoder = stateless_factory(LocalHashingEncoder)


class RapporEncoder:
    """RAPPOR client: Bloom filter, memoized PRR (keyed PRF), fresh IRR; see :class:`ldp.Rappor`.

    Parameters
    ----------
    spec : Rappor
    state : ClientState
        The client's secret and cohort; persist it (``ClientState.open``) so
        the PRR stays the same across restarts.

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: randomized aggregatable
       privacy-preserving ordinal response". ACM CCS 2014, §3.

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import ClientState, RapporEncoder
    >>> spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")
    >>> encoder = RapporEncoder(spec, ClientState.new(spec))
    >>> encoder.permanent_bits("x") == encoder.permanent_bits("x")  # the memoized PRR
    True
    >>> len(encoder.encode("x").bits)
    4
    """

    def __init__(self, spec: Rappor, state: ClientState):
        if state.spec != spec.fingerprint:
            raise ParameterError(f"client state is for spec {state.spec}, not {spec.fingerprint}")
        cohort = state.cohort  # (its reports skip Report's checks: Report.of_encoder)
        if not is_cohort(cohort, spec.num_cohorts):
            raise ParameterError(f"client state's cohort is {cohort!r}, outside [0, {spec.num_cohorts})")
        self.spec = spec
        self.state = state
        self._fingerprint = spec.fingerprint.encode("ascii")
        self._fingerprint_text = spec.fingerprint
        self._width = spec.num_bits
        self._full = (1 << self._width) - 1
        # exact binary expansions of the four probabilities, computed once
        self._prr_one = expansion(1 - spec.f / 2)
        self._prr_zero = expansion(spec.f / 2)
        self._irr = LaneSampler((spec.q, spec.p))  # the IRR: P[S=1] = q where B' = 1, p where B' = 0

    def permanent_bits(self, value: Any) -> int:
        """B', the memoized PRR of ``value`` as lanes (bit i = Bloom bit i)."""
        true_bits = 0
        for position in self.spec.bit_positions(value, self.state.cohort):
            true_bits |= 1 << position
        if self.spec.f == 0:
            return true_bits
        stream = PRFStream(_PRR_LABEL, self.state.secret, self._fingerprint, self.spec.memo_key(value))
        # P[B'=1] = 1 − f/2 where B = 1 and f/2 where B = 0: forced to 1 or 0 w.p. f/2 each.
        return sample_expanded(
            self._width, ((true_bits, *self._prr_one), (self._full ^ true_bits, *self._prr_zero)), stream
        )

    def encode(self, value: Any) -> Report:
        prr = self.permanent_bits(value)
        irr = self._irr.sample(self._width, (prr, self._full ^ prr))
        return Report.of_encoder(
            self._fingerprint_text, cohort=self.state.cohort, bits=lanes_to_packed(irr, self._width)
        )


def rappor_encoder(spec: Rappor, state: ClientState | str | os.PathLike[str] | None = None) -> Encoder:
    """RAPPOR's encoder: the client's persistent state (opened or created at a path), or a fresh one in memory."""
    if state is None:
        state = ClientState.new(spec)
    elif not isinstance(state, ClientState):
        state = ClientState.open(state, spec)
    return RapporEncoder(spec, state)


@overload
def make_encoder(
    spec: Spec,
    *,
    state: ClientState | str | os.PathLike[str] | None = None,
    ledger: PrivacyLedger | str | os.PathLike[str],
    budget: Budget | None = None,
) -> BudgetedEncoder: ...
@overload
def make_encoder(
    spec: Spec,
    *,
    state: ClientState | str | os.PathLike[str] | None = None,
    ledger: None = None,
    budget: Budget,
) -> BudgetedEncoder: ...
@overload
def make_encoder(
    spec: Spec,
    *,
    state: ClientState | str | os.PathLike[str] | None = None,
    ledger: None = None,
    budget: None = None,
) -> Encoder: ...
def make_encoder(
    spec: Spec,
    *,
    state: ClientState | str | os.PathLike[str] | None = None,
    ledger: PrivacyLedger | str | os.PathLike[str] | None = None,
    budget: Budget | None = None,
) -> Encoder | BudgetedEncoder:
    """The client encoder for ``spec``.

    With a ``ledger`` or a ``budget`` the encoder is a
    :class:`~ldp.client.BudgetedEncoder` (it has ``remaining``, ``spent``
    and ``committed``); the type checker knows it from the arguments. With
    only a ``state`` path it is budgeted too once that client's ledger
    exists, which only a run-time ``isinstance`` can tell.

    Parameters
    ----------
    spec : Spec
        Any frequency spec or :class:`ldp.Rappor`.
    state : ClientState or path, optional
        The client's persistent state, or the path of its state file. RAPPOR
        keeps its secret and cohort there (the file is created when missing);
        without it the encoder is a fresh client with a new secret and cohort,
        kept in memory only. For every spec, the state's path locates the
        client's privacy ledger beside it (``client.json``:
        ``client.ledger.json``, :func:`ldp.client.budgeted.client_ledger`):
        once that ledger exists, every ``encode`` is charged to it and its
        stored budget holds, with or without ``ledger`` and ``budget``.
    ledger : PrivacyLedger or path, optional
        The client's privacy ledger (:mod:`ldp.privacy.budget`), or the path of
        its file (created with ``budget`` when missing). Every ``encode`` is
        then charged to it and refused with :class:`~ldp.errors.BudgetExceededError`,
        emitting nothing, once the budget would be exceeded. Default: the
        ledger beside ``state``'s file. It cannot be another ledger than one
        that exists beside the state (that one would go uncharged).
    budget : Budget, optional
        The budget of a new ledger file. A budget is set once, when the
        ledger is created: one that differs from an existing ledger's is a
        :class:`~ldp.errors.StateError`.

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import make_encoder
    >>> spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    >>> report = make_encoder(spec).encode("b")  # coins from the operating system's CSPRNG
    >>> report.spec == spec.fingerprint and report.value in spec.domain
    True

    With a budget, the encoder charges a ledger and refuses once it is spent:

    >>> import tempfile, pathlib
    >>> from ldp.privacy import Budget
    >>> ledger = pathlib.Path(tempfile.mkdtemp()) / "ledger.json"
    >>> budgeted = make_encoder(spec, ledger=ledger, budget=Budget(epsilon=2.0))
    >>> budgeted.encode("a").spec == spec.fingerprint, budgeted.remaining
    (True, 1.0)
    """
    encoder = _unbudgeted_encoder(spec, state)
    state_file = state.path if isinstance(state, ClientState) else state
    if state_file is None and ledger is None and budget is None:
        return encoder
    return _charged(encoder, state_file, ledger, budget)


def _charged(
    encoder: Encoder,
    state_file: str | os.PathLike[str] | None,
    ledger: PrivacyLedger | str | os.PathLike[str] | None,
    budget: Budget | None,
) -> Encoder | BudgetedEncoder:
    """``encoder`` charging the client's ledger (given, or beside its state file), or as is when it has none."""
    from ldp.client.budgeted import BudgetedEncoder, client_ledger, ledger_beside, open_ledger

    if ledger is None:
        found = None if state_file is None else client_ledger(state_file, budget)
        if found is None:
            if budget is not None:
                raise ParameterError(
                    "a budget needs a ledger (pass ledger=PATH or a PrivacyLedger, or the client's state file: "
                    "its ledger is kept beside it)"
                )
            return encoder
        return BudgetedEncoder(encoder, found)
    opened = open_ledger(ledger, budget)
    if state_file is not None:
        beside = ledger_beside(state_file)
        if os.path.lexists(beside) and (opened.path is None or not _same_file(opened.path, beside)):
            raise ParameterError(
                f"the client state {str(state_file)!r} has its privacy ledger {str(beside)!r}; every report of "
                "the client is charged to that one: pass it as the ledger, or none"
            )
    return BudgetedEncoder(encoder, opened)


def _same_file(a: os.PathLike, b: os.PathLike) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _unbudgeted_encoder(spec: Spec, state: ClientState | str | os.PathLike[str] | None) -> Encoder:
    """The mechanism's own encoder (no budget), from the plug-in registry."""
    return implementation(spec, "encoder")(spec, state)
