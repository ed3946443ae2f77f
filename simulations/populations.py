"""Populations of users: who holds which value.

A :class:`Population` is a categorical distribution over a domain (synthetic,
or the empirical distribution of a data column), optionally with a fixed
multiset of users (``as_users``: every row of the column is one user).
:func:`draw_counts` turns it into the true count of users per value for one
simulated collection; the mechanisms then randomize those users.

Synthetic shapes follow google/rappor's test generator (tests/gen_counts.R,
ComputePdf) where it has one: ``exponential`` has rate 5/D, ``gaussian`` has
standard deviation D/6 and is centred on the domain, ``zipf`` has weights
1/i^s for ranks i = 1..D.

References
----------
.. [1] google/rappor, tests/gen_counts.R (ComputePdf, RandomPartition).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from scipy import stats

from ldp.domain import normalize_domain
from ldp.errors import InputError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DISTRIBUTIONS",
    "Population",
    "domain_value",
    "draw_counts",
    "exponential",
    "from_data",
    "gaussian",
    "geometric",
    "make_population",
    "uniform",
    "zipf",
]


@dataclasses.dataclass(frozen=True, eq=False)
class Population:
    """A distribution of users over a categorical domain.

    Parameters
    ----------
    name : str
        Label used in results (``"zipf(1.1)"``, ``"data:city"``).
    domain : tuple of str or int
        The values, most frequent first for data populations.
    probabilities : numpy.ndarray
        P[value], one per domain value, summing to 1.
    user_counts : numpy.ndarray, optional
        Fixed number of users per value (``as_users``); when set, a
        collection uses exactly these users (or a random subset of them).

    Examples
    --------
    >>> from ldp.simulations import Population
    >>> Population("coin", ("heads", "tails"), [3, 1]).probabilities.tolist()  # normalized
    [0.75, 0.25]
    """

    name: str
    domain: tuple
    probabilities: np.ndarray
    user_counts: np.ndarray | None = None

    def __post_init__(self) -> None:
        domain = normalize_domain(self.domain)
        probs = np.asarray(self.probabilities, dtype=float)
        if probs.shape != (len(domain),):
            raise InputError(f"population {self.name!r}: {probs.size} probabilities for {len(domain)} values")
        if not np.all(np.isfinite(probs)) or probs.min() < 0 or probs.sum() <= 0:
            raise InputError(f"population {self.name!r}: probabilities must be finite, >= 0 and not all 0")
        object.__setattr__(self, "domain", domain)
        object.__setattr__(self, "probabilities", probs / probs.sum())
        if self.user_counts is not None:
            counts = np.asarray(self.user_counts, dtype=np.int64)
            if counts.shape != probs.shape or counts.min() < 0:
                raise InputError(f"population {self.name!r}: user_counts must be one count >= 0 per value")
            object.__setattr__(self, "user_counts", counts)

    @property
    def domain_size(self) -> int:
        """Number of values D."""
        return len(self.domain)

    @property
    def num_rows(self) -> int | None:
        """Number of fixed users (``as_users``), else None."""
        return None if self.user_counts is None else int(self.user_counts.sum())


def _check_size(domain_size: Any) -> int:
    if isinstance(domain_size, bool) or not isinstance(domain_size, (int, np.integer)) or domain_size < 2:
        raise ParameterError(f"domain_size must be an integer >= 2, got {domain_size!r}")
    return int(domain_size)


def _positive(value: Any, name: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise ParameterError(f"{name} must be a finite number > 0, got {value!r}")
    return x


def zipf(domain_size: int, exponent: float = 1.1) -> Population:
    """Zipf: P[rank i] ∝ 1/i^s for i = 1..D (value 0 is the most frequent)."""
    d = _check_size(domain_size)
    s = _positive(exponent, "zipf exponent")
    weights = np.arange(1, d + 1, dtype=float) ** -s
    return Population(f"zipf({s:g})", tuple(range(d)), weights)


def uniform(domain_size: int) -> Population:
    """Every value equally likely."""
    d = _check_size(domain_size)
    return Population("uniform", tuple(range(d)), np.full(d, 1.0 / d))


def exponential(domain_size: int, rate: float | None = None) -> Population:
    """Exponential density at i = 1..D, P[i] ∝ e^(−rate·i); rate defaults to 5/D (google/rappor)."""
    d = _check_size(domain_size)
    lam = 5.0 / d if rate is None else _positive(rate, "exponential rate")
    weights = np.exp(-lam * np.arange(1, d + 1, dtype=float))
    return Population(f"exponential({lam:g})", tuple(range(d)), weights)


def gaussian(domain_size: int, sd: float | None = None, mean: float | None = None) -> Population:
    """Binned normal: P[i] = Φ((i+½−μ)/σ) − Φ((i−½−μ)/σ), renormalized over 0..D−1.

    σ defaults to D/6 (google/rappor) and μ to the centre (D−1)/2.
    """
    d = _check_size(domain_size)
    sigma = d / 6.0 if sd is None else _positive(sd, "gaussian sd")
    mu = (d - 1) / 2.0 if mean is None else float(mean)
    edges = np.arange(d + 1, dtype=float) - 0.5
    weights = np.diff(stats.norm.cdf(edges, loc=mu, scale=sigma))
    if weights.sum() <= 0:
        raise ParameterError(f"gaussian(mean={mu}, sd={sigma}) puts no mass on 0..{d - 1}")
    return Population(f"gaussian({sigma:g})", tuple(range(d)), weights)


def geometric(domain_size: int, p: float | None = None) -> Population:
    """Truncated geometric: P[i] ∝ (1−p)^i for i = 0..D−1; p defaults to 4/D (capped at 1/2)."""
    d = _check_size(domain_size)
    prob = min(0.5, 4.0 / d) if p is None else _positive(p, "geometric p")
    if prob >= 1:
        raise ParameterError(f"geometric p must be in (0, 1), got {p!r}")
    weights = (1 - prob) ** np.arange(d, dtype=float)
    return Population(f"geometric({prob:g})", tuple(range(d)), weights)


#: name -> constructor(domain_size, parameter) of the synthetic populations.
DISTRIBUTIONS: dict[str, Callable[..., Population]] = {
    "zipf": zipf,
    "uniform": uniform,
    "exponential": exponential,
    "gaussian": gaussian,
    "geometric": geometric,
}


def make_population(distribution: str, domain_size: int, parameter: float | None = None) -> Population:
    """Synthetic population by name.

    ``distribution`` may carry its parameter, as in ``"zipf:1.5"``
    (the zipf exponent, exponential rate, gaussian sd or geometric p).

    Examples
    --------
    >>> from ldp.simulations import make_population
    >>> population = make_population("zipf", 8)
    >>> population.name, population.domain, round(float(population.probabilities.sum()), 12)
    ('zipf(1.1)', (0, 1, 2, 3, 4, 5, 6, 7), 1.0)
    """
    if isinstance(distribution, Population):
        return distribution
    name, _, param_text = str(distribution).strip().lower().partition(":")
    if param_text:
        if parameter is not None:
            raise ParameterError(f"distribution {distribution!r} already names its parameter")
        parameter = _positive(param_text, f"{name} parameter")
    try:
        build = DISTRIBUTIONS[name]
    except KeyError:
        raise ParameterError(
            f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)} (or data from a file)"
        ) from None
    if parameter is None:
        return build(domain_size)
    if name == "uniform":
        raise ParameterError("the uniform distribution takes no parameter")
    return build(domain_size, parameter)


#: What a simulation accepts as real data: a data file's path, or a pandas DataFrame or Series.
DataSource = Union[str, Path, "pd.DataFrame", "pd.Series"]


def data_column(data: DataSource, column: str | None) -> tuple[pd.Series, str, str]:
    """The cells of ``column`` of ``data`` as an object Series, a population name and the source for messages.

    ``data`` is a data file (read by :func:`ldp.values_file.read_column`;
    CSV rows wider or narrower than the header are read, not refused: a
    sample of users tolerates a ragged row that an encoder must not), a
    pandas DataFrame (``column`` names one of its columns) or a Series
    (``column``, when given, must be its name).

    Raises
    ------
    ParameterError
        If ``column`` is not given for a file or DataFrame, or is not a Series' name.
    InputError
        If ``column`` is not in ``data``, or ``data`` is none of these.
    """
    import pandas as pd

    if isinstance(data, pd.Series):
        if column is not None and column != data.name:
            raise ParameterError(
                f"column {column!r} is not the Series' name {data.name!r}: give one or the other"
            )
        name = "series" if data.name is None else str(data.name)
        return data.reset_index(drop=True).astype(object), f"series:{name}", "the Series"
    if column is None:
        raise ParameterError("data needs column (the column holding one value per row)")
    if isinstance(data, pd.DataFrame):
        if column not in data.columns:
            shown = ", ".join(map(repr, list(data.columns)[:10]))
            raise InputError(f"column {column!r} is not in the DataFrame (its columns: {shown})")
        return data[column].reset_index(drop=True).astype(object), f"dataframe:{column}", "the DataFrame"
    if not isinstance(data, (str, Path)):
        raise InputError(
            f"data must be a file path, a pandas DataFrame or a Series, not {type(data).__name__}"
        )
    from ldp.values_file import read_column

    cells = pd.Series(read_column(Path(data), column, strict=False), dtype=object, name=column)
    return cells, f"data:{Path(data).name}:{column}", repr(str(data))


def domain_value(value: Any) -> str | int:
    """A cell as a domain value: integers (and integral floats) as int, booleans as "true"/"false", the rest as text."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return str(value)


