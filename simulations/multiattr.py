"""``ldp simulate --spec RECORDS.json --data FILE``: SMP, SPL and RS+FD compared on a multi-column file.

The population is the file's records (one column per attribute of the
multi-attribute spec; rows with a missing cell are dropped). For every ε
and method, the spec's attributes are recalibrated at that record-level ε
(:func:`recalibrated`) and ``repeats`` seeded collections run through the
real client and aggregator (:func:`~ldp.client.multiattr.encode_records`,
:class:`~ldp.aggregator.multiattr.MultiAttributeAccumulator`). Per attribute
the table gives the measured mean squared error of its estimates (a
categorical attribute's frequencies, averaged over its values; a numeric
attribute's mean) next to the variance the aggregator reports (the mean of
its squared standard errors), their ratio, and which method is best at
that ε. The RS+FD methods need categorical attributes: each reports every
attribute by its oracle (GRR, SUE or OUE) over its domain, and is left out
(with the reason) when the spec has a numeric attribute.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ldp.errors import InputError, ParameterError
from ldp.specs.multiattr import MULTI_ATTRIBUTE_METHODS, RSFD_METHODS, MultiAttribute

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["format_records_report", "read_records", "recalibrated", "records_sweep"]

#: The ε of the sweep when none are given.
DEFAULT_EPSILONS = (0.5, 1.0, 2.0, 4.0)


def _template(attribute: Any) -> dict[str, Any]:
    """An attribute's spec JSON without what ε calibrates (ε, and the fields whose default is derived from it)."""
    data = attribute.to_dict()
    derived = {
        name
        for name, parameter in inspect.signature(type(attribute).__init__).parameters.items()
        if parameter.default is None
    }
    return {k: v for k, v in data.items() if k not in derived and k not in ("epsilon", "format")}


def recalibrated(spec: MultiAttribute, epsilon: float, method: str) -> MultiAttribute:
    """The spec's attributes under ``method`` at record-level ``epsilon`` (``smp``: the k rule of the paper).

    An RS+FD method reports each categorical attribute by its oracle (GRR,
    SUE or OUE) over its domain.

    Raises
    ------
    ParameterError
        For an RS+FD method with a numeric attribute.
    """
    attributes = []
    for name, attribute in zip(spec.names, spec.attributes, strict=True):
        template = {"name": name, **_template(attribute)}
        if method in RSFD_METHODS:
            domain = getattr(attribute, "domain", None)
            if domain is None:
                raise ParameterError(
                    f"{method} takes categorical attributes; {name!r} is {attribute.mechanism}"
                )
            template = {"name": name, "mechanism": RSFD_METHODS[method][0], "domain": list(domain)}
        attributes.append(template)
    return MultiAttribute(attributes, epsilon, method=method)


def read_records(spec: MultiAttribute, path: str | Path) -> dict[str, list[Any]]:
    """The file's columns named after the spec's attributes, rows with a missing cell dropped, values checked."""
    from ldp.client.encode_input import clean_value
    from ldp.values_file import check_column, read_table

    def select(found: list[str]) -> tuple[str, ...]:
        for name in spec.names:
            check_column(path, name, found)
        return spec.names

    columns: dict[str, list[Any]] = {name: [] for name in spec.names}
    for row, cells in enumerate(read_table(path, select, strict=False), start=1):
        record = dict(zip(spec.names, cells, strict=True))
        if any(c is None or c == "" or (isinstance(c, float) and math.isnan(c)) for c in cells):
            continue
        cleaned = clean_value(spec, record, row)
        for name, attribute in zip(spec.names, spec.attributes, strict=True):
            value = cleaned[name]
            if hasattr(attribute, "index_of"):
                attribute.index_of(value)  # a value outside the attribute's domain: an error naming it
            columns[name].append(value)
    if not columns[spec.names[0]]:
        raise InputError(f"{str(path)!r} has no complete record (every row misses a cell)")
    return columns


def _truth(spec: MultiAttribute, columns: dict[str, list[Any]]) -> dict[str, np.ndarray]:
    """Per attribute: its values' frequencies (categorical) or [mean] (numeric)."""
    out = {}
    n = len(columns[spec.names[0]])
    for name, attribute in zip(spec.names, spec.attributes, strict=True):
        if hasattr(attribute, "index_of"):
            index = np.array([attribute.index_of(v) for v in columns[name]], dtype=np.int64)
            out[name] = np.bincount(index, minlength=attribute.domain_size) / n  # type: ignore[attr-defined]
        else:
            low, high = float(attribute.low), float(attribute.high)  # type: ignore[attr-defined]
            out[name] = np.array([float(np.mean(np.clip(np.asarray(columns[name], float), low, high)))])
    return out


