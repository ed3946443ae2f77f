"""Which sweep ``ldp simulate`` runs, and the combinations it refuses.

A sweep is either *frequency* (a categorical population; frequency oracles and
RAPPOR, :func:`ldp.simulations.run`) or *numeric* (numbers on [low, high];
mean mechanisms, :func:`ldp.simulations.numeric.run_numeric`). Every
mechanism/distribution pairing is honoured by the sweep it belongs to or
refused with a one-line error naming both: none is silently replaced (``-m
duchi --distribution zipf`` used to run beta(2, 5)). Options the chosen sweep
would ignore are refused the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ldp.errors import ParameterError
from ldp.specs.numeric import NUMERIC_MECHANISMS

__all__ = [
    "FREQUENCY",
    "FREQUENCY_DEFAULT",
    "NUMERIC",
    "NUMERIC_DEFAULT",
    "check_sweep_options",
    "sweep_kind",
]

FREQUENCY = "frequency"
NUMERIC = "numeric"

#: Default population of each sweep.
FREQUENCY_DEFAULT = "zipf"
NUMERIC_DEFAULT = "beta"

#: Options only one kind of sweep reads.
_ONLY = {
    FREQUENCY: (
        "--domain-size",
        "--mode",
        "--top-k",
        "--client-sample",
        "--rappor-bits",
        "--rappor-hashes",
        "--rappor-cohorts",
        "--rappor-f",
        "--preset",
        "--small",
        "--cases",
    ),
    NUMERIC: ("--delta", "--grid"),
}


def _names(mechanisms: Any) -> list[str]:
    if mechanisms is None:
        return []
    items = mechanisms.split(",") if isinstance(mechanisms, str) else list(mechanisms)
    return [str(n).strip().lower().replace("_", "-") for n in items if str(n).strip()]


def _distributions(kind: str) -> tuple[str, ...]:
    from ldp.simulations.numeric import NUMERIC_DISTRIBUTIONS
    from ldp.simulations.populations import DISTRIBUTIONS

    return NUMERIC_DISTRIBUTIONS if kind == NUMERIC else tuple(DISTRIBUTIONS)


def sweep_kind(
    mechanisms: Any, distribution: str | None, *, numeric_range: bool = False, data: bool = False
) -> str:
    """:data:`NUMERIC` or :data:`FREQUENCY`, after checking the mechanisms, the distribution and the range agree.

    Parameters
    ----------
    mechanisms : comma-separated str or list, optional
        The requested mechanisms (None: the default of the sweep).
    distribution : str, optional
        The requested population (``name[:params]``); None: the sweep's default.
    numeric_range : bool
        Whether ``--low``/``--high`` were given (they select a numeric sweep).
    data : bool
        Whether a ``--data`` column is the population (then no distribution applies).

    Raises
    ------
    ParameterError
        Numeric and frequency mechanisms mixed; a distribution of the other kind (or unknown);
        a distribution together with ``--data``; ``--low``/``--high`` for frequency oracles.
    """
    names = _names(mechanisms)
    numeric = [n for n in names if n in NUMERIC_MECHANISMS]
    frequency = [n for n in names if n not in NUMERIC_MECHANISMS and n != "auto"]
    if numeric and frequency:
        raise ParameterError(
            f"--mechanism mixes numeric mechanisms ({', '.join(numeric)}) with frequency oracles "
            f"({', '.join(frequency)}); simulate them separately"
        )
    family = None if distribution is None else str(distribution).partition(":")[0].strip().lower()
    if numeric:
        kind, named = NUMERIC, ", ".join(numeric)
    elif frequency:
        kind, named = FREQUENCY, ", ".join(frequency)
    else:  # auto or the default mechanisms: the range or a numeric-only population decides
        numeric_only = set(_distributions(NUMERIC)) - set(_distributions(FREQUENCY))
        kind = NUMERIC if numeric_range or family in numeric_only else FREQUENCY
        named = "auto" if names else "the default mechanisms"
    if kind == FREQUENCY and numeric_range:
        raise ParameterError(
            f"--low/--high apply to numeric mechanisms ({', '.join(NUMERIC_MECHANISMS)}), "
            f"not to {named}, which take categorical values"
        )
    if family is None:
        return kind
    if data:
        raise ParameterError(
            f"--distribution {distribution!r} does not apply with --data: "
            "the population is the column's values"
        )
    known = _distributions(kind)
    if family not in known:
        other = FREQUENCY if kind == NUMERIC else NUMERIC
        what = "numbers" if kind == NUMERIC else "categorical values"
        hint = f" ({family} is a {other} population)" if family in _distributions(other) else ""
        raise ParameterError(
            f"--distribution {distribution!r} does not apply to {named} ({kind} sweep, "
            f"{what}): use {', '.join(known)}{hint}"
        )
    return kind


def check_sweep_options(kind: str, given: Iterable[str]) -> None:
    """Refuse options (CLI flags, explicitly given) that a ``kind`` sweep would silently ignore."""
    other = NUMERIC if kind == FREQUENCY else FREQUENCY
    ignored = [flag for flag in given if flag in _ONLY[other]]
    if ignored:
        verb = "applies" if len(ignored) == 1 else "apply"
        raise ParameterError(f"{', '.join(ignored)} {verb} to {other} sweeps only, not to this {kind} sweep")
