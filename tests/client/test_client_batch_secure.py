"""The secure batch path: every coin from os.urandom, exact distributions, empirical ε, and ``ldp encode``.

Distribution tests are chi-square (or z) tests against the spec's exact
probabilities at a family-wise significance level ALPHA = 1e-6 (Bonferroni
over the comparisons of a test). The OS CSPRNG cannot be seeded, so ALPHA is
each test's false-failure probability. The exact-ε tests reuse the checks of
tests/client/test_client_privacy.py (frequencies within z·SE, and no output whose
probability ratio is significantly above e^ε) on the batch path, on both
random sources.
"""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import every_spec_shape, frequency_specs
from scipy import stats
from test_client_privacy import N, check_frequencies, check_ratio

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.io import read_reports
from ldp.cli import cli
from ldp.client import ClientState, GeneratorSource, SystemRandomSource, encode_batch, make_encoder
from ldp.client.batch import secure_encode_batch
from ldp.client.cli import state_path
from ldp.client.randomness import bernoulli, uniform_below, uniform_below_each
from ldp.client.sampling import lanes_to_packed
from ldp.hashing import LH_SEED_SPACE, lh_bucket
from ldp.report import Report, unpack_bits
from ldp.specs.numeric import _TwoPoint, numeric_spec

ALPHA = 1e-6
USERS = 200_000
SOURCES = ["seeded", "csprng"]


def source_of(kind: str, seed: int):
    return np.random.default_rng(seed) if kind == "seeded" else SystemRandomSource()


def a_value(spec):
    """A valid input of ``spec``."""
    if spec.mechanism == "rappor":
        return {"bloom": "some value", "basic": spec.domain[0] if spec.domain else None, "boolean": True}[
            spec.encoding
        ]
    if hasattr(spec, "example_inputs"):  # a spec whose inputs are not domain values (key-value sets)
        return spec.example_inputs(1)[0]
    if hasattr(spec, "domain"):
        return spec.domain[0]
    if spec.report_kind != "numeric":  # heavy hitters: any short string
        return "u0"
    return 0.25


