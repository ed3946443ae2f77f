"""``ldp audit``: Clopper–Pearson bounds, every mechanism through the Python client, black-box encoders.

The audit's false-alarm probability is at most 1 − confidence; the tests
that assert "no violation" on correct encoders run at confidence 1 − 1e-6,
so each fails spuriously with probability at most 1e-6 (α of the suite).
"""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import frequency_specs, heavy_hitter_specs, numeric_specs, rappor_specs

import ldp
from ldp.audit import Claim, audit_claims, audit_pairs, clopper_pearson, epsilon_lower_bound, run_audit
from ldp.audit_memo import MemoModel, memo_power, memoization_test, sum_binomial_cdf
from ldp.audit_sources import command_sampler, python_client_sampler
from ldp.cli import cli
from ldp.commands.audit import DEFAULT_SAMPLES, EXIT_VIOLATION
from ldp.errors import ParameterError
from ldp.specs import GRR, LocalHashing, UnaryEncoding
from ldp.specs.key_value import PCKVUE

ALPHA = 1e-6
#: The JavaScript client's mechanism audited in the fast set: GRR, the suite's fast representative of
#: empirical privacy; every other JS encoder is audited in the slow set (and matched to Python's reports
#: bit for bit by js/'s vector tests, `npm test`).
JS_FAST = {"grr"}

# A GRR encoder that really runs at epsilon * FACTOR: values on stdin, report JSON lines on stdout.
# Standard library only (the spec's fingerprint is written in by _scaled_grr), so each run costs an
# interpreter's start, not an import of ldp; r < keep is decided in integers (r = u / 10**12, keep = a / b).
SCALED_GRR = """
import json, math, secrets, sys
from fractions import Fraction
spec_path, factor = sys.argv[1], float(sys.argv[2])
spec = json.load(open(spec_path))
fingerprint = {fingerprint!r}
domain = spec["domain"]
k = len(domain)
e = Fraction(math.exp(spec["epsilon"] * factor)).limit_denominator(10**9)
keep = e / (e + k - 1)  # the keep probability of GRR at epsilon * factor
a, b = keep.numerator, keep.denominator
out = []
for line in sys.stdin:
    index = domain.index(line.rstrip("\\n"))
    if secrets.randbelow(10**12) * b < a * 10**12:  # r < keep
        reported = index
    else:
        other = secrets.randbelow(k - 1)
        reported = other + (other >= index)
    out.append(json.dumps({{"v": 1, "spec": fingerprint, "value": domain[reported]}}))
print("\\n".join(out))
"""


def _scaled_grr(tmp_path: Path, factor: float, epsilon: float = 1.0) -> tuple[Path, str]:
    spec = ldp.GRR(domain=("a", "b"), epsilon=epsilon)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    script = tmp_path / "scaled_grr.py"
    script.write_text(SCALED_GRR.format(fingerprint=spec.fingerprint))
    return spec_path, f"{sys.executable} {script} {spec_path} {factor}"


# -- the statistics ------------------------------------------------------------------------------


def test_clopper_pearson_matches_scipy_exact_interval():
    from scipy.stats import binomtest

    for hits, n in [(0, 50), (3, 100), (50, 100), (100, 100), (999, 10_000)]:
        low, high = clopper_pearson(hits, n, 0.025)
        exact = binomtest(hits, n).proportion_ci(0.95, "exact")
        assert float(low) == pytest.approx(exact.low, abs=1e-12)
        assert float(high) == pytest.approx(exact.high, abs=1e-12)


def test_lower_bound_covers_the_true_ratio_at_its_level():
    """P[bound > ln(p0/p1)] ≤ 2·alpha; checked on 20,000 draws at alpha = 0.01 (z-bound at α = 1e-6)."""
    rng = np.random.default_rng(17)
    n, p0, p1, alpha, draws = 2_000, 0.6, 0.25, 0.01, 20_000
    bounds = epsilon_lower_bound(rng.binomial(n, p0, draws), rng.binomial(n, p1, draws), n, alpha)
    exceed = np.mean(bounds > math.log(p0 / p1))
    limit = 2 * alpha + 4.9 * math.sqrt(2 * alpha / draws)  # 4.9 = z of 1e-6 one-sided
    assert exceed <= limit
    assert np.all(bounds < math.log(p0 / p1) + 0.5)  # and it is not vacuous


