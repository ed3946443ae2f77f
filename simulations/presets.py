"""Published simulation setups: ``wang2017`` and ``rappor-regtest``.

``wang2017``
    The variance comparison of Wang et al. (USENIX Security 2017): GRR, OUE,
    OLH and SUE across ε for domain sizes 2^4 … 2^10 (a :func:`run` grid).
``rappor-regtest``
    The 25 ``small`` cases of google/rappor's regression suite
    (tests/regtest_spec.py): five populations (unif, exp, gauss, zipf1,
    zipf1.5 over 100 values, 1,000,000 clients, one report each) × five
    configurations (typical, sharp, loose, over_x2, over_x10) of Bloom
    filter (8 bits, 2 hashes, 128 cohorts), privacy (p, q, f) and candidate
    list (true values minus those matching ``v[0-9]*9$``, plus extra
    non-values). Reported as that suite does (tests/compare_dist.R):
    detected, false positives, false negatives, total variation over the
    detected values, allocated mass and decode time. Hashing is MD5, as
    Google's client. Population shapes follow tests/gen_counts.R (ComputePdf);
    the Gaussian is binned here (google/rappor takes point densities, a
    difference well below 1% of any value's mass).

Both accept ``small=True`` for CI-sized runs.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha. "Locally Differentially Private
   Protocols for Frequency Estimation". USENIX Security 2017.
.. [2] google/rappor: tests/regtest_spec.py, regtest.sh, demo.sh
   (print-candidates), tests/gen_counts.R, tests/compare_dist.R.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ldp.errors import ParameterError
from ldp.simulations.metrics import detection_metrics, error_metrics
from ldp.simulations.populations import Population, draw_counts, exponential, gaussian, uniform, zipf
from ldp.simulations.rappor import decode_candidates, rappor_collect
from ldp.specs import Rappor

__all__ = ["PRESETS", "REGTEST_COLUMNS", "RegtestCase", "regtest_cases", "run_rappor_regtest", "wang2017"]


def wang2017(small: bool = False) -> dict[str, Any]:
    """:func:`ldp.simulations.run` arguments of the Wang et al. 2017 comparison."""
    if small:
        return {
            "mechanisms": ["grr", "oue", "olh", "sue"],
            "epsilons": [0.5, 2.0, 4.0],
            "domain_size": [16, 256],
            "users": [10_000],
            "distribution": "zipf",
            "repeats": 2,
        }
    return {
        "mechanisms": ["grr", "oue", "olh", "sue"],
        "epsilons": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0],
        "domain_size": [2**k for k in range(4, 11)],
        "users": [100_000],
        "distribution": "zipf",
        "repeats": 5,
    }


# -- google/rappor regression suite ------------------------------------------

_DISTRIBUTIONS: dict[str, Callable[[int], Population]] = {
    "unif": uniform,
    "exp": exponential,  # rate 5/D, at 1..D
    "gauss": lambda d: gaussian(d, sd=d / 6, mean=d / 2 - 1),  # google centres at index D/2 − 1
    "zipf1": lambda d: zipf(d, 1.0),
    "zipf1.5": lambda d: zipf(d, 1.5),
}

# (name, (k, h, m), (p, q, f), fraction of extra candidates, regex of true values left out)
_CONFIGS = (
    ("typical", (8, 2, 128), ("0.39", "0.61", "0.45"), 0.2, r"v[0-9]*9$"),
    ("sharp", (8, 2, 128), ("0.39", "0.61", "0.45"), 0.0, None),
    ("loose", (8, 2, 128), ("0.225", "0.775", "0"), 0.2, r"v[0-9]*9$"),
    ("over_x2", (8, 2, 128), ("0.39", "0.61", "0.45"), 2.0, r"v[0-9]*9$"),
    ("over_x10", (8, 2, 128), ("0.39", "0.61", "0.45"), 10.0, r"v[0-9]*9$"),
)


@dataclasses.dataclass(frozen=True)
class RegtestCase:
    """One case of the regression suite."""

    name: str
    distribution: str
    num_values: int
    num_clients: int
    spec: Rappor
    num_extra: int
    missing: str | None

    def values(self) -> list[str]:
        """The true values v1 … vN."""
        return [f"v{i}" for i in range(1, self.num_values + 1)]

    def candidates(self) -> list[str]:
        """True values not matching ``missing``, then v(N+1) … v(N+extra) (demo.sh print-candidates)."""
        kept = [v for v in self.values() if self.missing is None or not re.search(self.missing, v)]
        return kept + [f"v{i}" for i in range(self.num_values + 1, self.num_values + self.num_extra + 1)]

    def population(self) -> Population:
        base = _DISTRIBUTIONS[self.distribution](self.num_values)
        return Population(f"{self.distribution}", tuple(self.values()), base.probabilities)


def regtest_cases(num_values: int = 100, num_clients: int = 1_000_000) -> list[RegtestCase]:
    """The 25 ``small`` cases (defaults), or the same grid at other sizes."""
    cases = []
    for distribution in _DISTRIBUTIONS:
        for name, (k, h, m), (p, q, f), extra, missing in _CONFIGS:
            spec = Rappor(num_bits=k, num_hashes=h, num_cohorts=m, p=p, q=q, f=f, hash="md5")
            cases.append(
                RegtestCase(
                    name=f"r-{distribution}-small-{name}",
                    distribution=distribution,
                    num_values=num_values,
                    num_clients=num_clients,
                    spec=spec,
                    num_extra=int(num_values * extra),
                    missing=missing,
                )
            )
    return cases


REGTEST_COLUMNS = (
    "case",
    "distribution",
    "users",
    "num_values",
    "num_candidates",
    "num_bits",
    "num_hashes",
    "num_cohorts",
    "p",
    "q",
    "f",
    "epsilon_one",
    "epsilon_inf",
    "repeat",
    "mode",
    "seed",
    "num_actual",
    "detected",
    "false_positives",
    "false_negatives",
    "total_variation",
    "allocated_mass",
    "mse",
    "seconds",
)


def run_rappor_regtest(
    *,
    small: bool = False,
    num_clients: int | None = None,
    repeats: int = 1,
    seed: int | None = None,
    mode: str = "fast",
    cases: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Run the regression cases; one row per case and repeat.

    Parameters
    ----------
    small : bool
        CI size: 20,000 clients instead of 1,000,000 (same grid of 25 cases).
    num_clients : int, optional
        Override the number of clients.
    repeats : int
    seed : int, optional
        Root seed (random when omitted; recorded in the ``seed`` column).
    mode : {"fast", "faithful"}
    cases : str, optional
        Regular expression selecting case names (e.g. ``"zipf1-small-typical"``).
    progress : callable, optional
        ``progress(done, total)`` after each case.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`REGTEST_COLUMNS`; ``total_variation`` and
        ``allocated_mass`` as google/rappor's compare_dist.R (over the
        detected values), ``mse`` over true values and candidates, ``seconds``
        for the decode alone.
    """
    if seed is None:
        seed = secrets.randbits(63)
    clients = num_clients if num_clients is not None else (20_000 if small else 1_000_000)
    selected = regtest_cases(num_clients=clients)
    if cases:
        try:
            pattern = re.compile(cases)
        except re.error as exc:
            raise ParameterError.naming(
                f"{{cases=}} is not a valid regular expression: {exc}", cases=cases
            ) from None
        selected = [c for c in selected if pattern.search(c.name)]
        if not selected:
            raise ParameterError(f"no regtest case matches {cases!r}")
    rows = []
    total = len(selected) * int(repeats)
    for number, case in enumerate(selected):
        candidates = case.candidates()
        union = case.values() + [c for c in candidates if c not in set(case.values())]
        for repeat in range(int(repeats)):
            rng = np.random.Generator(
                np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(2, number, repeat)))
            )
            counts = draw_counts(case.population(), case.num_clients, rng)
            cohort_counts, bit_counts = rappor_collect(case.spec, case.values(), counts, rng, mode)
            started = time.perf_counter()
            estimate, detected = decode_candidates(case.spec, cohort_counts, bit_counts, candidates)
            seconds = time.perf_counter() - started
            truth = np.concatenate([counts / counts.sum(), np.zeros(len(union) - case.num_values)])
            by_candidate = dict(zip(candidates, zip(estimate, detected)))
            est_union = np.array([by_candidate.get(v, (0.0, False))[0] for v in union])
            det_union = np.array([by_candidate.get(v, (0.0, False))[1] for v in union], dtype=bool)
            det = detection_metrics(det_union, est_union, truth)
            spec = case.spec
            rows.append(
                {
                    "case": case.name,
                    "distribution": case.distribution,
                    "users": case.num_clients,
                    "num_values": case.num_values,
                    "num_candidates": len(candidates),
                    "num_bits": spec.num_bits,
                    "num_hashes": spec.num_hashes,
                    "num_cohorts": spec.num_cohorts,
                    "p": float(spec.p),
                    "q": float(spec.q),
                    "f": float(spec.f),
                    "epsilon_one": spec.epsilon_one,
                    "epsilon_inf": spec.epsilon_inf,
                    "repeat": repeat,
                    "mode": mode,
                    "seed": seed,
                    "num_actual": int((counts > 0).sum()),
                    "detected": det["detected"],
                    "false_positives": det["false_positives"],
                    "false_negatives": det["false_negatives"],
                    "total_variation": det["detected_tv"],
                    "allocated_mass": det["allocated_mass"],
                    "mse": error_metrics(est_union, truth)["mse"],
                    "seconds": seconds,
                }
            )
            if progress is not None:
                progress(len(rows), total)
    return pd.DataFrame.from_records(rows, columns=list(REGTEST_COLUMNS))


def format_regtest(results: pd.DataFrame) -> str:
    """The suite's summary table: one row per case (means over repeats)."""
    columns = [
        "detected",
        "false_positives",
        "false_negatives",
        "total_variation",
        "allocated_mass",
        "seconds",
    ]
    table = (
        results.groupby("case", sort=False)[["num_actual", "num_candidates", *columns]].mean().reset_index()
    )
    table = table.rename(
        columns={
            "false_positives": "fp",
            "false_negatives": "fn",
            "total_variation": "tv",
            "allocated_mass": "allocated",
            "num_actual": "actual",
            "num_candidates": "candidates",
        }
    )
    header = (
        f"google/rappor regression cases ({int(results['users'].iloc[0]):,} clients, "
        f"{int(results['repeat'].max()) + 1} repeat(s), {results['mode'].iloc[0]} mode)"
    )
    return header + "\n" + table.to_string(index=False, float_format=lambda x: f"{x:.3g}")


#: name -> kind of preset ("grid": arguments of run(); "regtest": its own runner).
PRESETS: dict[str, str] = {"wang2017": "grid", "rappor-regtest": "regtest"}
