"""Conformance of every registered mechanism: the slow checks (``pytest -m slow``).

Parametrized over :func:`ldp.registry.declarations` like ``test_conformance_fast.py``.
Significance levels:

- the real client's output (every coin from the CSPRNG, so unseeded): a
  chi-square goodness-of-fit at α = 1e-6 family-wise; α is its false-failure
  probability;
- the repeated seeded runs (unbiased over runs, empirical variance against
  the declared standard error, confidence-interval coverage): α = 1e-4 per
  check, the probability that a correct mechanism fails under a random seed;
- the audit of the real client: confidence 1 − 1e-6 (its false-alarm probability).
"""

from __future__ import annotations

import json

import httpx
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from mechanism_examples import example_spec, example_values, mechanism_declarations, table_truth
from scipy.stats import binom, chi2, norm

from ldp.aggregator import make_aggregator
from ldp.aggregator.accumulate import accumulate_files
from ldp.aggregator.writers import write_reports
from ldp.client import encode_batch, make_encoder

pytestmark = pytest.mark.slow

DECLARATIONS = mechanism_declarations()


@pytest.fixture(params=DECLARATIONS, ids=lambda d: d.name, scope="module")
def spec(request):
    return example_spec(request.param)


def _seed(spec) -> int:
    return int(spec.fingerprint[:8], 16)


# -- the real client (CSPRNG): chi-square against the exact output probabilities -----------------


def test_real_client_support_counts_match_p_star_q_star_and_the_declared_variance(spec):
    """n reports of one value x by the real client: each value v's support count S_v against its moments.

    E[S_v/n] is p* (v = x) or q* (v ≠ x), and Var[S_v/n] = Var[f̂_v]·(p* − q*)² with
    Var[f̂_v] the spec's declared fixed-data variance at frequency 1 or 0
    (``spec.variance``): the statistic (S_v/n − E)²/Var is chi-square with 1
    degree of freedom (normal approximation, n = 20,000), tested at α / d
    (Bonferroni over the d values): α = 1e-6 family-wise. This holds for
    indicator supports (binomial counts) and signed ones (HR) alike. A
    memoizing mechanism gets a new client per report (p* and q* are the
    chances over the memo and the fresh round together).
    """
    acc = make_aggregator(spec)
    p_star, q_star = getattr(spec, "exact_p_star", None), getattr(spec, "exact_q_star", None)
    if not hasattr(acc, "support_counts") or p_star is None or q_star is None:
        pytest.skip(f"{spec.mechanism}: no support counts with exact p*, q* to test the output against")
    n, alpha = 20_000, 1e-6
    x = spec.domain[0]
    encoder = make_encoder(spec)
    for _ in range(n):  # a memoizing client's reports share its memo: a fresh client per report, as users
        acc.add((make_encoder(spec) if spec.memoized else encoder).encode(x))
    observed = np.asarray(acc.support_counts, dtype=float) / n
    holds = np.array([v == x for v in spec.domain])
    mean = np.where(holds, float(p_star), float(q_star))
    variance = np.asarray(spec.variance(holds.astype(float), n), dtype=float) * float(p_star - q_star) ** 2
    stat = (observed - mean) ** 2 / variance
    limit = chi2.isf(alpha / len(mean), 1)
    assert np.all(stat <= limit), dict(zip(spec.domain, stat))


