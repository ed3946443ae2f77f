"""Numeric simulations: MSE of the mean versus ε per mechanism, against theory and the bound of docs/mechanisms.md#lower-bounds.

:func:`run_numeric` draws the users' numbers from a population (uniform,
gaussian, exponential, beta on ``[low, high]``, or a real data column),
encodes them with the seeded batch encoder (:func:`ldp.client.encode_batch`,
the same exact grid tables as the CSPRNG client), aggregates with the real
:class:`~ldp.aggregator.numeric.MeanAccumulator`, and scores the mean.

Columns of the results (one row per mechanism × ε × users × repeat):
``estimate`` and ``truth`` (the mean of the users' *clipped* values, which is
what every mechanism estimates), ``error``, ``mse`` (= error²), the
reported ``std_error`` and whether the 95 % interval ``covered`` the truth,
``theory_mse`` (the exact fixed-data variance of the mean from the spec's
grid tables), ``formula_mse`` (the same with the continuous variances of
docs/mechanisms.md#numeric; σ² for the Gaussian), and ``lower_bound``, the line of
docs/mechanisms.md#lower-bounds on
the same fixed-data scale, (coth²(ε/2) − mean t²)/n in value units: what
Duchi attains on every population and no ε-LDP mechanism beats on
populations at the ends of the range (PM/HM beat it on populations away from
the ends). The i.i.d. line coth²(ε/2)/n would include the users' own
sampling variance, which an error against their realized mean does not.

Reproducibility: every cell has its own stream keyed by (users, repeat,
mechanism, ε), and the users of one (users, repeat) are shared by all
mechanisms and ε.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldp import numeric_math as nm
from ldp.errors import InputError, ParameterError, SpecError
from ldp.simulations.populations import DataSource
from ldp.specs.numeric import NUMERIC_MECHANISMS, Gaussian, numeric_spec

__all__ = [
    "NUMERIC_COLUMNS",
    "NUMERIC_DISTRIBUTIONS",
    "NumericPopulation",
    "format_numeric_report",
    "numeric_population",
    "numeric_population_from_data",
    "plot_numeric",
    "run_numeric",
    "summarize_numeric",
]

#: Synthetic numeric populations (parameters after a colon).
NUMERIC_DISTRIBUTIONS = ("uniform", "gaussian", "exponential", "beta")
#: Default mechanisms of a numeric sweep.
DEFAULT_NUMERIC = ("duchi", "piecewise", "hybrid", "laplace")

NUMERIC_COLUMNS = (
    "mechanism",
    "resolved",
    "epsilon",
    "epsilon_achieved",
    "users",
    "distribution",
    "low",
    "high",
    "repeat",
    "seed",
    "estimate",
    "truth",
    "error",
    "mse",
    "std_error",
    "covered",
    "theory_mse",
    "formula_mse",
    "lower_bound",
    "seconds",
)


class NumericPopulation:
    """A sampler of users' numbers on ``[low, high]`` (values outside are clipped by the client).

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.simulations import NumericPopulation
    >>> flat = NumericPopulation("flat", 0.0, 1.0, lambda n, rng: rng.uniform(0.0, 1.0, n))
    >>> flat.draw(4, np.random.default_rng(1)).shape
    (4,)
    """

    def __init__(
        self,
        name: str,
        low: float,
        high: float,
        draw: Callable[[int, np.random.Generator], np.ndarray],
        rows: np.ndarray | None = None,
    ):
        if not low < high:
            raise ParameterError(f"numeric population needs low < high, got {low}, {high}")
        self.name, self.low, self.high, self._draw, self.rows = name, float(low), float(high), draw, rows

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(self._draw(n, rng), dtype=np.float64)


def _params(text: str) -> tuple[str, list[float]]:
    name, _, rest = text.partition(":")
    try:
        values = [float(x) for x in rest.split(",") if x.strip()] if rest else []
    except ValueError:
        raise ParameterError.naming(
            "{distribution=}: parameters must be numbers (e.g. beta:2,5)", distribution=text
        ) from None
    return name.strip().lower(), values


def numeric_population(
    distribution: str, low: float | None = None, high: float | None = None
) -> NumericPopulation:
    """A synthetic population on ``[low, high]`` (default [0, 1]).

    ``uniform``; ``gaussian[:sd]`` (mean at the middle, sd as a fraction of
    the range, default 0.15); ``exponential[:mean]`` (from ``low``, mean as a
    fraction of the range, default 0.2); ``beta[:a,b]`` (default 2, 5).

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.simulations import numeric_population
    >>> population = numeric_population("beta:2,5", low=0, high=10)
    >>> population.name, population.low, population.high, population.draw(3, np.random.default_rng(1)).shape
    ('beta:2,5', 0.0, 10.0, (3,))
    """
    low = 0.0 if low is None else float(low)
    high = 1.0 if high is None else float(high)
    span = high - low
    name, p = _params(distribution)
    if name == "uniform" and not p:
        return NumericPopulation("uniform", low, high, lambda n, rng: rng.uniform(low, high, n))
    if name == "gaussian" and len(p) <= 1:
        sd = p[0] if p else 0.15
        return NumericPopulation(
            f"gaussian:{sd:g}", low, high, lambda n, rng: rng.normal(low + span / 2, sd * span, n)
        )
    if name == "exponential" and len(p) <= 1:
        mean = p[0] if p else 0.2
        return NumericPopulation(
            f"exponential:{mean:g}", low, high, lambda n, rng: low + rng.exponential(mean * span, n)
        )
    if name == "beta" and len(p) in (0, 2):
        a, b = p if p else (2.0, 5.0)
        if a <= 0 or b <= 0:
            raise ParameterError(f"beta parameters must be > 0, got {a}, {b}")
        return NumericPopulation(
            f"beta:{a:g},{b:g}", low, high, lambda n, rng: low + span * rng.beta(a, b, n)
        )
    raise ParameterError(
        f"unknown numeric distribution {distribution!r}; use uniform, gaussian[:sd], exponential[:mean] or beta[:a,b]"
    )


def numeric_population_from_data(
    data: DataSource,
    column: str | None = None,
    low: float | None = None,
    high: float | None = None,
    *,
    as_users: bool = False,
) -> NumericPopulation:
    """Users drawn from (or, with ``as_users``, equal to) a numeric column; range defaults to its min/max.

    ``data`` is a data file, a pandas DataFrame or a Series, as for
    :func:`ldp.simulations.from_data`; cells that are not finite numbers are
    left out.

    Examples
    --------
    >>> import pandas as pd
    >>> population = numeric_population_from_data(pd.Series([3.0, 5.5, None, 9.0], name="minutes"))
    >>> population.name, population.low, population.high
    ('series:minutes', 3.0, 9.0)
    """
    from ldp.simulations.populations import data_column

    cells, name, source = data_column(data, column)
    column = str(cells.name) if column is None else column
    series = pd.to_numeric(cells, errors="coerce")
    values = series[np.isfinite(series)].to_numpy(dtype=np.float64)
    if values.size < 2:
        raise InputError(f"column {column!r} of {source} has fewer than 2 numbers")
    low = float(values.min()) if low is None else float(low)
    high = float(values.max()) if high is None else float(high)

    def draw(n, rng):
        if as_users:
            return values if n >= values.size else rng.choice(values, n, replace=False)
        return rng.choice(values, n, replace=True)

    return NumericPopulation(name, low, high, draw, rows=values if as_users else None)


def _stream(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=tuple(key))))


def _formula_variance(spec, t: np.ndarray) -> np.ndarray:
    eps = spec.epsilon
    if spec.mechanism == "gaussian":
        return np.full(t.shape, spec.sigma**2)
    f = {  # by the continuous mechanism the spec implements (a registered spec may share one: onebitmean)
        "laplace": nm.laplace_variance,
        "duchi": nm.duchi_variance,
        "stochastic-rounding": nm.duchi_variance,
        "piecewise": nm.pm_variance,
        "hybrid": nm.hm_variance,
    }[spec.theory_name]
    return np.vectorize(lambda x: f(eps, x))(t)


def run_numeric(
    mechanisms: Sequence[str] | str | None = None,
    epsilons: Sequence[float] | str | None = None,
    users: Sequence[int] | str | None = None,
    distribution: str | NumericPopulation = "beta",
    *,
    low: float | None = None,
    high: float | None = None,
    data: Any = None,
    column: str | None = None,
    as_users: bool = False,
    repeats: int = 5,
    seed: int | None = None,
    delta: float = 1e-5,
    grid: int | None = None,
    confidence: float = 0.95,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Simulate numeric collections; one row per mechanism × ε × users × repeat (columns :data:`NUMERIC_COLUMNS`).

    Parameters
    ----------
    mechanisms : list or comma-separated str
        Any of duchi, stochastic-rounding, piecewise, hybrid, laplace,
        gaussian, auto (best by worst-case variance). Default: duchi,
        piecewise, hybrid, laplace.
    epsilons, users : list or comma-separated str
        Defaults 0.5,1,2,4,8 and 100,000.
    distribution : str or NumericPopulation
        See :func:`numeric_population`.
    low, high : float, optional
        The spec's value range (default: the population's).
    data, column, as_users
        A real data column instead of a synthetic population.
    delta : float
        Gaussian's δ.
    grid : int, optional
        Input grid of the grid mechanisms (default the spec's).

    Examples
    --------
    >>> from ldp.simulations import run_numeric, summarize_numeric
    >>> results = run_numeric(mechanisms="duchi,piecewise", epsilons=[1.0], users=[10_000], repeats=2, seed=1)
    >>> len(results), summarize_numeric(results)["mechanism"].tolist()
    (4, ['duchi', 'piecewise'])
    """
    from ldp.aggregator.numeric import MeanAccumulator
    from ldp.client import encode_batch
    from ldp.simulations.runner import _epsilon, _float_key, _key, grid_options, parse_list

    names = parse_list(mechanisms if mechanisms is not None else list(DEFAULT_NUMERIC), str, "mechanism")
    names = [n.strip().lower().replace("_", "-") for n in names]
    for name in names:
        if name not in NUMERIC_MECHANISMS and name != "auto":
            raise SpecError(
                f"{name!r} is not a numeric mechanism; use {', '.join([*NUMERIC_MECHANISMS, 'auto'])}"
            )
    eps_list = parse_list(
        epsilons if epsilons is not None else (0.5, 1.0, 2.0, 4.0, 8.0), _epsilon, "epsilon"
    )
    if isinstance(distribution, NumericPopulation):
        population = distribution
    elif data is not None:
        if column is None and not isinstance(data, pd.Series):
            raise ParameterError.naming(
                "{data} needs {column} (the column holding one number per row)", data=data, column=None
            )
        population = numeric_population_from_data(data, column, low, high, as_users=as_users)
    else:
        population = numeric_population(distribution, low, high)
    lo = population.low if low is None else float(low)
    hi = population.high if high is None else float(high)
    default_users = [population.rows.size] if population.rows is not None else [100_000]
    user_list, repeats, seed = grid_options(users, repeats, seed, default_users)
    options: dict[str, Any] = {"delta": delta}
    if grid is not None:
        options["grid"] = grid
    # every spec first: a refused parameter (ε, range, grid) stops the sweep before any user is drawn
    specs = {(name, eps): numeric_spec(name, eps, lo, hi, **options) for name in names for eps in eps_list}
    total = len(names) * len(eps_list) * len(user_list) * int(repeats)
    records = []
    for n in user_list:
        for repeat in range(int(repeats)):
            values = population.draw(n, _stream(seed, 7, n, repeat))
            n_actual = values.size
            for name in names:
                for eps in eps_list:
                    spec = specs[(name, eps)]
                    rng = _stream(seed, 8, n, repeat, _key(spec.mechanism), _float_key(eps))
                    started = time.perf_counter()
                    acc = MeanAccumulator(spec)
                    acc.add_batch(encode_batch(spec, values, rng))  # the mechanism's declared batch encoder
                    row = acc.estimate(confidence, with_sum=False).iloc[0]
                    t = spec.to_native(values)
                    truth = float(spec.to_user(t.mean()))
                    scale = spec.half_width**2 / n_actual**2
                    error = float(row["mean"]) - truth
                    achieved = spec.delta_achieved if isinstance(spec, Gaussian) else spec.epsilon_achieved
                    records.append(
                        {
                            "mechanism": name,
                            "resolved": spec.mechanism,
                            "epsilon": eps,
                            "epsilon_achieved": achieved,
                            "users": n_actual,
                            "distribution": population.name,
                            "low": lo,
                            "high": hi,
                            "repeat": repeat,
                            "seed": seed,
                            "estimate": float(row["mean"]),
                            "truth": truth,
                            "error": error,
                            "mse": error * error,
                            "std_error": float(row["std_error"]),
                            "covered": bool(row["ci_low"] <= truth <= row["ci_high"]),
                            "theory_mse": float(spec.native_variance(t).sum() * scale),
                            "formula_mse": float(_formula_variance(spec, t).sum() * scale),
                            "lower_bound": nm.fixed_data_mean_lower_bound(eps, t) * spec.half_width**2,
                            "seconds": time.perf_counter() - started,
                        }
                    )
                    if progress is not None:
                        progress(len(records), total)
    return pd.DataFrame.from_records(records, columns=list(NUMERIC_COLUMNS))