def chi_square_pvalue(counts: np.ndarray, probabilities: np.ndarray) -> float:
    """Chi-square goodness of fit; categories expected fewer than 5 times are pooled into one."""
    expected = probabilities * counts.sum()
    small = expected < 5
    if small.any():
        counts = np.append(counts[~small], counts[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    return float(stats.chisquare(counts, expected).pvalue)


# -- the source -------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", every_spec_shape(), ids=lambda s: f"{s.mechanism}-{getattr(s, 'encoding', '')}"
)
def test_secure_batch_draws_from_os_urandom_and_never_from_numpy(spec, monkeypatch):
    drawn = []
    real_urandom = os.urandom
    monkeypatch.setattr(os, "urandom", lambda n: drawn.append(n) or real_urandom(n))

    def refuse(*args, **kwargs):
        raise AssertionError("the secure path used a NumPy generator")

    for name in ("words", "integers"):
        monkeypatch.setattr(GeneratorSource, name, refuse)
    for name in ("default_rng", "random", "randint", "rand", "integers"):
        monkeypatch.setattr(np.random, name, refuse, raising=False)
    n = 5_000
    batch = secure_encode_batch(spec, [a_value(spec)] * n)
    assert len(batch) == n
    assert sum(drawn) >= 2 * n  # every report's coins: at least 16 random bits each


def test_secure_encode_batch_refuses_a_source_that_is_not_secure():
    spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    with pytest.raises(ldp.ParameterError, match="CSPRNG"):
        secure_encode_batch(spec, ["a"], source=GeneratorSource(np.random.default_rng(0)))


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize(
    "bound",
    [2, 3, 64, 255, 256, 1023, 1 << 16, (1 << 16) + 1, 1 << 20, (1 << 40) + 3, LH_SEED_SPACE, (1 << 64) - 59],
)
def test_uniform_integers_are_uniform(bound, kind):
    source = ldp.client.randomness.as_source(source_of(kind, bound % 1000))
    draws = uniform_below(source, bound, USERS)
    assert int(draws.min()) >= 0 and int(draws.max()) < bound
    bins = min(bound, 64)
    edges = [math.ceil(k * bound / bins) for k in range(bins + 1)]  # bin k holds [edges[k], edges[k+1])
    sizes = np.diff(np.array(edges, dtype=float))
    counts = (
        np.histogram(draws.astype(float), bins=np.array(edges, dtype=float))[0] if bound < 1 << 53 else None
    )
    if counts is None:  # beyond float precision: bin by the top bits instead
        counts = np.bincount((draws.astype(np.uint64) >> np.uint64(58)).astype(np.int64), minlength=64)
        sizes = np.array([min(bound, (k + 1) << 58) - min(bound, k << 58) for k in range(64)], dtype=float)
        assert not counts[sizes == 0].any()
        counts, sizes = counts[sizes > 0], sizes[sizes > 0]
    assert chi_square_pvalue(counts, sizes / sizes.sum()) > ALPHA


class ListedUnits:
    """A random source handing out given words first, then a seeded generator's (not secure: tests only)."""

    secure = False

    def __init__(self, words: np.ndarray):
        self._words = np.asarray(words, dtype=np.uint64)
        self._rest = GeneratorSource(np.random.default_rng(3))  # insecure-ok: a test's replayable source

    def words(self, n: int) -> np.ndarray:
        head, self._words = self._words[:n], self._words[n:]
        return np.concatenate([head, self._rest.words(n - head.size)])

    def integers(self, bound: int, n: int) -> np.ndarray:
        return uniform_below(self, bound, n)


@pytest.mark.parametrize(("bits", "bound"), [(8, 3), (8, 200), (8, 256), (16, 257), (16, 1000), (16, 40_000)])
def test_uniform_below_each_maps_every_unit_exactly(bits, bound):
    """Lemire's rule over all 2^L units of one size: each value in [0, b) has exactly ⌊2^L/b⌋ accepted units.

    The source hands out every unit once (then redraws for the rejected ones);
    an accepted unit u must give ⌊u·b / 2^L⌋ and be accepted iff u·b mod 2^L ≥
    2^L mod b, so the first draws' accepted values are exactly uniform. The
    row of bound 1 reads nothing and gives zeros.
    """
    space = 1 << bits
    units = np.arange(space, dtype=np.uint64)
    source = ListedUnits(units.astype(f"u{bits // 8}").view(np.uint64))  # the units in order, 8 or 4 a word
    draws = uniform_below_each(source, [bound, 1], space)
    assert draws.shape == (2, space) and not draws[1].any()
    accepted = (units * np.uint64(bound)) % np.uint64(space) >= np.uint64(space % bound)
    assert np.array_equal(draws[0][accepted], (units[accepted] * np.uint64(bound)) >> np.uint64(bits))
    assert (
        np.bincount(draws[0][accepted].astype(np.int64), minlength=bound).tolist() == [space // bound] * bound
    )
    assert int(draws[0].max()) < bound  # the redrawn ones too


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize(
    "p", [Fraction(1, 3), Fraction(5, 8), Fraction(48886180638618267, 1 << 64), Fraction(1, 1 << 40)]
)
def test_exact_coins(p, kind):
    source = ldp.client.randomness.as_source(source_of(kind, 5))
    coins = bernoulli(source, p, USERS)
    se = math.sqrt(float(p * (1 - p)) / USERS)
    assert abs(coins.mean() - float(p)) < stats.norm.isf(ALPHA / 2) * se + 1e-12


# -- each mechanism's distribution on the secure path -----------------------------------


@pytest.mark.parametrize("spec", [s for s in frequency_specs() if s.mechanism in ("grr", "binary-rr")])
def test_grr_outputs_chi_square(spec):
    true = spec.domain[1]
    batch = secure_encode_batch(spec, [true] * USERS)
    counts = np.bincount(batch.values, minlength=spec.domain_size)
    expected = np.full(spec.domain_size, float(spec.q))
    expected[1] = float(spec.p)
    assert chi_square_pvalue(counts, expected) > ALPHA


@pytest.mark.parametrize("mechanism", [ldp.OLH, ldp.BLH])
def test_local_hashing_outputs_chi_square(mechanism):
    spec = mechanism(domain=tuple(range(20)), epsilon=1.0)
    batch = secure_encode_batch(spec, [3] * USERS)
    hashed = np.array([lh_bucket(int(s), 3, spec.g) for s in batch.seeds[:20_000]])
    shift = (batch.values[:20_000] - hashed) % spec.g  # 0 w.p. p, each other shift w.p. q
    expected = np.full(spec.g, float(spec.q))
    expected[0] = float(spec.p)
    assert chi_square_pvalue(np.bincount(shift, minlength=spec.g), expected) > ALPHA / 2
    # seeds uniform over the hash family (64 bins of exact sizes)
    edges = np.array([math.ceil(k * LH_SEED_SPACE / 64) for k in range(65)], dtype=np.float64)
    counts = np.histogram(batch.seeds.astype(np.float64), bins=edges)[0]
    assert chi_square_pvalue(counts, np.diff(edges) / LH_SEED_SPACE) > ALPHA / 2


@pytest.mark.parametrize(
    "name", ["duchi", "stochastic-rounding", "piecewise", "hybrid", "laplace", "gaussian"]
)
def test_numeric_outputs_chi_square(name):
    spec = numeric_spec(name, 1.0, 0.0, 1.0, delta=1e-5)
    if isinstance(spec, _TwoPoint):  # at the top of the range the input side is 1: P[high] = p
        value, outputs = 1.0, spec.support
        probabilities = np.array([float(1 - spec.p), float(spec.p)])
    else:
        table = spec.table
        i = table.K // 4  # a grid point: no input rounding
        value = i / table.K
        row = np.array([Fraction(int(w), table.total) for w in table.dense()[i]], dtype=object)
        outputs, probabilities = table.outputs, row.astype(float)
        if name == "hybrid":  # PM with probability alpha, else Duchi from the side i/K
            alpha, duchi = spec.alpha, spec.duchi
            high = Fraction(i, table.K) * duchi.p + (1 - Fraction(i, table.K)) * (1 - duchi.p)
            outputs = np.concatenate([outputs, duchi.support])
            probabilities = np.concatenate(
                [probabilities * float(alpha), [float((1 - alpha) * (1 - high)), float((1 - alpha) * high)]]
            )
    batch = secure_encode_batch(spec, [value] * USERS)
    index = {v: k for k, v in enumerate(outputs.tolist())}
    counts = np.bincount([index[v] for v in batch.values.tolist()], minlength=len(outputs))
    assert chi_square_pvalue(counts, probabilities / probabilities.sum()) > ALPHA


# -- exact ε on the batch path (tests/client/test_client_privacy.py's checks) ----------------------


@pytest.mark.parametrize("kind", SOURCES)
def test_batch_grr_frequencies_and_ratio(kind):
    spec = ldp.GRR(domain=("a", "b", "c", "d"), epsilon=1.0)
    freqs = []
    for seed, x in enumerate(("a", "b")):
        counts = np.bincount(encode_batch(spec, [x] * N, source_of(kind, seed)).values, minlength=4)
        expected = np.full(4, float(spec.q))
        expected[spec.index_of(x)] = float(spec.p)
        check_frequencies(counts / N, expected, N, 8)
        freqs.append(counts / N)
    check_ratio(freqs[0], freqs[1], math.exp(spec.epsilon), N, 8)


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("mechanism", [ldp.OUE, ldp.SUE])
def test_batch_unary_frequencies_and_ratio(mechanism, kind):
    spec = mechanism(domain=tuple(range(10)), epsilon=1.0)
    freqs = []
    for x in (0, 1):
        bits = np.unpackbits(encode_batch(spec, [x] * N, source_of(kind, x)).bits, axis=1)[:, :10]
        expected = np.full(10, float(spec.q))
        expected[x] = float(spec.p)
        check_frequencies(bits.mean(axis=0), expected, N, 40)
        freqs.append(bits.mean(axis=0))
    bit_ratio = max(float(spec.p / spec.q), float((1 - spec.q) / (1 - spec.p)))
    check_ratio(freqs[0], freqs[1], bit_ratio, N, 20)


@pytest.mark.parametrize("kind", SOURCES)
def test_batch_rappor_fresh_clients_bits_and_ratio(kind):
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=1, f="1/2", p="1/2", q="3/4")
    one, zero = float(spec.prob_one_given_one), float(spec.prob_one_given_zero)
    freqs = []
    for seed, value in enumerate(("apple", "banana")):
        bits = np.unpackbits(encode_batch(spec, [value] * N, source_of(kind, seed)).bits, axis=1)
        expected = np.full(16, zero)
        expected[spec.bit_positions(value, 0)] = one
        check_frequencies(bits.mean(axis=0), expected, N, 32)
        freqs.append(bits.mean(axis=0))
    check_ratio(freqs[0], freqs[1], max(one / zero, (1 - zero) / (1 - one)), N, 32)


@pytest.mark.parametrize("kind", SOURCES)
def test_batch_local_hashing_frequencies_and_ratio(kind):
    spec = ldp.OLH(domain=tuple(range(6)), epsilon=1.0)
    rates = []
    for x in (0, 1):
        batch = encode_batch(spec, [x] * N, source_of(kind, x))
        seeds, values = batch.seeds.tolist(), batch.values.tolist()
        own = np.array([lh_bucket(s, x, spec.g) for s in seeds])
        other = np.array([lh_bucket(s, 1 - x, spec.g) for s in seeds])
        differ = own != other
        hits = (np.array(values) == own).mean()
        other_hits = (np.array(values)[differ] == other[differ]).mean()
        check_frequencies(np.array([hits]), np.array([float(spec.p)]), N, 4)
        check_frequencies(np.array([other_hits]), np.array([float(spec.q)]), int(differ.sum()), 4)
        rates.append((hits, other_hits, int(differ.sum())))
    check_ratio(
        np.array([rates[0][0]]), np.array([rates[1][1]]), math.exp(spec.epsilon), N, 2, n_b=rates[1][2]
    )


# -- persistent RAPPOR clients (ldp encode --state) ------------------------------------


def _write_spec(tmp_path, spec) -> str:
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json())
    return str(path)