def test_delta_is_subtracted_and_a_lower_end_below_delta_gives_no_bound():
    plain = float(epsilon_lower_bound(500, 100, 1000, 0.01))
    assert float(epsilon_lower_bound(500, 100, 1000, 0.01, delta=0.1)) < plain
    assert float(epsilon_lower_bound(5, 1, 1000, 0.01, delta=0.5)) == -math.inf


# -- every registered mechanism through the Python client --------------------------------------------


def _mechanisms(fast: tuple[int, ...] = ()):
    """Every mechanism's spec as a parameter; those at the indices ``fast`` stay in the fast set, the rest are slow."""
    specs = [
        *frequency_specs(epsilon=1.0),
        *rappor_specs(),
        *numeric_specs(epsilon=1.0),
        *heavy_hitter_specs(1.0),
    ]
    return [
        pytest.param(
            s,
            id=f"{s.mechanism}-{getattr(s, 'encoding', '')}{i}",
            marks=[] if not fast or i in fast else [pytest.mark.slow],
        )
        for i, s in enumerate(specs)
    ]


def _first(mechanism: str) -> int:
    """The index in :func:`_mechanisms` of the first spec of ``mechanism``."""
    return next(i for i, p in enumerate(_mechanisms()) if p.values[0].mechanism == mechanism)


def test_the_mechanism_lists_cover_the_registry():
    from ldp.specs import FREQUENCY_MECHANISMS, HEAVY_HITTER_MECHANISMS, NUMERIC_MECHANISMS

    audited = {p.values[0].mechanism for p in _mechanisms()}
    assert audited == {*FREQUENCY_MECHANISMS, *NUMERIC_MECHANISMS, *HEAVY_HITTER_MECHANISMS, "rappor"}


# empirical privacy through the CSPRNG client: GRR (one report) and the first RAPPOR (memoized reports)
# in the fast set, every other mechanism in the slow set
@pytest.mark.parametrize("spec", _mechanisms(fast=(_first("grr"), _first("rappor"))))
def test_every_mechanism_is_consistent_with_its_claim(spec):
    samples = 400 if isinstance(spec, ldp.Rappor) else 2_000
    claims = audit_claims(spec, memo_reports=4)
    with python_client_sampler(spec) as sampler:
        result = run_audit(spec, sampler, samples, confidence=1 - ALPHA, claims=claims)
    assert result.tests == 2 * len(claims) * len(audit_pairs(spec)) + len(result.memo)
    for row in result.rows:
        assert row.lower_bound <= row.claim.epsilon, row
    assert not result.memo_rejected, result.memo
    if isinstance(spec, ldp.Rappor) and spec.f > 0:
        assert {row.claim.reports for row in result.rows} == {1, 4}
        assert [claim.reports for claim, _ in result.memo] == [4]


@pytest.mark.slow
@pytest.mark.parametrize("spec", _mechanisms())
def test_every_mechanism_with_a_large_budget_is_consistent_and_the_bound_is_close(spec):
    """With many samples the bound is above half the claim for the mechanisms whose events are tight."""
    samples = 6_000 if isinstance(spec, ldp.Rappor) else 40_000
    with python_client_sampler(spec) as sampler:
        result = run_audit(spec, sampler, samples, confidence=1 - ALPHA, claims=audit_claims(spec, 4))
    assert not result.violation
    if isinstance(spec, GRR | UnaryEncoding | LocalHashing):
        assert result.worst.lower_bound > 0.5 * spec.epsilon


# -- memoization: one client's r reports share one permanent randomized response --------------------

#: The issue's setting: k = 32 bits, h = 2, 8 cohorts, f = p = 1/2, q = 3/4, r = 8 reports per client.
REDRAW_SPEC = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")


def _null_histograms(rng, model, cells, redrawn=False):
    """Histograms of (client, bit) counts drawn from the memoized (or the re-drawing) model."""
    pmf = model.redrawn_pmf if redrawn else model.memoized_pmf
    return np.stack([rng.multinomial(cells[b], pmf(b)) for b in (0, 1)])


def test_the_memoized_model_is_the_mixture_and_redrawing_the_binomial_of_equal_mean():
    model = MemoModel(Fraction(1, 2), Fraction(1, 2), Fraction(3, 4), 8)
    c = np.arange(9)
    for bit, pi in ((1, 0.75), (0, 0.25)):
        memo, redraw = model.memoized_pmf(bit), model.redrawn_pmf(bit)
        assert memo.sum() == pytest.approx(1) and redraw.sum() == pytest.approx(1)
        assert c @ memo == pytest.approx(c @ redraw)  # the same mean: only the dispersion differs
        excess = (c**2 @ memo) - (c**2 @ redraw)
        assert excess == pytest.approx(8 * 7 * 0.25**2 * pi * (1 - pi))  # r(r-1)(q-p)^2 pi(1-pi)
        assert model.extreme(bit).tolist() == [True] * 4 + [False] * 3 + [True] * 2
    with pytest.raises(ParameterError, match="f = 0 has no PRR"):
        MemoModel(0, Fraction(1, 4), Fraction(3, 4), 8)


