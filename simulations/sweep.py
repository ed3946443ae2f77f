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
    "KEY_VALUE",
    "NUMERIC",
    "NUMERIC_DEFAULT",
    "RANGE",
    "SWEEP_ONLY",
    "check_sweep_options",
    "sweep_kind",
]

FREQUENCY = "frequency"
NUMERIC = "numeric"
#: Mechanisms whose inputs are sets of key-value pairs (spec ``report_kind`` "key-value").
KEY_VALUE = "key-value"
#: Range-query mechanisms (range and quantile answers over an ordered domain).
RANGE = "range"

#: Default population of each sweep.
FREQUENCY_DEFAULT = "zipf"
NUMERIC_DEFAULT = "beta"

#: Parameters only one kind of sweep reads (Python names; the CLI spells them as its flags).
SWEEP_ONLY: dict[str, tuple[str, ...]] = {
    FREQUENCY: (
        "domain_size",
        "shuffle_delta",
        "mode",
        "top_k",
        "client_sample",
        "rappor.num_bits",
        "rappor.num_hashes",
        "rappor.num_cohorts",
        "rappor.f",
        "preset",
        "small",
        "cases",
    ),
    NUMERIC: ("delta", "grid"),
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
        Whether ``low``/``high`` were given (they select a numeric sweep).
    data : bool
        Whether a ``data`` column is the population (then no distribution applies).

    Raises
    ------
    ParameterError
        Numeric and frequency mechanisms mixed; a distribution of the other kind (or unknown);
        a distribution together with ``data``; ``low``/``high`` for frequency oracles. The errors
        name the parameters (:meth:`~ldp.errors.ParameterError.naming`).
    """
    names = _names(mechanisms)
    from ldp.simulations.key_value import KEY_VALUE_DISTRIBUTIONS, is_key_value

    key_value = [n for n in names if is_key_value(n)]
    if key_value:
        others = [n for n in names if n not in key_value]
        if others:
            raise ParameterError.naming(
                f"{{mechanisms}} mixes key-value mechanisms ({', '.join(key_value)}) with others "
                f"({', '.join(others)}); simulate them separately",
                mechanisms=mechanisms,
            )
        family = None if distribution is None else str(distribution).partition(":")[0].strip().lower()
        if data or numeric_range:
            raise ParameterError.naming(
                "{data} and {low}/{high} do not apply to key-value mechanisms (a synthetic population of pairs)",
                data=None,
                low=None,
                high=None,
            )
        if family is not None and family not in KEY_VALUE_DISTRIBUTIONS:
            raise ParameterError.naming(
                f"{{distribution=}} does not apply to key-value mechanisms: use {', '.join(KEY_VALUE_DISTRIBUTIONS)}",
                distribution=distribution,
            )
        return KEY_VALUE
    from ldp.simulations.range_sweep import is_range

    ranged = [n for n in names if is_range(n)]
    if ranged:
        others = [n for n in names if n not in ranged]
        if others:
            raise ParameterError.naming(
                f"{{mechanisms}} mixes range mechanisms ({', '.join(ranged)}) with others "
                f"({', '.join(others)}); simulate them separately",
                mechanisms=mechanisms,
            )
        if data or numeric_range:
            raise ParameterError.naming(
                "{data} and {low}/{high} do not apply to range mechanisms (a synthetic ordered population)",
                data=None,
                low=None,
                high=None,
            )
        family = None if distribution is None else str(distribution).partition(":")[0].strip().lower()
        if family is not None and family not in _distributions(FREQUENCY):
            raise ParameterError.naming(
                f"{{distribution=}} does not apply to range mechanisms: use {', '.join(_distributions(FREQUENCY))}",
                distribution=distribution,
            )
        return RANGE
    numeric = [n for n in names if n in NUMERIC_MECHANISMS]
    frequency = [n for n in names if n not in NUMERIC_MECHANISMS and n != "auto"]
    if numeric and frequency:
        raise ParameterError.naming(
            f"{{mechanisms}} mixes numeric mechanisms ({', '.join(numeric)}) with frequency oracles "
            f"({', '.join(frequency)}); simulate them separately",
            mechanisms=mechanisms,
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
        raise ParameterError.naming(
            f"{{low}}/{{high}} apply to numeric mechanisms ({', '.join(NUMERIC_MECHANISMS)}), "
            f"not to {named}, which take categorical values",
            low=None,
            high=None,
        )
    if family is None:
        return kind
    if data:
        raise ParameterError.naming(
            "{distribution=} does not apply with {data}: the population is the column's values",
            distribution=distribution,
            data=None,
        )
    known = _distributions(kind)
    if family not in known:
        other = FREQUENCY if kind == NUMERIC else NUMERIC
        what = "numbers" if kind == NUMERIC else "categorical values"
        hint = f" ({family} is a {other} population)" if family in _distributions(other) else ""
        raise ParameterError.naming(
            f"{{distribution=}} does not apply to {named} ({kind} sweep, {what}): use {', '.join(known)}{hint}",
            distribution=distribution,
        )
    return kind


def check_sweep_options(kind: str, given: Iterable[str]) -> None:
    """Refuse parameters (explicitly given, Python names of :data:`SWEEP_ONLY`) that a ``kind`` sweep would ignore.

    Raises
    ------
    ParameterError
        Naming (:meth:`~ldp.errors.ParameterError.naming`) every such parameter, in the order given.
    """
    if kind in (
        KEY_VALUE,
        RANGE,
    ):  # read epsilon, users, domain_size, distribution, repeats, seed (key-value: mode)
        read = ("domain_size", "mode") if kind == KEY_VALUE else ("domain_size",)
        ignored = [n for n in given if n not in read and n in SWEEP_ONLY[FREQUENCY] + SWEEP_ONLY[NUMERIC]]
        if ignored:
            names = ", ".join("{" + name + "}" for name in ignored)
            raise ParameterError.naming(
                f"{names} do(es) not apply to a {kind} sweep", **dict.fromkeys(ignored)
            )
        return
    other = NUMERIC if kind == FREQUENCY else FREQUENCY
    ignored = [name for name in given if name in SWEEP_ONLY[other]]
    if ignored:
        verb = "applies" if len(ignored) == 1 else "apply"
        names = ", ".join("{" + name + "}" for name in ignored)
        raise ParameterError.naming(
            f"{names} {verb} to {other} sweeps only, not to this {kind} sweep", **dict.fromkeys(ignored)
        )