def _encode(*args) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["encode", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def test_state_prr_is_the_single_encoders_prr(tmp_path):
    """With an identity IRR (p = 0, q = 1) a report's bits are its PRR: the keyed PRF's, per (client, value)."""
    spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p=0, q=1)
    rows = [(c, f"v{(c * 7 + k) % 3}") for k in range(4) for c in range(25)]
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n" + "".join(f"{c},{v}\n" for c, v in rows))
    code, out, err = _encode("--spec", _write_spec(tmp_path, spec), users, "--state", tmp_path / "states")
    assert code == 0, err
    reports = [Report.from_json(line) for line in out.splitlines()]
    assert len(reports) == len(rows)
    for (client, value), report in zip(rows, reports):
        state = ClientState.load(state_path(tmp_path / "states", client), spec)
        encoder = make_encoder(spec, state=state)
        assert report.cohort == state.cohort
        assert report.bits == lanes_to_packed(encoder.permanent_bits(value), spec.num_bits)


def test_state_irr_bits_have_their_probabilities(tmp_path, monkeypatch):
    """One client, one value, many reports (several chunks): P[S=1 | B'=1] = q, P[S=1 | B'=0] = p."""
    import ldp.client.cli as client_cli

    monkeypatch.setattr(client_cli, "_CHUNK", 7_000)
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/4", q="3/4")
    users = tmp_path / "users.csv"
    reports = 20_000
    users.write_text("client_id,value\n" + "7,apple\n" * reports)
    code, out, err = _encode("--spec", _write_spec(tmp_path, spec), users, "--state", tmp_path / "s")
    assert code == 0, err
    bits = np.array([unpack_bits(Report.from_json(line).bits, 16) for line in out.splitlines()])
    state = ClientState.load(state_path(tmp_path / "s", 7), spec)
    prr = make_encoder(spec, state=state).permanent_bits("apple")
    expected = np.array([float(spec.q) if prr >> i & 1 else float(spec.p) for i in range(16)])
    check_frequencies(bits.mean(axis=0), expected, reports, 16)