def _collect(
    spec: MultiAttribute,
    columns: dict[str, list[Any]],
    truth: dict[str, np.ndarray],
    repeats: int,
    rng: Any,
    fast: bool = False,
) -> dict[str, tuple[float, float]]:
    """Per attribute: (mean squared error, mean reported variance) over ``repeats`` collections.

    ``fast``: each collection's accumulator from the declared fast simulator
    (:mod:`ldp.simulations.multiattr_fast`), given the true counts, instead
    of the real encoders.
    """
    from ldp.aggregator.multiattr import MultiAttributeAccumulator
    from ldp.client.multiattr import encode_records
    from ldp.simulations.multiattr_fast import multi_attribute_counts

    n = len(columns[spec.names[0]])
    true_counts = [np.rint(truth[name] * n).astype(np.int64) for name in spec.names] if fast else []
    errors: dict[str, list[float]] = {name: [] for name in spec.names}
    variances: dict[str, list[float]] = {name: [] for name in spec.names}
    for _ in range(repeats):
        if fast:
            acc = multi_attribute_counts(spec, true_counts, rng)
        else:
            acc = MultiAttributeAccumulator(spec)
            acc.add_batch(encode_records(spec, columns, rng))
        for name, table in acc.estimates(0.95).items():
            if "mean" in table.columns:
                estimate = table["mean"].to_numpy(float)
                se = table["std_error"].to_numpy(float)
            else:
                estimate = table["estimate"].to_numpy(float) / n
                se = table["std_error"].to_numpy(float) / n
            errors[name].append(float(np.mean((estimate - truth[name]) ** 2)))
            variances[name].append(float(np.mean(se**2)))
    return {name: (float(np.mean(errors[name])), float(np.mean(variances[name]))) for name in spec.names}


def _epsilons(epsilons: Sequence[float] | str | None) -> list[float]:
    if epsilons is None:
        return list(DEFAULT_EPSILONS)
    items = epsilons.split(",") if isinstance(epsilons, str) else list(epsilons)
    out = [float(x) for x in items if str(x).strip()]
    if not out or any(not (e > 0 and math.isfinite(e)) for e in out):
        raise ParameterError(f"epsilons must be finite numbers > 0, got {epsilons!r}")
    return out


def records_sweep(
    spec: MultiAttribute,
    data: str | Path,
    epsilons: Sequence[float] | str | None = None,
    *,
    repeats: int = 5,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    mode: str = "fast",
) -> tuple[pd.DataFrame, str]:
    """Compare SMP, SPL and RS+FD[GRR] on the records of ``data``: (results, report text).

    ``mode="fast"`` (the default) draws each collection from the declared
    fast simulator when every attribute has one (categorical attributes),
    else runs the real client and aggregator, as ``mode="faithful"`` always does;
    the ``mode`` column says which ran.

    Returns
    -------
    results : pandas.DataFrame
        One row per ε, method and attribute: ``epsilon, method, sample, attribute, statistic, n, mse,
        variance, ratio, best, seed`` (``best``: the smallest MSE among the methods at that ε).
    """
    import pandas as pd

    from ldp.simulations.multiattr_fast import has_fast_path

    if repeats < 1:
        raise ParameterError(f"repeats must be >= 1, got {repeats}")
    if mode not in ("fast", "faithful"):
        raise ParameterError(f"mode must be fast or faithful, got {mode!r}")
    columns = read_records(spec, data)
    truth = _truth(spec, columns)
    n = len(columns[spec.names[0]])
    if seed is None:
        entropy = np.random.SeedSequence().entropy
        assert isinstance(entropy, int)  # drawn from the OS when no entropy is given
        seed = entropy % (1 << 63)
    rng = np.random.default_rng(seed)  # insecure-ok: seeded simulation
    eps = _epsilons(epsilons)
    rows, skipped = [], []
    cells = len(eps) * len(MULTI_ATTRIBUTE_METHODS)
    for i, epsilon in enumerate(eps):
        for j, method in enumerate(MULTI_ATTRIBUTE_METHODS):
            try:
                spec_m = recalibrated(spec, epsilon, method)
            except ParameterError as exc:
                skipped.append(f"{method} at epsilon={epsilon:g}: {exc}")
                continue
            fast = mode == "fast" and has_fast_path(spec_m)
            measured = _collect(spec_m, columns, truth, repeats, rng, fast)
            for name, attribute in zip(spec_m.names, spec_m.attributes, strict=True):
                mse, variance = measured[name]
                rows.append(
                    {
                        "epsilon": epsilon,
                        "method": method,
                        "sample": spec_m.sample,
                        "attribute": name,
                        "statistic": "count" if hasattr(attribute, "index_of") else "mean",
                        "n": n,
                        "mse": mse,
                        "variance": variance,
                        "ratio": mse / variance if variance > 0 else math.nan,
                        "mode": "fast" if fast else "faithful",
                    }
                )
            if progress is not None:
                progress(i * len(MULTI_ATTRIBUTE_METHODS) + j + 1, cells)
    results = pd.DataFrame(rows)
    results["best"] = results["mse"] == results.groupby(["epsilon", "attribute"])["mse"].transform("min")
    results["seed"] = seed
    return results, format_records_report(results, skipped)


def format_records_report(results: pd.DataFrame, skipped: Sequence[str] = ()) -> str:
    """The sweep's table: per ε, method and attribute the MSE, the reported variance, their ratio, the best."""
    lines = [
        f"{'epsilon':>7}  {'method':<10} {'k':>2}  {'attribute':<14} {'mse':>10} {'variance':>10} {'ratio':>6}  best"
    ]
    for row in results.itertuples(index=False):
        lines.append(
            f"{row.epsilon:>7g}  {row.method:<10} {row.sample:>2}  {str(row.attribute)[:14]:<14} "
            f"{row.mse:>10.3e} {row.variance:>10.3e} {row.ratio:>6.3f}  {'*' if row.best else ''}"
        )
    n = int(results["n"].iloc[0]) if len(results) else 0
    lines.append(
        f"{n:,} records; mse of each attribute's frequencies (averaged over its values) or mean; variance: "
        "the mean reported SE^2; * best at that epsilon"
    )
    lines += [f"not run: {reason}" for reason in skipped]
    return "\n".join(lines)