def summarize_numeric(results: pd.DataFrame) -> pd.DataFrame:
    """Means over repeats per distribution × users × mechanism × ε (mse, theory, formula, bound, coverage).

    Examples
    --------
    >>> from ldp.simulations import run_numeric, summarize_numeric
    >>> results = run_numeric(mechanisms="duchi", epsilons=[1.0, 2.0], users=[5_000], repeats=2, seed=1)
    >>> summarize_numeric(results)[["mechanism", "epsilon"]].values.tolist()
    [['duchi', 1.0], ['duchi', 2.0]]
    """
    keys = ["distribution", "users", "mechanism", "epsilon"]
    grouped = results.groupby(keys, sort=False)
    table = (
        grouped[["mse", "theory_mse", "formula_mse", "lower_bound", "std_error", "covered"]]
        .mean()
        .reset_index()
    )
    table.insert(len(keys), "resolved", grouped["resolved"].first().to_numpy())
    table.insert(len(keys) + 1, "repeats", grouped.size().to_numpy())
    table["mse_ratio"] = table["mse"] / table["theory_mse"]
    table["rmse"] = np.sqrt(table["mse"])
    return table


def _fmt(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"


def format_numeric_report(summary: pd.DataFrame) -> str:
    """Text table of :func:`summarize_numeric`, then the best mechanism per ε (by theory).

    Examples
    --------
    >>> from ldp.simulations import format_numeric_report, run_numeric, summarize_numeric
    >>> results = run_numeric(mechanisms="duchi", epsilons=[1.0], users=[5_000], repeats=2, seed=1)
    >>> print(format_numeric_report(summarize_numeric(results)).splitlines()[0])
    mean of beta:2,5, 5,000 users (2 repeats)
    """
    lines = []
    for (distribution, n), block in summary.groupby(["distribution", "users"], sort=False):
        lines.append(f"mean of {distribution}, {n:,} users ({int(block['repeats'].iloc[0])} repeats)")
        shown = pd.DataFrame(
            {
                "mechanism": [
                    m if m == r else f"{m}={r}" for m, r in zip(block["mechanism"], block["resolved"])
                ],
                "epsilon": block["epsilon"].map(lambda e: f"{e:g}"),
                "rmse": block["rmse"].map(_fmt),
                "mse": block["mse"].map(_fmt),
                "theory": block["theory_mse"].map(_fmt),
                "formula": block["formula_mse"].map(_fmt),
                "ratio": block["mse_ratio"].map(lambda x: f"{x:.2f}"),
                "bound": block["lower_bound"].map(_fmt),
                "CI cover": block["covered"].map(lambda x: f"{x:.2f}"),
            }
        )
        lines.append(shown.to_string(index=False))
        lines.append("")
        lines.append("Best mechanism per epsilon (smallest expected MSE of the mean):")
        for eps, part in block.groupby(
            "epsilon", sort=True
        ):  # auto rows compete under the name they resolved to
            best = part.loc[part["theory_mse"].idxmin()]
            lines.append(f"  epsilon={eps:g}: {best['resolved']}  rmse {math.sqrt(best['theory_mse']):.3g}")
        lines.append("")
    lines.append(
        "mse/theory: squared error of the mean (value units); theory = exact grid variance, formula = "
        "the mechanism's closed-form variance, bound = the LDP lower bound on the fixed-data scale "
        "(coth²(ε/2) − mean t²)/n."
    )
    return "\n".join(lines)


def plot_numeric(results: pd.DataFrame, path: str | Path) -> Path:
    """MSE of the mean versus ε per mechanism (log-log), theory dashed, lower bound dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarize_numeric(results)
    groups = list(summary.groupby(["distribution", "users"], sort=False))
    figure, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4.5), squeeze=False)
    for ax, ((distribution, n), block) in zip(axes[0], groups):
        for i, mechanism in enumerate(dict.fromkeys(block["mechanism"])):
            line = block[block["mechanism"] == mechanism].sort_values("epsilon")
            ax.plot(line["epsilon"], line["mse"], marker="o", color=f"C{i % 10}", label=mechanism)
            ax.plot(line["epsilon"], line["theory_mse"], linestyle="--", color=f"C{i % 10}", alpha=0.7)
        bound = block.groupby("epsilon")["lower_bound"].mean().sort_index()
        ax.plot(bound.index, bound.to_numpy(), linestyle=":", color="black", label="LDP lower bound")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("MSE of the mean (value units²)")
        ax.set_title(f"mean of {distribution}, n={n:,}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small", title="dashed: theory", title_fontsize="small")
    path = Path(path)
    try:
        figure.savefig(path, dpi=110)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot write plot {str(path)!r}: {exc}") from None
    plt.close(figure)
    return path


def numeric_sweep(
    mechanisms: Sequence[str] | str | None = None,
    epsilons: Sequence[float] | str | None = None,
    users: Sequence[int] | str | None = None,
    distribution: str | None = None,
    *,
    low: float | None = None,
    high: float | None = None,
    data: Any = None,
    column: str | None = None,
    as_users: bool = False,
    repeats: int = 5,
    seed: int | None = None,
    delta: float = 1e-5,
    grid: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[pd.DataFrame, str]:
    """The numeric sweep of ``ldp simulate`` and its report: (results, report text).

    The parameters are those of :func:`run_numeric`, already checked by
    :func:`ldp.simulations.sweep.sweep_kind` (a numeric sweep, a numeric
    population); without ``distribution`` the population is beta(2, 5)
    (:data:`ldp.simulations.sweep.NUMERIC_DEFAULT`). The text is
    :func:`format_numeric_report` of :func:`summarize_numeric`.
    """
    from ldp.simulations.sweep import NUMERIC_DEFAULT

    results = run_numeric(
        mechanisms,
        epsilons,
        users,
        distribution or NUMERIC_DEFAULT,
        low=low,
        high=high,
        data=data,
        column=column,
        as_users=as_users,
        repeats=repeats,
        seed=seed,
        delta=delta,
        grid=grid,
        progress=progress,
    )
    return results, format_numeric_report(summarize_numeric(results))
