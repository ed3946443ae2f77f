"""Key-value simulations: per-key frequency and mean MSE versus ε (PCKV-UE, PCKV-GRR, PrivKVM).

The population is the synthetic setup of Gu et al. (PCKV, USENIX Security
2020, §6): n users with one (key, value) pair each, d keys; ``uniform``
(the paper's "UU": keys uniform, each key's value uniform on [−1, 1]) or
``gaussian`` (its "GG": keys |N(0, (d/2)²)| rounded up and truncated to d,
values N(0, 1) truncated to [−1, 1]). All holders of a key hold its value,
as in the paper. ``mode="faithful"``: users are encoded with the real batch
encoders (exact coins from a seeded stream) and aggregated by the real
accumulators; ``mode="fast"`` (the default): each accumulator's counts are
drawn from their exact distribution given the population, by the
mechanism's declared ``fast_simulator``
(:mod:`ldp.simulations.key_value_fast`), in time independent of n.

Columns of the results (one row per mechanism × ε × repeat): ``freq_mse``
(mean over keys of (f̂ − f)², f as a share of users), ``mean_mse`` (mean
over the keys held by at least ``min_share`` of the users of (m̂ − m)², the
estimate clipped to [−1, 1] as in the paper), ``raw_mean_mse`` (the same
before clipping, over those keys with an estimate), ``theory_mean_mse`` (mean
of their reported mean variances, to read against ``raw_mean_mse``: the
delta method holds when a key's frequency is many standard errors above 0),
``zero_mean_mse`` (the MSE of answering 0 for every such key, mean of m²:
the score of an estimate that carries no information about the means),
``freq_covered`` and
``mean_covered`` (shares of those keys whose 95 % interval holds the truth,
before clipping), ``theory_freq_mse`` (mean of the reported variances).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ldp.errors import ParameterError
from ldp.simulations.runner import parse_list
from ldp.specs import spec_class

__all__ = [
    "KEY_VALUE_DISTRIBUTIONS",
    "format_key_value_report",
    "is_key_value",
    "key_value_population",
    "key_value_sweep",
    "run_key_value",
]

KEY_VALUE_DISTRIBUTIONS = ("uniform", "gaussian")
DEFAULT_KEY_VALUE = ("pckv-ue", "pckv-grr", "privkvm")


def is_key_value(name: str) -> bool:
    """Whether mechanism ``name`` takes sets of key-value pairs (its spec's ``report_kind``)."""
    try:
        return getattr(spec_class(name), "report_kind", "") == "key-value"
    except Exception:  # an unknown name: not ours to judge here
        return False


def key_value_population(
    distribution: str, users: int, keys: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(key index per user, value per key) of the paper's synthetic population."""
    if distribution == "uniform":
        held = rng.integers(0, keys, users)
        means = rng.uniform(-1.0, 1.0, keys)
    elif distribution == "gaussian":
        draws = np.ceil(np.abs(rng.normal(0.0, keys / 2, 3 * users))).astype(np.int64)
        draws = draws[(draws >= 1) & (draws <= keys)][:users]
        held = draws - 1
        values = rng.normal(0.0, 1.0, 4 * keys)
        means = values[np.abs(values) <= 1][:keys]
    else:
        raise ParameterError(
            f"key-value population {distribution!r} is unknown; use {', '.join(KEY_VALUE_DISTRIBUTIONS)}"
        )
    return held, means


def _nanmean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.mean(finite)) if finite.size else float("nan")


def run_key_value(
    mechanisms: Sequence[str] | None = None,
    epsilons: Sequence[float] = (0.5, 1.0, 2.0, 4.0),
    users: int = 100_000,
    keys: int = 100,
    distribution: str = "uniform",
    *,
    repeats: int = 3,
    seed: int | None = None,
    min_share: float = 0.001,
    progress: Callable[[int, int], None] | None = None,
    mode: str = "fast",
) -> pd.DataFrame:
    """Simulate every mechanism × ε × repeat (module docstring); one population per repeat, shared by all."""
    from ldp.aggregator import make_aggregator
    from ldp.client import encode_batch
    from ldp.plugins import implementation
    from ldp.simulations.key_value_fast import KeyValuePopulation

    if mode not in ("fast", "faithful"):
        raise ParameterError(f"mode must be fast or faithful, got {mode!r}")

    names = list(mechanisms or DEFAULT_KEY_VALUE)
    for name in names:
        if not is_key_value(name):
            raise ParameterError(f"{name!r} is not a key-value mechanism")
    if seed is None:
        seed = secrets.randbits(32)
    domain = tuple(f"k{i}" for i in range(keys))
    rows: list[dict[str, Any]] = []
    total, done = len(names) * len(epsilons) * repeats, 0
    for r in range(repeats):
        held, means = key_value_population(distribution, users, keys, np.random.default_rng([seed, r]))
        values = [{domain[k]: float(means[k])} for k in held.tolist()] if mode == "faithful" else []
        population = KeyValuePopulation(np.bincount(held, minlength=keys), means)
        freq = np.bincount(held, minlength=keys) / users
        wanted = freq >= min_share
        for m, name in enumerate(names):
            for e, epsilon in enumerate(epsilons):
                spec: Any = spec_class(name)(domain, float(epsilon))  # type: ignore[call-arg]
                rng = np.random.default_rng([seed, r, m, e, 1])
                if mode == "fast":
                    counts = implementation(spec, "fast_simulator")(spec, population, rng)
                    kind: Any = type(make_aggregator(spec))  # a KeyValueAccumulator
                    acc = kind.from_counts(spec, counts, users)
                else:
                    acc = make_aggregator(spec)
                    acc.add_batch(encode_batch(spec, values, rng))
                table = acc.estimate(0.95)
                f_hat = table["proportion"].to_numpy(float)
                f_se = table["std_error"].to_numpy(float) / users
                m_hat = table["mean"].to_numpy(float)
                m_se = table["mean_std_error"].to_numpy(float)
                m_lo, m_hi = table["mean_ci_low"].to_numpy(float), table["mean_ci_high"].to_numpy(float)
                clipped = np.clip(np.nan_to_num(m_hat), -1.0, 1.0)
                rows.append(
                    {
                        "mechanism": name,
                        "epsilon": float(epsilon),
                        "epsilon_achieved": spec.epsilon_achieved,
                        "users": users,
                        "keys": keys,
                        "repeat": r,
                        "seed": seed,
                        "mode": mode,
                        "freq_mse": float(np.mean((f_hat - freq) ** 2)),
                        "theory_freq_mse": float(np.mean(f_se**2)),
                        "mean_mse": float(np.mean((clipped[wanted] - means[wanted]) ** 2)),
                        "zero_mean_mse": float(np.mean(means[wanted] ** 2)),
                        "raw_mean_mse": _nanmean((m_hat[wanted] - means[wanted]) ** 2),
                        "theory_mean_mse": _nanmean(m_se[wanted] ** 2),
                        "freq_covered": float(np.mean(np.abs(f_hat - freq) <= 1.959963984540054 * f_se)),
                        "mean_covered": float(
                            np.mean((m_lo[wanted] <= means[wanted]) & (means[wanted] <= m_hi[wanted]))
                        ),
                    }
                )
                done += 1
                if progress is not None:
                    progress(done, total)
    return pd.DataFrame(rows)


def format_key_value_report(results: pd.DataFrame) -> str:
    """Mean over repeats per mechanism and ε."""
    grouped = (
        results.groupby(["mechanism", "epsilon"], sort=False)[
            [
                "epsilon_achieved",
                "freq_mse",
                "theory_freq_mse",
                "mean_mse",
                "zero_mean_mse",
                "raw_mean_mse",
                "theory_mean_mse",
                "freq_covered",
                "mean_covered",
            ]
        ]
        .mean()
        .reset_index()
    )
    lines = [
        f"{'mechanism':<10} {'eps':>5} {'eps exact':>9} {'freq MSE':>10} {'theory':>10} "
        f"{'mean MSE':>10} {'answer 0':>10} {'raw':>10} {'theory':>10} {'f cover':>8} {'m cover':>8}"
    ]
    for row in grouped.itertuples():
        lines.append(
            f"{row.mechanism:<10} {row.epsilon:>5g} {row.epsilon_achieved:>9.4f} {row.freq_mse:>10.3e} "
            f"{row.theory_freq_mse:>10.3e} {row.mean_mse:>10.3e} {row.zero_mean_mse:>10.3e} {row.raw_mean_mse:>10.3e} "
            f"{row.theory_mean_mse:>10.3e} {row.freq_covered:>8.1%} {row.mean_covered:>8.1%}"
        )
    n, d = int(results["users"].iloc[0]), int(results["keys"].iloc[0])
    lines.append(
        f"(n = {n:,} users, one pair each, d = {d} keys; means over {results['repeat'].nunique()} repeats; "
        "mean MSE clipped to [-1, 1] as in the paper, 'answer 0' the MSE of estimating every mean as 0, "
        "raw before clipping against its theory)"
    )
    return "\n".join(lines)


def key_value_sweep(
    mechanisms: Sequence[str] | str | None,
    epsilons: Sequence[float] | str | None,
    users: Sequence[int] | str | None,
    distribution: str | None,
    domain_size: Sequence[int] | int | str | None,
    *,
    repeats: int = 3,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    mode: str = "fast",
) -> tuple[pd.DataFrame, str]:
    """``ldp simulate`` with key-value mechanisms: (results, report text); ``mode`` as in :func:`run_key_value`."""

    def one_int(value: Any, default: int, what: str) -> int:
        if value is None:
            return default
        items = parse_list(value, lambda item: int(float(item)), what)
        if len(items) != 1:
            raise ParameterError(f"{what} takes one value in a key-value sweep")
        return items[0]

    names = [n.strip() for n in mechanisms.split(",")] if isinstance(mechanisms, str) else mechanisms
    eps = (0.5, 1.0, 2.0, 4.0) if epsilons is None else parse_list(epsilons, float, "epsilons")
    n = one_int(users, 100_000, "--users")
    d = one_int(domain_size, 100, "--domain-size")
    if n < 1 or d < 2:
        raise ParameterError("a key-value sweep needs --users >= 1 and --domain-size >= 2")
    results = run_key_value(
        names, eps, n, d, distribution or "uniform", repeats=repeats, seed=seed, progress=progress, mode=mode
    )
    return results, format_key_value_report(results)
