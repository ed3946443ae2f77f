"""Which mechanisms a simulation can run, and how each is built from (name, ε, domain).

Every frequency oracle of :mod:`ldp.specs` is built with its own calibrated
constructor; ``auto`` resolves to :func:`ldp.best_frequency_mechanism` at each
(ε, D); ``rappor`` is a Bloom-filter RAPPOR whose single-report ε (ε₁) is
calibrated to the requested ε (:func:`rappor_for_epsilon`).

:data:`MECHANISM_KINDS` maps every name to a *kind* (``"frequency"``,
``"rappor"`` or ``"heavy-hitter"``), read from the registry (:mod:`ldp.registry`)
each time it is used, so an installed package's mechanism registered after
this module was imported is known too. The runner dispatches on the kind to
the count sampler (:mod:`ldp.simulations.fast`), the faithful path and the
metrics; numeric mechanisms have their own runner
(:func:`ldp.simulations.run_numeric`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

from ldp.errors import ParameterError, SpecError
from ldp.specs import (
    FREQUENCY_MECHANISMS,
    HEAVY_HITTER_MECHANISMS,
    Rappor,
    best_frequency_mechanism,
    frequency_spec,
)

__all__ = [
    "DEFAULT_MECHANISMS",
    "MECHANISM_KINDS",
    "RapporSettings",
    "accepts_epsilon_inf",
    "build_spec",
    "check_mechanisms",
    "mechanism_kind",
    "rappor_for_epsilon",
    "resolve_name",
]


class _MechanismKinds(Mapping[str, str]):
    """name -> kind of every mechanism a simulation runs, read from the registry at each use.

    The frequency oracles and ``auto``, then ``rappor``, then the heavy
    hitters, each in registry order; a mechanism registered after this module
    was imported (an installed package's, through its entry point) is included.
    """

    def _table(self) -> dict[str, str]:
        kinds = {**dict.fromkeys(FREQUENCY_MECHANISMS, "frequency"), "auto": "frequency", "rappor": "rappor"}
        kinds.update(dict.fromkeys(HEAVY_HITTER_MECHANISMS, "heavy-hitter"))
        return kinds

    def __getitem__(self, name: str) -> str:
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return f"MECHANISM_KINDS({self._table()!r})"


#: name -> kind (a live, read-only view of the registry); the runner dispatches on the kind.
MECHANISM_KINDS: Mapping[str, str] = _MechanismKinds()

#: Mechanisms of the default sweep (``binary-rr`` is added for two-value domains).
DEFAULT_MECHANISMS: tuple[str, ...] = ("grr", "sue", "oue", "olh", "blh")


@dataclasses.dataclass(frozen=True)
class RapporSettings:
    """The RAPPOR parameters a simulation keeps fixed while ε varies.

    Parameters
    ----------
    num_bits, num_hashes, num_cohorts : int
        k, h, m (Bloom filter size, hashes per value, cohorts).
    f : Fraction
        Permanent randomized response. With one report per client, only
        P[S=1|B] matters; f > 0 caps the reachable ε₁ below ε∞.
    hash : str
        ``"mmh3"`` or ``"md5"`` (Google's hashing).

    Examples
    --------
    >>> from ldp.simulations import RapporSettings, run
    >>> settings = RapporSettings(num_bits=64, num_cohorts=8)
    >>> len(run(mechanisms="rappor", epsilons=[4.0], users=[2_000], domain_size=8, repeats=1, seed=1, rappor=settings))
    1
    """

    num_bits: int = 32
    num_hashes: int = 2
    num_cohorts: int = 64
    f: Fraction = Fraction(0)
    hash: str = "mmh3"


def rappor_for_epsilon(
    epsilon: float, settings: RapporSettings = RapporSettings(), *, epsilon_inf: float | None = None
) -> Rappor:
    """Bloom RAPPOR whose single-report ε₁ is at most ``epsilon`` (and within 1e-9 of it).

    Uses the symmetric instantaneous response p = 1 − q, so that
    q* = P[S=1|B=1] = 1 − P[S=1|B=0] and ε₁ = 2h·ln(q*/(1 − q*))
    (docs/mechanisms.md#rappor-epsilon); hence q* = 1/(1 + e^(−ε/(2h))) and q = (q* − f/2)/(1 − f). q is
    rounded down on a 2^-40 grid (more privacy) and the achieved ε₁ is checked
    from the spec's exact probabilities.

    With ``epsilon_inf``, the permanent randomized response ``f`` of
    ``settings`` is replaced by the one whose ε∞ = 2h·ln((1 − f/2)/(f/2)) is
    at most ``epsilon_inf``: f = 2/(1 + e^(ε∞/(2h))), rounded up on the 2^-40
    grid (more privacy) and checked from the spec's exact ratio. This is how
    ``ldp simulate --rounds`` gives RAPPOR its share of a lifetime budget.

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014.

    Examples
    --------
    >>> from ldp.simulations import RapporSettings, rappor_for_epsilon
    >>> spec = rappor_for_epsilon(1.0, RapporSettings(num_bits=64))
    >>> spec.num_bits, round(spec.epsilon, 9)
    (64, 1.0)
    >>> memo = rappor_for_epsilon(1.0, epsilon_inf=4.0)
    >>> memo.epsilon_inf <= 4.0, round(memo.epsilon_inf, 6)
    (True, 4.0)
    """
    eps = float(epsilon)
    if not math.isfinite(eps) or eps <= 0:
        raise SpecError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    h = settings.num_hashes
    f = Fraction(settings.f) if epsilon_inf is None else _rappor_f(epsilon_inf, eps, h, settings)
    q_star = 1.0 / (1.0 + math.exp(-eps / (2 * h)))
    q_float = (q_star - float(f) / 2) / (1 - float(f))
    if q_float >= 1:
        raise SpecError(f"rappor with f={f} cannot reach epsilon_one={eps:g} with h={h}; lower f or epsilon")
    grid = 1 << 40
    q = Fraction(math.floor(q_float * grid), grid)
    while True:
        if q <= Fraction(1, 2):
            raise SpecError(f"epsilon={eps:g} is too small for rappor (h={h}) at 2^-40 precision")
        spec = Rappor(
            num_bits=settings.num_bits,
            num_hashes=h,
            num_cohorts=settings.num_cohorts,
            f=f,
            p=1 - q,
            q=q,
            hash=settings.hash,
        )
        if spec.epsilon_one <= eps:
            return spec
        q -= Fraction(1, grid)


def _rappor_f(epsilon_inf: float, epsilon: float, h: int, settings: RapporSettings) -> Fraction:
    """The smallest f on the 2^-40 grid whose PRR gives ε∞ <= ``epsilon_inf`` (exact ratio checked)."""
    eps_inf = float(epsilon_inf)
    if not math.isfinite(eps_inf) or eps_inf <= epsilon:
        raise ParameterError(
            f"epsilon_inf must be a finite number > epsilon ({epsilon:g}) for rappor, got {epsilon_inf!r}"
        )
    grid = 1 << 40
    f = Fraction(math.ceil(2.0 / (1.0 + math.exp(eps_inf / (2 * h))) * grid), grid)
    while True:
        probe = Rappor(
            num_bits=settings.num_bits,
            num_hashes=h,
            num_cohorts=settings.num_cohorts,
            f=f,
            p=Fraction(1, 4),
            q=Fraction(3, 4),
            hash=settings.hash,
        )
        if probe.epsilon_inf <= eps_inf:
            return f
        f += Fraction(1, grid)


def accepts_epsilon_inf(name: str) -> bool:
    """Whether :func:`build_spec` can set mechanism ``name``'s ε∞ (a memoizing spec whose constructor takes it, or RAPPOR)."""
    kind = mechanism_kind(name)
    if kind == "rappor":
        return True
    if kind != "frequency" or name == "auto":
        return False
    import inspect

    return "epsilon_inf" in inspect.signature(FREQUENCY_MECHANISMS[name]).parameters


def mechanism_kind(name: str) -> str:
    """The kind of mechanism ``name`` (raises a clear error for unknown names)."""
    try:
        return MECHANISM_KINDS[name]
    except KeyError:
        from ldp.specs.numeric import NUMERIC_MECHANISMS

        if name in NUMERIC_MECHANISMS:
            raise SpecError(
                f"{name!r} is a numeric mechanism: simulate it with ldp.simulations.run_numeric"
            ) from None
        raise SpecError(f"unknown mechanism {name!r}; known: {', '.join(MECHANISM_KINDS)}") from None


def _normalize(name: str) -> str:
    return str(name).strip().lower().replace("_", "-")


def check_mechanisms(names: Sequence[str] | str | None, domain_size: int) -> list[str]:
    """Validate mechanism names for a domain of ``domain_size`` values.

    ``None`` gives :data:`DEFAULT_MECHANISMS` (plus ``binary-rr`` when D = 2).
    """
    if names is None:
        chosen = list(DEFAULT_MECHANISMS)
        if domain_size == 2:
            chosen.insert(0, "binary-rr")
        return chosen
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    chosen = []
    for raw in names:
        name = _normalize(raw)
        mechanism_kind(name)
        if name == "binary-rr" and domain_size != 2:
            raise SpecError(f"binary-rr needs a domain of exactly 2 values, the simulation has {domain_size}")
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise ParameterError("give at least one mechanism")
    return chosen


def resolve_name(name: str, epsilon: float, domain_size: int) -> str:
    """The concrete mechanism ``name`` stands for (``auto`` → the best by theory)."""
    if name == "auto":
        return best_frequency_mechanism(epsilon, domain_size)
    return name


def build_spec(
    name: str,
    epsilon: float,
    domain: Sequence[Any],
    *,
    rappor: RapporSettings = RapporSettings(),
    top_k: int = 10,
    epsilon_inf: float | None = None,
):
    """Spec of mechanism ``name`` at ``epsilon`` over ``domain`` (RAPPOR: candidates = domain; heavy hitters: top-k).

    ``epsilon_inf`` sets the ε∞ of a mechanism that :func:`accepts_epsilon_inf`
    (``epsilon`` is then its ε₁, the ε of one report).
    """
    kind = mechanism_kind(name)
    if epsilon_inf is not None and not accepts_epsilon_inf(name):
        raise ParameterError(f"{name} takes no epsilon_inf (it is not a memoizing mechanism with one)")
    if kind == "rappor":
        return rappor_for_epsilon(epsilon, rappor, epsilon_inf=epsilon_inf)
    if kind == "heavy-hitter":
        from ldp.simulations.heavy_hitters import heavy_hitter_spec

        return heavy_hitter_spec(name, epsilon, domain, top_k)
    if epsilon_inf is not None:
        memoizing: Any = FREQUENCY_MECHANISMS[name]  # its constructor takes epsilon_inf (accepts_epsilon_inf)
        return memoizing(domain=tuple(domain), epsilon=epsilon, epsilon_inf=epsilon_inf)
    return frequency_spec(resolve_name(name, epsilon, len(domain)), domain, epsilon)