def test_sum_binomial_cdf_is_the_exact_convolution():
    from scipy.stats import binom

    # the edges too: t past n0 (where SciPy's bdtr is undefined), an empty side, and certain coins
    for n0, a0, n1, a1 in [
        (30, 0.3, 7, 0.6),
        (7, 0.6, 30, 0.3),
        (0, 0.3, 9, 0.5),
        (12, 0.0, 5, 1.0),
        (5, 1.0, 0, 0.2),
    ]:
        pmf = np.convolve(binom.pmf(np.arange(n0 + 1), n0, a0), binom.pmf(np.arange(n1 + 1), n1, a1))
        for t in (-1, 0, 5, 12, n0, n0 + n1 - 1, n0 + n1, n0 + n1 + 3):
            expected = pmf[: max(t + 1, 0)].sum()
            assert sum_binomial_cdf(t, n0, a0, n1, a1) == pytest.approx(expected, abs=1e-12), (
                t,
                n0,
                a0,
                n1,
                a1,
            )


def test_a_memoizing_client_is_rejected_at_most_alpha_of_the_time():
    """Seeded: 5,000 draws of the memoized model at α = 0.05; the rejection rate is ≤ α + z·SE (z of 1e-6)."""
    rng = np.random.default_rng(24)
    model, cells, alpha, draws = MemoModel(0.5, 0.5, 0.75, 8), (3_000, 200), 0.05, 5_000
    rejected = [
        memoization_test(_null_histograms(rng, model, cells), model, alpha).rejected for _ in range(draws)
    ]
    assert np.mean(rejected) <= alpha + 4.75 * math.sqrt(alpha * (1 - alpha) / draws)


def test_memo_power_is_the_rejection_rate_of_a_redrawing_client():
    """Seeded: 5,000 draws of the re-drawing model; the rate is memo_power ± z·SE (z of 1e-6, two-sided)."""
    rng = np.random.default_rng(25)
    model, cells, alpha, draws = MemoModel(0.5, 0.5, 0.75, 8), (100, 10), 0.05, 5_000
    power = memo_power(model, cells, alpha)
    assert 0.2 < power < 0.8  # a setting where the rate is informative
    rate = np.mean(
        [
            memoization_test(_null_histograms(rng, model, cells, True), model, alpha).rejected
            for _ in range(draws)
        ]
    )
    assert abs(rate - power) <= 4.9 * math.sqrt(power * (1 - power) / draws)


def _redrawing_sampler(spec):
    """A RAPPOR client with the memoization bug: its permanent response is drawn afresh for every report."""
    from ldp.client.encoders import RapporEncoder
    from ldp.client.sampling import sample_expanded, urandom_source
    from ldp.client.state import ClientState
    from ldp.report_check import check_report

    class RedrawingEncoder(RapporEncoder):
        def permanent_bits(self, value):
            true_bits = sum(1 << i for i in set(self.spec.bit_positions(value, self.state.cohort)))
            one, zero = (true_bits, *self._prr_one), (self._full ^ true_bits, *self._prr_zero)
            return sample_expanded(self._width, (one, zero), urandom_source)

    def sample(value, claim, n):
        clients = [RedrawingEncoder(spec, ClientState.new(spec)) for _ in range(n)]
        return [[check_report(spec, c.encode(value)) for _ in range(claim.reports)] for c in clients]

    return sample


def test_a_rappor_client_that_redraws_its_permanent_response_is_caught():
    """Issue 24: the ε bound stays below min(ε∞, 8·ε₁) but the memoization test rejects.

    At confidence 1 − 1e-6 with 100 clients per input (200 clients, 6,400 client bits) the test's
    exact power against this client is above 1 − 1e-6 (memo_power, for the fewest true bits h = 2 can give).
    """
    claims = audit_claims(REDRAW_SPEC, memo_reports=8)
    result = run_audit(REDRAW_SPEC, _redrawing_sampler(REDRAW_SPEC), 100, confidence=1 - ALPHA, claims=claims)
    ((claim, test),) = result.memo
    assert claim.reports == 8 and test.alpha == pytest.approx(ALPHA / result.tests)
    model = MemoModel(REDRAW_SPEC.f, REDRAW_SPEC.p, REDRAW_SPEC.q, 8)
    assert memo_power(model, (200 * 31, 200), test.alpha) > 1 - ALPHA
    assert test.rejected and result.violation, test
    assert memoization_test(np.zeros((2, 9)), model, test.alpha).p_value == 1.0  # no cells: no evidence


