"""Range-query simulations: range answers' MSE against their reported variance, and quantile rank error.

``ldp simulate -m range-hierarchy,range-haar`` runs this sweep. One
population per repeat (a categorical shape of :mod:`ldp.simulations.populations`
read in domain order; default ``gaussian``: centred, standard deviation D/6)
is shared by every mechanism and ε; for each cell the aggregated counts are
drawn from their exact distribution by the mechanism's fast simulator
(:mod:`ldp.simulations.ranges`), and the same :data:`RANGE_QUERIES` uniform
random ranges [lo, hi] (both ends included, drawn from the seed) are answered.

Columns of the results (one row per mechanism × ε × repeat), all on the
proportion scale (counts over n):

- ``mse``: mean over the ranges of (answer − truth)²;
- ``theory_mse``: mean of the *reported* variances (the estimate's plug-in
  variance, what the estimate table's SE is built from); ``mse_ratio`` =
  mse / theory_mse, which should be 1 within noise;
- ``exact_mse``: mean of the exact variances (the true counts plugged in);
- ``covered``: share of the ranges whose 95 % interval holds the truth;
- ``rank_error_p50``, ``rank_error_p90``, ``rank_error_p99``: the quantiles'
  rank error |F(v) − q| (:func:`ldp.range_math.rank_error`, F the true CDF,
  0 when v is a true q-quantile).

Every cell draws from its own stream keyed by (repeat, mechanism, ε), so
adding a mechanism or an ε leaves the other cells' numbers unchanged.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ldp.errors import ParameterError
from ldp.range_math import rank_error
from ldp.registry import declaration
from ldp.simulations.populations import DISTRIBUTIONS, draw_counts, make_population
from ldp.simulations.runner import grid_options, parse_list
from ldp.specs import spec_class
from ldp.specs.ranges import RangeSpec

__all__ = [
    "RANGE_COLUMNS",
    "RANGE_QUANTILES",
    "RANGE_QUERIES",
    "format_range_report",
    "is_range",
    "random_ranges",
    "range_sweep",
    "run_ranges",
]

#: Number of random ranges answered per cell.
RANGE_QUERIES = 1000
#: Quantiles whose rank error is reported.
RANGE_QUANTILES = (0.5, 0.9, 0.99)
DEFAULT_RANGE = ("range-hierarchy", "range-haar")
DEFAULT_DISTRIBUTION = "gaussian"
_Z95 = 1.959963984540054

#: Columns of the results, in order.
RANGE_COLUMNS = (
    "mechanism",
    "epsilon",
    "users",
    "domain_size",
    "distribution",
    "repeat",
    "seed",
    "mse",
    "theory_mse",
    "mse_ratio",
    "exact_mse",
    "covered",
    "rank_error_p50",
    "rank_error_p90",
    "rank_error_p99",
)


def is_range(name: str) -> bool:
    """Whether mechanism ``name`` answers range queries (its spec is a range spec)."""
    try:
        cls = spec_class(name)
    except Exception:  # an unknown name: not ours to judge here
        return False
    return isinstance(cls, type) and issubclass(cls, RangeSpec)


def random_ranges(domain_size: int, count: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """``count`` ranges [lo, hi] with both ends uniform on the domain's indices (sorted)."""
    ends = np.sort(rng.integers(0, domain_size, size=(count, 2)), axis=1)
    return [(int(a), int(b)) for a, b in ends]


def _bits(x: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", x))[0])


def _stream(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=tuple(key))))


def _simulator(name: str) -> Callable[..., Any]:
    found = declaration(name)
    simulator = None if found is None else found.load("fast_simulator")
    if simulator is None:
        raise ParameterError(f"{name!r} has no fast simulator to run a range sweep")
    return simulator