# -- ldp encode without --seed ------------------------------------------------------------


def _estimates_of_file(spec, path):
    """The estimate table of a report file, read as ``ldp aggregate`` reads it (every line must be valid).

    The batch reader, not ``Report.from_json`` and ``add`` line by line: the same estimates, without a Python
    object and a validation call per report (10,000–20,000 reports a test).
    """
    accumulator = make_aggregator(spec)
    for chunk in read_reports([path], spec):
        assert not chunk.rejects, chunk.rejects[:3]
        accumulator.add_batch(chunk.batch)
    return accumulator.estimate()


@pytest.mark.parametrize(
    "spec",
    [
        ldp.GRR(domain=("a", "b", "c"), epsilon=2.0),
        ldp.OUE(domain=("a", "b", "c"), epsilon=2.0),
        ldp.OLH(domain=("a", "b", "c"), epsilon=2.0),
        ldp.Rappor.basic(("a", "b", "c"), f="1/4", p="1/4", q="3/4"),
    ],
    ids=lambda s: s.mechanism,
)
@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_encode_without_seed_matches_the_format_and_the_estimates(tmp_path, spec, suffix, monkeypatch):
    import ldp.client.cli as client_cli

    monkeypatch.setattr(client_cli, "_CHUNK", 4_096)  # several chunks
    truth = {"a": 6_000, "b": 3_000, "c": 1_000}
    values = tmp_path / "values.txt"
    values.write_text("".join(f"{v}\n" for v, k in truth.items() for _ in range(k)))
    spec_path = _write_spec(tmp_path, spec)
    secure, seeded = tmp_path / f"secure{suffix}", tmp_path / f"seeded{suffix}"
    assert _encode("--spec", spec_path, values, "-o", secure)[0] == 0
    code, _, err = _encode("--spec", spec_path, values, "-o", seeded, "--seed", "3")
    assert code == 0 and "NOT private" in err
    secure_lines, seeded_lines = secure.read_text().splitlines(), seeded.read_text().splitlines()
    header = suffix == ".csv"
    assert len(secure_lines) == len(seeded_lines) == sum(truth.values()) + header
    if header:
        assert secure_lines[0] == seeded_lines[0]  # the same header
        return
    assert {tuple(json.loads(line)) for line in secure_lines} == {
        tuple(json.loads(line)) for line in seeded_lines
    }
    table = _estimates_of_file(spec, secure)
    z = stats.norm.isf(ALPHA / (2 * len(truth)))
    for row in table.itertuples():
        assert abs(row.estimate - truth[row.value]) < z * row.std_error