def from_data(data: DataSource, column: str | None = None, *, as_users: bool = False) -> Population:
    """Population from a column of a CSV, JSON Lines, JSON or Parquet file, a DataFrame or a Series.

    A file is read by :mod:`ldp.values_file` (its rules: kinds by
    extension, UTF-8, gzip, errors naming the file and line), except that a
    CSV row with another number of fields than the header is read (extra
    fields ignored, missing ones missing) instead of refused.
    Missing values (None, NaN, empty text) are dropped. The domain is the distinct values, most
    frequent first (ties by value). Integer columns keep integer values;
    everything else is read as text.

    Parameters
    ----------
    data : str, Path, pandas.DataFrame or pandas.Series
        ``.csv``, ``.jsonl``/``.ndjson``, ``.json`` (an array of objects) or
        ``.parquet``/``.pq`` file (the text kinds may be gzip-compressed,
        ``.gz``), or the data already in memory.
    column : str, optional
        Column holding one value per row (optional for a Series).
    as_users : bool
        When True every row is a user (the collection uses exactly these
        users, or a random subset); otherwise users are drawn from the
        empirical distribution of the column.

    Examples
    --------
    >>> import pandas as pd
    >>> population = from_data(pd.DataFrame({"os": ["ios", "android", "android", None]}), "os")
    >>> population.domain, population.probabilities.round(3).tolist()
    (('android', 'ios'), [0.667, 0.333])
    """
    series, label, source = data_column(data, column)
    column = str(series.name) if column is None else column
    series = series[series.notna() & (series.astype(str) != "")]
    if series.empty:
        raise InputError(f"column {column!r} of {source} has no values")
    counts = series.map(domain_value).astype(object).value_counts(sort=False)
    order = sorted(range(len(counts)), key=lambda i: (-int(counts.iloc[i]), str(counts.index[i])))
    domain = tuple(counts.index[i] for i in order)
    if len({str(v) for v in domain}) != len(domain):
        domain_text = [str(v) for v in domain]
        raise InputError(f"column {column!r} mixes numbers and text that print the same: {domain_text[:5]}")
    values = np.array([int(counts.iloc[i]) for i in order], dtype=np.int64)
    if len(domain) < 2:
        raise InputError(f"column {column!r} of {source} has a single distinct value; need at least 2")
    return Population(
        label,
        domain,
        values / values.sum(),
        user_counts=values if as_users else None,
    )


def draw_counts(population: Population, users: int, rng: np.random.Generator) -> np.ndarray:
    """True number of users per value for one collection of ``users`` users.

    Synthetic and empirical populations draw a multinomial (i.i.d. users);
    fixed users (``as_users``) are used as they are, or a uniformly random
    subset of ``users`` of them (multivariate hypergeometric).
    """
    if isinstance(users, bool) or not isinstance(users, (int, np.integer)) or users < 1:
        raise ParameterError(f"users must be an integer >= 1, got {users!r}")
    if population.user_counts is None:
        return rng.multinomial(int(users), population.probabilities).astype(np.int64)
    total = int(population.user_counts.sum())
    if users > total:
        raise ParameterError.naming(
            f"users={users} exceeds the {total} rows of {population.name} ({{as_users}})", as_users=True
        )
    if users == total:
        return population.user_counts.copy()
    return rng.multivariate_hypergeometric(population.user_counts, int(users)).astype(np.int64)
