"""The simulation grid: mechanisms × ε × users × domain sizes × repeats → one row each.

:func:`run` is the Python API behind ``ldp simulate``. For every cell it
draws the users' true values from the population, collects their randomized
reports (``mode="fast"``: aggregated counts drawn from their exact
distributions; ``mode="faithful"``: the real client and aggregator), and
scores the frequency estimates against the truth.

Reproducibility: every cell draws from its own stream,
``SeedSequence(seed, spawn_key=(...))`` keyed by the cell's coordinates
(domain size, users, repeat, mechanism name, ε), never by its position in
the grid. The same seed gives the same numbers, and adding a mechanism or an
ε to the grid leaves the other cells unchanged. The population draw is
shared by every mechanism and ε of one (domain size, users, repeat), so
mechanisms are compared on the same users.
"""

from __future__ import annotations

import math
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ldp.errors import ParameterError
from ldp.simulations import fast
from ldp.simulations.mechanisms import RapporSettings, build_spec, check_mechanisms, mechanism_kind
from ldp.simulations.metrics import detection_metrics, error_metrics, lower_bound, theory_mse, top_k_metrics
from ldp.simulations.populations import Population, draw_counts, from_data, make_population
from ldp.simulations.summary import results_frame

__all__ = ["DEFAULTS", "MODES", "RESULT_COLUMNS", "collection_row", "parse_list", "run"]

MODES = ("fast", "faithful")

#: The default sweep of ``ldp simulate`` with no arguments.
DEFAULTS: dict[str, Any] = {
    "epsilons": (0.5, 1.0, 2.0, 4.0, 8.0),
    "users": (100_000,),
    "domain_size": 64,
    "distribution": "zipf",
    "repeats": 5,
    "top_k": 10,
}

#: Columns of the results, in order.
RESULT_COLUMNS = (
    "mechanism",
    "resolved",
    "epsilon",
    "epsilon_achieved",
    "users",
    "domain_size",
    "distribution",
    "repeat",
    "mode",
    "seed",
    "mse",
    "mae",
    "max_error",
    "tv",
    "top_k",
    "top_k_precision",
    "top_k_recall",
    "top_relative_error",
    "theory_mse",
    "mse_ratio",
    "lower_bound",
    "detected",
    "false_positives",
    "false_negatives",
    "allocated_mass",
    "seconds",
)


def parse_list(value: Any, cast: Callable[[Any], Any], name: str) -> list:
    """A list from a scalar, a sequence, or comma-separated text; clear error on bad items."""
    if value is None:
        return []
    if isinstance(value, str):
        items: Iterable[Any] = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        items = [value]
    out = []
    for item in items:
        try:
            out.append(cast(item))
        except (TypeError, ValueError):
            raise ParameterError(f"{name}: cannot read {item!r}") from None
    if not out:
        raise ParameterError(f"{name}: give at least one value")
    return out


def _user_count(text: Any) -> int:
    number = float(str(text).replace("_", "")) if isinstance(text, str) else text
    if isinstance(number, bool) or float(number) != int(number) or int(number) < 1:
        raise ValueError(text)
    return int(number)


def _epsilon(value: Any) -> float:
    eps = float(value)
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(value)
    return eps


def grid_options(users: Any, repeats: Any, seed: Any, default_users: list[int]) -> tuple[list[int], int, int]:
    """Validated (user counts, repeats, seed) of a simulation grid; a fresh seed when ``seed`` is None."""
    user_list = list(default_users) if users is None else parse_list(users, _user_count, "users")
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ParameterError(f"repeats must be an integer >= 1, got {repeats!r}")
    if seed is None:
        entropy = np.random.SeedSequence().entropy
        assert isinstance(entropy, int)  # drawn from the OS when no entropy is given
        seed = entropy % (1 << 63)
    elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError(f"seed must be an integer >= 0, got {seed!r}")
    return user_list, int(repeats), int(seed)


def _key(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def _float_key(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def _stream(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=tuple(key))))


def _populations(
    domain_sizes: list[int] | None,
    distribution: Any,
    distribution_parameter: float | None,
    data: Any,
    column: str | None,
    as_users: bool,
) -> list[Population]:
    if isinstance(distribution, Population):
        if domain_sizes is not None or data is not None:
            raise ParameterError("give a Population, or domain_size/data, not both")
        return [distribution]
    if data is not None:
        if column is None and not isinstance(data, pd.Series):
            raise ParameterError.naming(
                "{data} needs {column} (the column holding one value per row)", data=data, column=None
            )
        if domain_sizes is not None:
            raise ParameterError.naming(
                "{domain_size} does not apply to {data} (the domain is the column's distinct values)",
                domain_size=domain_sizes,
                data=data,
            )
        return [from_data(data, column, as_users=as_users)]
    if as_users:
        raise ParameterError.naming(
            "{as_users} needs {data} and {column} (users are the file's rows)",
            as_users=True,
            data=None,
            column=None,
        )
    sizes = domain_sizes or [DEFAULTS["domain_size"]]
    return [make_population(distribution, d, distribution_parameter) for d in sizes]