def run_ranges(
    mechanisms: Sequence[str] | None = None,
    epsilons: Sequence[float] = (0.5, 1.0, 2.0),
    users: int = 100_000,
    domain_size: int = 1024,
    distribution: str = DEFAULT_DISTRIBUTION,
    *,
    repeats: int = 3,
    seed: int | None = None,
    queries: int = RANGE_QUERIES,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Simulate every range mechanism × ε × repeat (module docstring); one row each.

    Parameters
    ----------
    mechanisms : sequence of str, optional
        Range mechanisms (default: ``range-hierarchy`` and ``range-haar``, each with its spec's defaults).
    epsilons : sequence of float
        The ε of one report.
    users : int
        n, the users per collection.
    domain_size : int
        D, the ordered domain's size (the values 0 … D − 1).
    distribution : str
        A population shape of :data:`ldp.simulations.populations.DISTRIBUTIONS` (``name[:parameter]``).
    repeats : int
        Collections per cell (each with a fresh population draw).
    seed : int, optional
        The same seed gives the same numbers; None draws one (reported in the ``seed`` column).
    queries : int
        Random ranges per cell.

    Returns
    -------
    pandas.DataFrame
        :data:`RANGE_COLUMNS`.
    """
    names = list(mechanisms or DEFAULT_RANGE)
    for name in names:
        if not is_range(name):
            raise ParameterError(f"{name!r} is not a range mechanism")
    if not isinstance(queries, int) or queries < 1:
        raise ParameterError(f"queries must be an integer >= 1, got {queries!r}")
    _, repeats, seed = grid_options(users, repeats, seed, [users])
    family, _, parameter = str(distribution).partition(":")
    population = make_population(family.strip(), int(domain_size), float(parameter) if parameter else None)
    ranges = random_ranges(population.domain_size, queries, _stream(seed, 0))
    rows: list[dict[str, Any]] = []
    total, done = len(names) * len(epsilons) * repeats, 0
    for r in range(repeats):
        counts = draw_counts(population, users, _stream(seed, 1, r))
        cumulative = np.concatenate([[0], np.cumsum(counts)])
        truth = np.array([cumulative[b + 1] - cumulative[a] for a, b in ranges], dtype=float)
        for name in names:
            simulate = _simulator(name)
            for epsilon in epsilons:
                spec: Any = spec_class(name)(range(population.domain_size), float(epsilon))  # type: ignore[call-arg]
                rng = _stream(seed, 2, r, zlib.crc32(name.encode()), _bits(float(epsilon)))
                acc = simulate(spec, counts, rng)
                answers, reported = acc.range_answers(ranges)
                _, exact = acc.range_answers(ranges, true_counts=counts)
                table = acc.estimate(quantiles=list(RANGE_QUANTILES))
                ranks = rank_error(counts, table["value"].astype(int).to_numpy(), RANGE_QUANTILES)
                mse = float(np.mean((answers - truth) ** 2)) / users**2
                theory = float(np.mean(reported)) / users**2
                rows.append(
                    {
                        "mechanism": name,
                        "epsilon": float(epsilon),
                        "users": int(users),
                        "domain_size": population.domain_size,
                        "distribution": population.name,
                        "repeat": r,
                        "seed": seed,
                        "mse": mse,
                        "theory_mse": theory,
                        "mse_ratio": mse / theory if theory > 0 else float("nan"),
                        "exact_mse": float(np.mean(exact)) / users**2,
                        "covered": float(np.mean(np.abs(answers - truth) <= _Z95 * np.sqrt(reported))),
                        "rank_error_p50": float(ranks[0]),
                        "rank_error_p90": float(ranks[1]),
                        "rank_error_p99": float(ranks[2]),
                    }
                )
                done += 1
                if progress is not None:
                    progress(done, total)
    return pd.DataFrame(rows, columns=list(RANGE_COLUMNS))


def format_range_report(results: pd.DataFrame) -> str:
    """Per mechanism and ε: MSE and reported variance (means over repeats), their ratio, coverage, rank errors."""
    grouped = (
        results.groupby(["mechanism", "epsilon"], sort=False)[
            [
                "mse",
                "theory_mse",
                "exact_mse",
                "covered",
                "rank_error_p50",
                "rank_error_p90",
                "rank_error_p99",
            ]
        ]
        .mean()
        .reset_index()
    )
    lines = [
        f"{'mechanism':<16} {'eps':>5} {'range MSE':>10} {'reported':>10} {'ratio':>6} {'exact':>10} "
        f"{'cover':>6} {'rank p50':>8} {'rank p90':>8} {'rank p99':>8}"
    ]
    for row in grouped.itertuples():
        ratio = row.mse / row.theory_mse if row.theory_mse > 0 else float("nan")
        lines.append(
            f"{row.mechanism:<16} {row.epsilon:>5g} {row.mse:>10.3e} {row.theory_mse:>10.3e} {ratio:>6.3f} "
            f"{row.exact_mse:>10.3e} {row.covered:>6.1%} {row.rank_error_p50:>8.4f} {row.rank_error_p90:>8.4f} "
            f"{row.rank_error_p99:>8.4f}"
        )
    first = results.iloc[0]
    lines.append(
        f"(n = {int(first['users']):,} users, D = {int(first['domain_size']):,}, {first['distribution']}; "
        f"{RANGE_QUERIES:,} random ranges; MSE on the proportion scale, means over "
        f"{results['repeat'].nunique()} repeats; rank error |F(v) - q| of the true CDF)"
    )
    return "\n".join(lines)


def range_sweep(
    mechanisms: Sequence[str] | str | None,
    epsilons: Sequence[float] | str | None,
    users: Sequence[int] | str | None,
    distribution: str | None,
    domain_size: Sequence[int] | int | str | None,
    *,
    repeats: int = 3,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[pd.DataFrame, str]:
    """``ldp simulate`` with range mechanisms: (results, report text)."""
    names = (
        None
        if mechanisms is None
        else [n.strip() for n in mechanisms.split(",") if n.strip()]
        if isinstance(mechanisms, str)
        else list(mechanisms)
    )
    eps = [0.5, 1.0, 2.0] if epsilons is None else parse_list(epsilons, float, "epsilons")
    if any(not np.isfinite(e) or e <= 0 for e in eps):
        raise ParameterError(f"epsilons must be > 0, got {epsilons!r}")
    user_list = [100_000] if users is None else parse_list(users, int, "users")
    sizes = [1024] if domain_size is None else parse_list(domain_size, int, "domain_size")
    if len(user_list) != 1 or len(sizes) != 1:
        raise ParameterError("a range sweep takes one --users and one --domain-size")
    if user_list[0] < 1 or sizes[0] < 2:
        raise ParameterError("a range sweep needs --users >= 1 and --domain-size >= 2")
    family = (distribution or DEFAULT_DISTRIBUTION).partition(":")[0].strip().lower()
    if family not in DISTRIBUTIONS:
        raise ParameterError(
            f"distribution {distribution!r} does not apply to range mechanisms: use {', '.join(DISTRIBUTIONS)}"
        )
    results = run_ranges(
        names,
        eps,
        user_list[0],
        sizes[0],
        distribution or DEFAULT_DISTRIBUTION,
        repeats=repeats,
        seed=seed,
        progress=progress,
    )
    return results, format_range_report(results)