def _features(spec, reports) -> dict[str, np.ndarray]:
    """Each report field as one column per report: a bit vector gives one column per bit.

    A field that only some reports carry (a conditional field of the schema)
    gives whether each report carries it, and its values over the reports
    that do.
    """
    from ldp.report_schema import BitVector, PartField, report_schema_of

    out: dict[str, np.ndarray] = {}
    for field in report_schema_of(spec).fields:
        raw = [r.get(field.name) for r in reports]
        if field.presence_flag() is not None:
            out[f"{field.name} carried"] = np.asarray([x is not None for x in raw], dtype=float)
            raw = [x for x in raw if x is not None]
        kind, owner = (field.inner, field.part(spec)) if isinstance(field, PartField) else (field, spec)
        if isinstance(kind, BitVector) and raw:
            width = kind.num_bits(owner)
            packed = np.frombuffer(b"".join(raw), dtype=np.uint8).reshape(len(raw), -1)
            bits = np.unpackbits(packed, axis=1)[:, :width]
            out |= {f"{field.name}[{i}]": bits[:, i] for i in range(width)}
        elif (
            raw and isinstance(raw[0], (int, float, np.integer, np.floating)) and not isinstance(raw[0], bool)
        ):
            out[field.name] = np.asarray(raw, dtype=float)
        else:  # a domain value, a boolean, a string: categories
            out[field.name] = np.unique(np.asarray([repr(x) for x in raw]), return_inverse=True)[1].astype(
                float
            )
    return out