def test_encode_without_seed_numeric_mean(tmp_path):
    spec = ldp.numeric_spec("piecewise", 1.0, 0.0, 10.0)
    rng = np.random.default_rng(0)
    numbers = rng.uniform(0, 10, 20_000)
    values = tmp_path / "values.csv"
    values.write_text("value\n" + "".join(f"{x!r}\n" for x in numbers.tolist()))
    code, out, err = _encode("--spec", _write_spec(tmp_path, spec), values)
    assert code == 0, err
    reports = tmp_path / "reports.jsonl"
    reports.write_text(out)
    table = _estimates_of_file(spec, reports)
    estimate, se = float(table["mean"].iloc[0]), float(table["std_error"].iloc[0])
    assert abs(estimate - numbers.mean()) < stats.norm.isf(ALPHA / 2) * se


def test_encode_budget_across_chunks(tmp_path, monkeypatch):
    """Budgets are charged row by row in input order across chunk boundaries; refused rows are listed."""
    import ldp.client.cli as client_cli

    monkeypatch.setattr(client_cli, "_CHUNK", 3)
    spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n" + "".join(f"{1 + i % 2},{'ab'[i % 2]}\n" for i in range(10)))
    out = tmp_path / "o.jsonl"
    code, _, err = _encode(
        "--spec", _write_spec(tmp_path, spec), users, "--state", tmp_path / "s", "--budget", "3", "-o", out
    )
    assert code == 3, err
    assert "4 rows refused" in err and "rows 7, 8, 9, 10" in err
    assert len(out.read_text().splitlines()) == 6


def test_encode_bad_value_names_its_row_in_a_later_chunk(tmp_path, monkeypatch):
    import ldp.client.cli as client_cli

    monkeypatch.setattr(client_cli, "_CHUNK", 4)
    spec = ldp.OUE(domain=("a", "b"), epsilon=1.0)
    values = tmp_path / "values.txt"
    values.write_text("a\nb\n" * 5 + "zzz\n")
    code, _, err = _encode("--spec", _write_spec(tmp_path, spec), values, "-o", tmp_path / "o.jsonl")
    assert code == 2 and "row 11" in err and "zzz" in err


def test_the_pooled_csprng_words_are_never_handed_out_twice():
    """Small requests share a pooled os.urandom block: consecutive requests get disjoint words."""
    source = SystemRandomSource(block_bytes=1 << 12)
    words = np.concatenate([source.words(k) for k in (1, 7, 100, 300, 50, 600)])
    assert np.unique(words).size == words.size  # 1,058 uniform 64-bit words: a repeat has probability < 2^-44


def test_a_forked_child_does_not_reuse_its_parents_pool():
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    source = SystemRandomSource()
    source.words(1)  # the pool is filled
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next words, then leave at once
        os.write(write, source.words(4).tobytes())
        os._exit(0)
    os.waitpid(pid, 0)
    child = np.frombuffer(os.read(read, 32), dtype=np.uint64)
    os.close(read)
    os.close(write)
    assert not np.isin(child, source.words(4)).any()


@pytest.mark.parametrize("blocks", [1, 4])
def test_hr_outputs_chi_square(blocks):
    """HR on the secure path (bit samplers: the batch is large): P[y] = p_in on C_x, p_out elsewhere."""
    spec = ldp.HR(domain=tuple(range(100)), epsilon=1.0, blocks=blocks)
    batch = secure_encode_batch(spec, [7] * USERS)
    expected = np.full(spec.outputs, float(spec.out_probability))
    expected[spec.output_set(7)] = float(spec.in_probability)
    assert chi_square_pvalue(np.bincount(batch.values, minlength=spec.outputs), expected) > ALPHA