def test_the_verdict_names_a_rejected_memoization(tmp_path, monkeypatch):
    import ldp.audit_sources

    @contextlib.contextmanager
    def redrawing(spec):
        yield _redrawing_sampler(spec)

    monkeypatch.setattr(ldp.audit_sources, "python_client_sampler", redrawing)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(REDRAW_SPEC.to_json())
    result = CliRunner().invoke(cli, ["audit", "--spec", str(spec_path), "--samples", "100"])
    assert result.exit_code == EXIT_VIOLATION, result.output
    assert "memoization (8 memoized reports): rejected at alpha=0.01, p=" in result.output
    assert (
        result.output.strip()
        .splitlines()[-1]
        .startswith("verdict: VIOLATION: memoization rejected at alpha=0.01, p=")
    )


# -- power: a broken encoder is flagged, through --encoder-cmd --------------------------------------


def test_a_grr_running_at_1_15_epsilon_is_flagged_with_the_default_budget(tmp_path):
    spec_path, command = _scaled_grr(tmp_path, 1.15)
    result = CliRunner().invoke(cli, ["audit", "--spec", str(spec_path), "--encoder-cmd", command])
    assert result.exit_code == EXIT_VIOLATION, result.output
    assert "verdict: VIOLATION" in result.output
    assert f"{DEFAULT_SAMPLES:,} samples per input" in result.output


def test_the_same_encoder_at_its_claim_is_not_flagged(tmp_path):
    spec_path, command = _scaled_grr(tmp_path, 1.0)
    result = CliRunner().invoke(
        cli,
        [
            "audit",
            "--spec",
            str(spec_path),
            "--encoder-cmd",
            command,
            "--samples",
            "4000",
            "--confidence",
            str(1 - ALPHA),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "verdict: consistent" in result.output


@pytest.mark.slow
def test_the_python_cli_works_as_an_encoder_command(tmp_path):
    spec = ldp.OUE(domain=("a", "b"), epsilon=1.0)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    sampler = command_sampler(spec, f"{sys.executable} -m ldp encode --spec {spec_path} {{values}}")
    result = run_audit(spec, sampler, 400, confidence=1 - ALPHA)
    assert not result.violation


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            spec, id=f"{spec.mechanism}{i}", marks=[] if spec.mechanism in JS_FAST else [pytest.mark.slow]
        )
        for i, spec in enumerate([*frequency_specs(epsilon=1.0), *rappor_specs()])
    ],
)
def test_the_javascript_client_is_consistent(spec, tmp_path, js_dist):
    """The JavaScript client's frequency oracles and RAPPOR (one report per line, each a new client).

    js/ is built by the session's ``js_dist`` fixture (skipped without node, failing then under CI).
    """
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    command = f"node {js_dist / 'dist' / 'cli.js'} --spec {spec_path} /dev/stdin"
    claims = audit_claims(spec, memoized=False)
    # 600 lines of output stay below a pipe's 64 KiB buffer: ldp-encode loses what does not fit
    # when it exits (reported to the JavaScript client's maintainers; the audit refuses the short output).
    result = run_audit(spec, command_sampler(spec, command), 600, confidence=1 - ALPHA, claims=claims)
    assert not result.violation, result.worst


# -- errors ---------------------------------------------------------------------------------------