def run(
    mechanisms: Sequence[str] | str | None = None,
    epsilons: Sequence[float] | str | float | None = None,
    users: Sequence[int] | str | int | None = None,
    domain_size: Sequence[int] | str | int | None = None,
    distribution: str | Population = "zipf",
    *,
    distribution_parameter: float | None = None,
    data: Any = None,
    column: str | None = None,
    as_users: bool = False,
    repeats: int = DEFAULTS["repeats"],
    seed: int | None = None,
    mode: str = "fast",
    top_k: int = DEFAULTS["top_k"],
    rappor: RapporSettings = RapporSettings(),
    client_sample: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Simulate collections and score the estimates; one row per cell and repeat.

    Parameters
    ----------
    mechanisms : list of str or comma-separated str, optional
        Frequency oracles (``binary-rr`` for two values, ``grr``, ``sue``,
        ``oue``, ``olh``, ``blh``), ``auto`` (the best by theory at each ε
        and D, :func:`ldp.best_frequency_mechanism`) and ``rappor`` (Bloom
        RAPPOR with ε₁ = ε, the domain as candidates). Default: grr, sue,
        oue, olh, blh.
    epsilons : list of float, optional
        Default 0.5, 1, 2, 4, 8.
    users : list of int, optional
        Users per collection; default 100,000. With ``as_users`` the default
        is every row.
    domain_size : list of int, optional
        D for synthetic populations (several sizes make a sweep); default 64.
    distribution : str or Population
        ``zipf``, ``uniform``, ``exponential``, ``gaussian``, ``geometric``,
        optionally with a parameter (``"zipf:1.5"``), or a Population.
    distribution_parameter : float, optional
        The zipf exponent, exponential rate, gaussian sd or geometric p.
    data, column : path, DataFrame or Series, and str, optional
        Real data: the empirical distribution of a column of a CSV, Parquet
        or JSON Lines file, or of a pandas DataFrame (the domain is its
        distinct values), or of a Series (``column`` optional). Numeric
        mechanisms are simulated by :func:`run_numeric`, which takes the
        same data.
    as_users : bool
        With ``data``: every row is a user (no resampling).
    repeats : int
        Independent collections per cell.
    seed : int, optional
        Root seed; drawn at random (and recorded in the ``seed`` column) when
        omitted.
    mode : {"fast", "faithful"}
        Exact count sampling, or the real client and aggregator.
    top_k : int
        k of the top-k metrics.
    rappor : RapporSettings
        Bloom filter size, hashes, cohorts and f of the ``rappor`` mechanism.
    client_sample : int
        Faithful mode: users encoded one by one by the CSPRNG client.
    progress : callable, optional
        Called as ``progress(done, total)`` after every cell.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`RESULT_COLUMNS`: ``mse``/``mae``/``max_error``/``tv``
        on the frequency scale, ``theory_mse`` (mean of the fixed-data
        variance over the domain; NaN for RAPPOR), ``mse_ratio`` =
        mse/theory_mse, ``lower_bound`` (per value, docs/mechanisms.md#lower-bounds), RAPPOR
        detection columns (NaN for the other mechanisms) and ``seconds``.

    Examples
    --------
    >>> from ldp.simulations import run, summarize
    >>> results = run(mechanisms="grr,oue", epsilons=[1.0, 4.0], users=[10_000], domain_size=16, repeats=2, seed=1)
    >>> len(results), sorted(set(results["mechanism"]))
    (8, ['grr', 'oue'])
    >>> len(summarize(results))  # one row per mechanism and ε
    4

    Real data: a file path, a DataFrame with ``column``, or a Series:

    >>> import pandas as pd
    >>> browsers = pd.Series(["chrome"] * 60 + ["firefox"] * 30 + ["safari"] * 10, name="browser")
    >>> run(mechanisms="grr", epsilons=[2.0], data=browsers, as_users=True, repeats=1, seed=1)["users"].tolist()
    [100]
    """
    if mode not in MODES:
        raise ParameterError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    eps_list = parse_list(DEFAULTS["epsilons"] if epsilons is None else epsilons, _epsilon, "epsilon")
    sizes = None if domain_size is None else parse_list(domain_size, _user_count, "domain_size")
    populations = _populations(sizes, distribution, distribution_parameter, data, column, as_users)
    rows = populations[0].num_rows
    user_list, repeats, seed = grid_options(
        users, repeats, seed, [rows] if rows is not None else list(DEFAULTS["users"])
    )

    grid = [(population, check_mechanisms(mechanisms, population.domain_size)) for population in populations]
    total = sum(len(names) for _, names in grid) * len(eps_list) * len(user_list) * int(repeats)
    records: list[dict[str, Any]] = []
    # every spec first: a refused parameter (ε, domain size) stops the sweep before any cell runs
    specs = {
        (name, eps, population.domain_size): build_spec(
            name, eps, population.domain, rappor=rappor, top_k=top_k
        )
        for population, names in grid
        for name in names
        for eps in eps_list
    }
    for population, names in grid:
        d = population.domain_size
        for n in user_list:
            for repeat in range(int(repeats)):
                counts = draw_counts(population, n, _stream(seed, 0, d, n, repeat))
                truth = counts / counts.sum()
                for name in names:
                    for eps in eps_list:
                        spec = specs[(name, eps, d)]
                        # Keyed by the concrete mechanism: "auto" reproduces its choice's numbers.
                        concrete = getattr(spec, "mechanism", name)
                        rng = _stream(seed, 1, d, n, repeat, _key(concrete), _float_key(eps))
                        started = time.perf_counter()
                        row = _cell(name, spec, population, counts, truth, rng, mode, top_k, client_sample)
                        row.update(
                            mechanism=name,
                            epsilon=eps,
                            users=int(counts.sum()),
                            domain_size=d,
                            distribution=population.name,
                            repeat=repeat,
                            mode=mode,
                            seed=seed,
                            top_k=min(top_k, d),
                            seconds=time.perf_counter() - started,
                        )
                        records.append(row)
                        if progress is not None:
                            progress(len(records), total)
    return results_frame(records, RESULT_COLUMNS)


def _cell(
    name: str,
    spec: Any,
    population: Population,
    counts: np.ndarray,
    truth: np.ndarray,
    rng: np.random.Generator,
    mode: str,
    top_k: int,
    client_sample: int,
) -> dict[str, Any]:
    kind = mechanism_kind(name)
    n = int(counts.sum())
    d = population.domain_size
    if kind == "frequency":
        if mode == "fast":
            estimate = fast.frequency_fast_estimate(spec, counts, rng)
        else:
            from ldp.simulations.faithful import collect, frequency_estimates

            estimate = frequency_estimates(
                spec, collect(spec, spec.domain, counts, rng, client_sample=client_sample)
            )
        row = {
            "resolved": spec.mechanism,
            "epsilon_achieved": spec.epsilon_achieved,
            "theory_mse": theory_mse(spec, truth, n),
        }
        eps_for_bound = spec.epsilon
    elif kind == "rappor":
        from ldp.simulations.rappor import rappor_estimates

        estimate, detected = rappor_estimates(spec, population.domain, counts, rng, mode, client_sample)
        row = {"resolved": "rappor", "epsilon_achieved": spec.epsilon_one, "theory_mse": math.nan}
        row.update(detection_metrics(detected, estimate, truth))
        del row["detected_tv"]
        eps_for_bound = spec.epsilon_one
    elif kind == "heavy-hitter":  # no candidate list: the top-k metrics are those of the discovered set
        from ldp.simulations.heavy_hitters import discovery_metrics, heavy_hitter_estimates

        estimate, found, outside = heavy_hitter_estimates(spec, population.domain, counts, rng)
        row = {"resolved": spec.mechanism, "epsilon_achieved": spec.epsilon_achieved, "theory_mse": math.nan}
        row.update(detection_metrics(found, estimate, truth))
        row["detected"] += outside  # every discovery counts, those outside the population's domain too
        row["false_positives"] += outside
        del row["detected_tv"]
        eps_for_bound = spec.epsilon
    else:  # pragma: no cover - a kind registered without a simulator
        raise ParameterError(f"no simulator for mechanism kind {kind!r}")
    row.update(error_metrics(estimate, truth))
    if kind == "heavy-hitter":
        row.update(discovery_metrics(found, outside, estimate, truth, min(top_k, d)))
    else:
        row.update(top_k_metrics(estimate, truth, min(top_k, d)))
    row["mse_ratio"] = row["mse"] / row["theory_mse"] if row["theory_mse"] > 0 else math.nan
    row["lower_bound"] = lower_bound(eps_for_bound, d, n)
    return row


def collection_row(
    name: str,
    spec: Any,
    population: Population,
    counts: np.ndarray,
    rng: np.random.Generator,
    *,
    mode: str = "fast",
    top_k: int = DEFAULTS["top_k"],
    client_sample: int = 0,
) -> dict[str, Any]:
    """Collect one report from each of the users ``counts`` describes and score the estimate: one cell of :func:`run`.

    The measured columns of :data:`RESULT_COLUMNS` (``resolved``,
    ``epsilon_achieved``, ``mse`` ... ``lower_bound``, the detection columns
    for RAPPOR and heavy hitters), for the fixed data ``counts`` (users per
    value of ``population.domain``). :func:`ldp.simulations.run_rounds`
    scores each round of a panel with it.
    """
    if mode not in MODES:
        raise ParameterError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total < 1:
        raise ParameterError("a collection needs at least one user")
    return _cell(name, spec, population, counts, counts / total, rng, mode, top_k, client_sample)
