"""A small example spec of every registered mechanism, derived from its declaration alone.

The conformance suite (``tests/conformance``) runs over :func:`ldp.registry.declarations`:
the built-in mechanisms and those of installed packages (entry-point group
``ldp.mechanisms``). Nothing here names a mechanism: each example is built
from the spec class's constructor, filling its required parameters from
:data:`REQUIRED` (a domain, ε, δ) and shrinking the size parameters it has
(:data:`SMALL`), so a mechanism is covered the moment it is registered. A
spec whose constructor needs a parameter of another name fails
:func:`example_spec` with a message naming it.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from ldp.errors import ParameterError
from ldp.registry import MechanismDeclaration, declarations

DOMAIN = ("a", "b", "c", "d", "e")

#: Values of required constructor parameters, by name.
REQUIRED: dict[str, Any] = {"domain": DOMAIN, "epsilon": 1.0, "delta": 1e-5}

#: Size parameters made small when a spec has them (prefix length, top-k). Sketches keep their default
#: k = m = 1,024: their estimates are unbiased over the draw of the hash functions, not for one salt
#: (docs/mechanisms.md), and a small sketch's collisions would bias every fixed-salt run by about
#: sqrt(sum of n_x'^2 / (k m)), far beyond the repeated-run test's resolution at k = m = 16.
SMALL: dict[str, Any] = {"max_length": 2, "top_k": 3}

#: Parameters a spec may leave as None but then refuse (a spec whose privacy is set by its
#: probabilities, e.g. RAPPOR's f, p, q and Bloom filter), tried when the first construction fails.
UNSET: dict[str, Any] = {
    "num_bits": 16,
    "num_hashes": 2,
    "num_cohorts": 4,
    "f": "1/4",
    "p": "1/4",
    "q": "3/4",
}


def mechanism_declarations() -> list[MechanismDeclaration]:
    """Every registered mechanism: built-in, then installed packages' (what the suite parametrizes over)."""
    return list(declarations())


def _parameters(cls: type) -> dict[str, inspect.Parameter]:
    return {
        name: p
        for name, p in inspect.signature(cls).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


def example_spec(
    decl: MechanismDeclaration, required: Mapping[str, Any] = REQUIRED, small: Mapping[str, Any] = SMALL
) -> Any:
    """A small spec of ``decl``'s mechanism (see the module docstring for how it is derived).

    A composite spec (whose parts are specs of their own, so its constructor
    needs more than :data:`REQUIRED`) gives a classmethod ``example`` taking
    the required values it names; the example is what it returns.
    ``required`` and ``small`` replace :data:`REQUIRED` and :data:`SMALL`
    (``benchmarks/bench_sizing.py`` derives a typical spec, not a small one,
    with a larger domain and no shrinking).
    """
    cls = decl.load_spec()
    example = getattr(cls, "example", None)
    if callable(example):
        wanted = inspect.signature(example).parameters
        return example(**{n: v for n, v in required.items() if n in wanted})
    params = _parameters(cls)
    missing = [n for n, p in params.items() if p.default is p.empty and n not in required]
    if missing:
        raise AssertionError(
            f"{decl.name}: cannot derive an example spec: required parameter(s) {', '.join(missing)} "
            f"are not among {', '.join(required)}"
        )
    base = {n: required[n] for n, p in params.items() if p.default is p.empty}
    base |= {n: v for n, v in small.items() if n in params}
    attempts = [base]
    if "domain" in base:  # a mechanism of a two-value domain (binary RR)
        attempts.append(base | {"domain": DOMAIN[:2]})
    unset = {n: v for n, v in UNSET.items() if n in params and params[n].default is None}
    attempts += [attempt | unset for attempt in list(attempts)] if unset else []
    errors = []
    for kwargs in attempts:
        try:
            return cls(**kwargs)
        except ParameterError as exc:
            errors.append(f"{kwargs}: {exc}")
    raise AssertionError(f"{decl.name}: no example spec could be built: " + "; ".join(errors))


def example_values(spec: Any, n: int) -> list:
    """``n`` input values for ``spec`` with unequal counts (the first value most frequent)."""
    from conftest import sample_values

    pool = sample_values(spec, 4 * n)
    if spec.report_kind == "numeric":
        return pool[::4][:n]
    if hasattr(spec, "example_inputs"):  # the spec's own examples (unhashable inputs, unequal counts already)
        return list(spec.example_inputs(n))
    # values cycle over the pool's distinct values; repeat the first one to make the counts unequal
    distinct = list(dict.fromkeys(pool))
    out = []
    i = 0
    while len(out) < n:
        out.append(distinct[0] if i % 3 == 0 else distinct[i % len(distinct)])
        i += 1
    return out


def table_truth(
    spec: Any, values: list, cohorts: Any, table: Any
) -> tuple[str, np.ndarray, np.ndarray] | None:
    """What the estimate table estimates, for reports of ``values``: (estimate column, row mask, truth).

    Read from the table's columns, not from the mechanism's name: a ``mean``
    (the values' mean); a ``value`` per row (its count among ``values``); a
    ``cohort`` and ``bit`` per row (the reports of that cohort whose value's
    ``spec.bit_positions(value, cohort)`` include the bit). None when the
    table has none of these. A spec whose inputs are not domain values (sets
    of key-value pairs) says what each row's ``estimate`` counts with
    ``spec.value_counts(values)`` (value → count).
    """
    if {"attribute", "statistic"} <= set(table.columns) and hasattr(spec, "record"):
        return "estimate", np.ones(len(table), bool), _record_truth(spec, values, table)
    if "value" in table.columns and hasattr(spec, "value_counts"):
        per_value = spec.value_counts(values)
        truth = np.array([per_value.get(v, 0) for v in table["value"]], dtype=float)
        return "estimate", np.ones(len(table), bool), truth
    if "mean" in table.columns:
        return "mean", np.ones(len(table), bool), np.full(len(table), float(np.mean(values)))
    if "value" in table.columns:
        counts = Counter(values)
        truth = np.array([counts.get(v, 0) for v in table["value"]], dtype=float)
        return "estimate", np.ones(len(table), bool), truth
    if {"cohort", "bit"} <= set(table.columns) and hasattr(spec, "bit_positions") and cohorts is not None:
        ones: Counter = Counter()
        for value, cohort in zip(values, np.asarray(cohorts).tolist()):
            ones.update((cohort, bit) for bit in spec.bit_positions(value, cohort))
        truth = np.array([ones[(c, b)] for c, b in zip(table["cohort"], table["bit"])], dtype=float)
        return "estimate", np.ones(len(table), bool), truth
    return None


def _record_truth(spec: Any, values: list, table: Any) -> np.ndarray:
    """Each row's truth in a table of several attributes (a composite spec's records).

    A ``count`` row counts its ``value`` among its attribute's inputs, a
    ``mean`` row is the mean of them; ``spec.record(value)`` gives a record's
    attribute values in the order of ``spec.names``.
    """
    records = [spec.record(v) for v in values]
    columns = {name: [r[j] for r in records] for j, name in enumerate(spec.names)}
    truth = []
    for attribute, statistic, value in zip(table["attribute"], table["statistic"], table["value"]):
        cells = columns[attribute]
        truth.append(float(np.mean(cells)) if statistic == "mean" else float(sum(c == value for c in cells)))
    return np.asarray(truth, dtype=float)