def _one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (
            "import sys\nfor _ in sys.stdin: print('not json')",
            "output line 1 (value 'a') is not a valid report: report is not valid JSON",
        ),
        (
            'import sys\nfor _ in sys.stdin: print(\'{"v": 1, "spec": "0000000000000000", "value": "a"}\')',
            "is not a valid report: report is for spec",
        ),
        ("import sys; sys.stdin.read()", "printed 0 lines for 10 values of 'a'"),
        (
            "import sys; sys.stderr.write('boom\\n'); sys.exit(5)",
            "exited with status 5 on 10 lines of 'a': boom",
        ),
    ],
)
def test_a_malformed_encoder_is_a_one_line_error(tmp_path, script, expected):
    spec_path, _ = _scaled_grr(tmp_path, 1.0)
    bad = tmp_path / "bad.py"
    bad.write_text(script)
    result = CliRunner().invoke(
        cli,
        ["audit", "--spec", str(spec_path), "--encoder-cmd", f"{sys.executable} {bad}", "--samples", "10"],
    )
    assert expected in _one_line_error(result)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--samples", "10", "--seconds", "2"], "give --samples or --seconds, not both"),
        (["--samples", "1"], "--samples must be at least 2"),
        (["--confidence", "1.5"], "--confidence must be in (0, 1)"),
        (["--seconds", "0"], "--seconds must be positive"),
        (
            ["--encoder-cmd", "no-such-encoder-xyz", "--samples", "10"],
            "command 'no-such-encoder-xyz' not found",
        ),
        (["--encoder-cmd", "", "--samples", "10"], "--encoder-cmd is empty"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, args, expected):
    spec_path, _ = _scaled_grr(tmp_path, 1.0)
    result = CliRunner().invoke(cli, ["audit", "--spec", str(spec_path), *args])
    assert expected in _one_line_error(result)


def test_output_names_the_claims_the_pairs_and_the_verdict(tmp_path):
    spec = ldp.Rappor.basic(("a", "b", "c"), f="1/4", p="1/4", q="3/4")
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    result = CliRunner().invoke(
        cli, ["audit", "--spec", str(spec_path), "--samples", "200", "--memo-reports", "3"]
    )
    assert result.exit_code == 0, result.output
    assert "3 memoized reports" in result.output and "one report" in result.output
    assert "Bonferroni over 9 tests" in result.output  # 8 bounds and the memoization test
    assert "memoization (3 memoized reports): not rejected at alpha=0.00556, p=" in result.output
    assert result.output.strip().splitlines()[-1].startswith("verdict: consistent")


def test_seconds_sizes_the_budget(tmp_path):
    spec_path, _ = _scaled_grr(tmp_path, 1.0)
    # the number of samples depends on the machine's speed, so the draw is not reproducible:
    # audit at the suite's alpha = 1e-6, not the default 5% (a correct encoder failed 1 run in 20)
    result = CliRunner().invoke(
        cli, ["audit", "--spec", str(spec_path), "--seconds", "0.2", "--confidence", str(1 - ALPHA)]
    )
    assert result.exit_code == 0, result.output
    assert "samples per input" in result.output


def test_claims_of_an_approximate_dp_spec_carry_delta():
    spec = next(s for s in numeric_specs() if s.mechanism == "gaussian")
    (claim,) = audit_claims(spec)
    assert claim == Claim("one report", float(spec.epsilon), float(spec.delta))


@pytest.mark.slow
def test_subprocess_exit_status_of_a_violation(tmp_path):
    """The installed entry point exits with status 1 on a violation (not only through click's runner)."""
    spec_path, command = _scaled_grr(tmp_path, 3.0)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ldp",
            "audit",
            "--spec",
            str(spec_path),
            "--encoder-cmd",
            command,
            "--samples",
            "2000",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == EXIT_VIOLATION, done.stdout + done.stderr
    assert json.dumps("VIOLATION")[1:-1] in done.stdout


# -- key-value inputs through --encoder-cmd ---------------------------------------------------------


def test_a_key_value_input_is_written_as_the_json_an_encoder_command_reads():
    """value_text wrote a key-value input as Python's str() of its pairs, which no command line reads."""
    from ldp.audit_sources import value_text

    assert value_text((("a", -1.0), ("b", 0.5))) == '[["a", -1.0], ["b", 0.5]]'
    assert value_text({"a": 0.25}) == '{"a": 0.25}'
    assert value_text(True) == "true" and value_text(0.1) == "0.1" and value_text("x") == "x"


@pytest.mark.slow
def test_ldp_encode_of_a_key_value_spec_audits_through_encoder_cmd(tmp_path):
    """The audit of a key-value encoder command (here ``ldp encode`` itself) runs and finds it consistent."""
    spec = PCKVUE(domain=["a", "b", "c"], epsilon=2.0)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    command = f"{sys.executable} -m ldp encode --spec {spec_path} {{values}}"
    sampler = command_sampler(spec, command)
    result = run_audit(spec, sampler, 2000, confidence=1 - ALPHA, claims=audit_claims(spec, memoized=False))
    assert not result.violation, result.worst