def _homogeneity(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """Two-sample chi-square: categories (at most 16 distinct values) or the pooled sample's 10 quantile bins."""
    pooled = np.concatenate([a, b])
    levels = np.unique(pooled)
    if len(levels) > 16:
        levels = np.unique(np.quantile(pooled, np.linspace(0, 1, 11)[1:-1]))
        index = [np.searchsorted(levels, x, side="right") for x in (a, b)]
        k = len(levels) + 1
    else:
        index = [np.searchsorted(levels, x) for x in (a, b)]
        k = len(levels)
    table = np.array([np.bincount(i, minlength=k) for i in index], dtype=float)
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 0.0, 0
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    return float(((table - expected) ** 2 / expected).sum()), table.shape[1] - 1


def _assert_fields_homogeneous(spec, reports, seeded, alpha: float) -> None:
    """Each report field of ``reports`` against the seeded encoder's: two-sample chi-square, Bonferroni, α family-wise."""
    a, b = _features(spec, reports), _features(spec, seeded)
    tests = {name: _homogeneity(a[name], b[name]) for name in a}
    tests = {name: t for name, t in tests.items() if t[1] > 0}
    assert tests, f"{spec.mechanism}: no report field varies"
    failed = {
        name: (round(stat, 1), dof)
        for name, (stat, dof) in tests.items()
        if stat > chi2.isf(alpha / len(tests), dof)
    }
    assert not failed, failed


def test_real_client_output_is_distributed_as_the_seeded_encoder(spec):
    """Every mechanism: n reports of one value by the real client (CSPRNG) and by the seeded batch encoder.

    Each report field (each bit of a bit vector; a number in 10 pooled-quantile
    bins; a field of many integer values, such as a hash seed, likewise) is
    compared by a two-sample chi-square homogeneity test, Bonferroni over the
    fields: α = 1e-6 family-wise. A memoizing mechanism (RAPPOR) gets a fresh
    client per report, as users are. The seeded encoder itself is checked
    against the declared moments by the repeated-run test below.
    """
    n, alpha = 5_000, 1e-6
    x = example_values(spec, 1)[0]
    if spec.memoized:
        real = [make_encoder(spec).encode(x) for _ in range(n)]
    else:
        encoder = make_encoder(spec)
        real = [encoder.encode(x) for _ in range(n)]
    seeded = list(encode_batch(spec, [x] * n, np.random.default_rng(_seed(spec))).reports(spec))
    _assert_fields_homogeneous(spec, real, seeded, alpha)


def test_secure_batch_output_is_distributed_as_the_seeded_encoder(spec, monkeypatch):
    """Every mechanism's secure batch encoder (the CSPRNG path ``ldp encode`` takes) against the seeded one.

    A batch of 16,384 reports of one value takes the secure path's own samplers: bits rather than words for
    randomized response and Hadamard response (calls of at least ``ECONOMY_MIN_DRAWS`` draws), one-hot
    coins by block inversion (``SECURE_BATCH = "always"``; the NumPy backend unless numba is installed).
    The same two-sample chi-square per report field as the real client's test, α = 1e-6 family-wise.
    """
    from ldp.client import onehot, secure_encode_batch
    from ldp.client.bits import ECONOMY_MIN_DRAWS

    monkeypatch.setattr(onehot, "SECURE_BATCH", "always")
    n, alpha = 2 * ECONOMY_MIN_DRAWS, 1e-6
    x = example_values(spec, 1)[0]
    secure = list(secure_encode_batch(spec, [x] * n).reports(spec))
    seeded = list(encode_batch(spec, [x] * n, np.random.default_rng(_seed(spec))).reports(spec))
    _assert_fields_homogeneous(spec, secure, seeded, alpha)


# -- repeated seeded runs: unbiased, variance as declared, interval coverage -----------------------


def _runs(spec, runs: int, n: int):
    """(estimate, declared std error, ci low, ci high, truth), each runs × rows, of seeded runs of n fixed users.

    None when a table lists nothing comparable or its rows differ between runs
    (heavy hitters: the values discovered vary).
    """
    values = example_values(spec, n)
    batch = encode_batch(spec, values * runs, np.random.default_rng(_seed(spec)))
    out, keys = [], None
    for r in range(runs):
        part = _rows(batch, r * n, (r + 1) * n)
        acc = make_aggregator(spec)
        acc.add_batch(part)
        table = acc.estimate(confidence=0.95)
        found = table_truth(spec, values, part.cohorts, table)
        key = table[[c for c in ("value", "cohort", "bit") if c in table.columns]].to_numpy().tolist()
        if found is None or (r > 0 and key != keys):
            return None
        keys = key
        column, _, truth = found
        out.append([table[c].to_numpy(float) for c in (column, "std_error", "ci_low", "ci_high")] + [truth])
    return [np.array(column) for column in zip(*out)]


def _rows(batch, start: int, stop: int):
    import dataclasses

    fields = {
        f.name: (v[start:stop] if isinstance(v, np.ndarray) else v)
        for f in dataclasses.fields(batch)
        if f.name not in ("spec", "extra")
        for v in [getattr(batch, f.name)]
    }
    extra = {k: v[start:stop] for k, v in batch.extra.items()}
    return type(batch)(spec=batch.spec, extra=extra, **fields)


def test_repeated_runs_unbiased_variance_as_declared_and_coverage(spec):
    """R seeded runs of n fixed users; each check two-sided at α = 1e-4 (Bonferroni over the rows)."""
    runs, n, alpha = 300, 1000, 1e-4
    found = _runs(spec, runs, n)
    if found is None:
        pytest.skip(f"{spec.mechanism}: its tables list nothing comparable, or different rows in each run")
    est, se, low, high, truth = found
    error = est - truth
    rows = error.shape[1]
    a = alpha / rows
    declared = np.mean(se**2, axis=0)
    # unbiased: the mean error over runs within z·sqrt(declared/R)
    z = norm.isf(a / 2)
    assert np.all(np.abs(error.mean(axis=0)) <= z * np.sqrt(declared / runs)), error.mean(axis=0)
    # variance: (R-1)s²/σ² ~ χ²(R-1) for normal estimates (n large)
    ratio = (runs - 1) * error.var(axis=0, ddof=1) / declared
    assert np.all(ratio >= chi2.ppf(a / 2, runs - 1)) and np.all(ratio <= chi2.isf(a / 2, runs - 1)), (
        ratio / (runs - 1)
    )
    # coverage of the 95% interval: Binomial(R, 0.95)
    covered = ((low <= truth) & (truth <= high)).sum(axis=0)
    lo, hi = binom.ppf(a / 2, runs, 0.95), binom.isf(a / 2, runs, 0.95)
    assert np.all((covered >= lo) & (covered <= hi)), covered


# -- the audit of the real client -----------------------------------------------------------------


def test_audit_of_the_real_client_finds_no_violation(spec):
    from ldp.audit import run_audit
    from ldp.audit_sources import python_client_sampler

    with python_client_sampler(spec) as sampler:
        result = run_audit(spec, sampler, 2000, confidence=1 - 1e-6)
    assert result.rows and not result.violation, result.worst
    assert not result.memo_rejected


# -- engines and the collector: the same estimates as a local `ldp aggregate` ---------------------


def _aggregate_cli(spec, paths, tmp_path, *extra) -> pd.DataFrame:
    from ldp.cli import cli

    spec_path, out = tmp_path / "spec.json", tmp_path / f"est{len(extra)}.parquet"
    spec_path.write_text(spec.to_json())
    args = ["aggregate", "--spec", str(spec_path), *map(str, paths), "-o", str(out), *extra]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return pd.read_parquet(out)


def _report_files(spec, tmp_path):
    seed = _seed(spec)
    paths = []
    for i, suffix in enumerate((".jsonl", ".csv", ".parquet")):
        batch = encode_batch(spec, example_values(spec, 200), np.random.default_rng(seed + i))
        paths.append(tmp_path / f"part{i}{suffix}")
        write_reports(batch, paths[-1], spec)
    return paths


def test_dask_engine_equals_the_local_engine(spec, scheduler, tmp_path):
    paths = _report_files(spec, tmp_path)
    local = accumulate_files(spec, [str(p) for p in paths])
    dask = accumulate_files(spec, [str(p) for p in paths], engine="dask", scheduler=scheduler)
    assert (dask.valid, dask.rejected) == (local.valid, 0) == (600, 0)
    assert dask.accumulator == local.accumulator
    pd.testing.assert_frame_equal(
        _aggregate_cli(spec, paths, tmp_path, "--engine", "dask", "--scheduler", scheduler),
        _aggregate_cli(spec, paths, tmp_path),
        check_exact=True,
    )


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    from collector_server import running, store_path

    with running(store_path(tmp_path_factory.mktemp("conformance-collector"))) as server:
        yield server


def test_collector_estimates_equal_ldp_aggregate(spec, collector, tmp_path):
    from collector_server import create_task, envelopes, now_truncated, upload

    task, token = create_task(collector.store, spec, window="1h", time_precision="1m", min_batch=1)
    n = 2000  # enough for the heavy-hitter mechanisms to discover values (a non-empty table)
    batch = encode_batch(spec, example_values(spec, n), np.random.default_rng(_seed(spec)))
    reports = list(batch.reports(spec))
    for start in range(0, n, 500):
        reply = upload(collector, task, envelopes(reports[start : start + 500], now_truncated(task)))
        assert reply.status_code == 200 and (reply.json()["accepted"], reply.json()["rejected"]) == (500, [])
    got = httpx.get(
        f"{collector.url}/v1/tasks/{task.task_id}/estimates",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()
    path = tmp_path / "reports.jsonl"
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in reports))
    expected = _aggregate_cli(spec, [path], tmp_path)
    assert got["n"] == n and len(expected) > 0
    pd.testing.assert_frame_equal(
        pd.DataFrame(got["estimates"]), expected, check_exact=True, check_dtype=False
    )


# -- a third-party mechanism is covered the moment it is installed --------------------------------


def test_an_installed_mechanism_runs_the_whole_suite(tmp_path):
    """The toy package of tests/plugins, installed (its code and a .dist-info with its entry point on
    PYTHONPATH), is parametrized into every conformance check, fast and slow, without being named anywhere."""
    import os
    import re
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).resolve().parents[1]
    site = tmp_path / "site"
    shutil.copytree(tests / "plugins" / "toy_mechanism" / "src" / "toy_mechanism", site / "toy_mechanism")
    info = site / "ldp_toy_mechanism-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ldp-toy-mechanism\nVersion: 1.0.0\n")
    (info / "entry_points.txt").write_text("[ldp.mechanisms]\ntoy-rr = toy_mechanism:DECLARATION\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    files = [str(Path(__file__).with_name(f"test_conformance_{kind}.py")) for kind in ("fast", "slow")]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *files,
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "",
            "-k",
            "toy-rr",
            "-rs",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tests.parent,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    passed = int(re.search(r"(\d+) passed", proc.stdout).group(1))
    assert passed >= 15, proc.stdout[-3000:]
    assert "failed" not in proc.stdout.splitlines()[-1]
