"""Exact privacy: the worst-case probability ratio, computed from each spec's
own probabilities by enumerating outputs, equals the e^ε the spec reports,
never exceeds the claim, and a spec claiming less than it gives is rejected."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from conftest import SMALL_DOMAIN, frequency_specs, heavy_hitter_specs

import ldp
import ldp.specs.loloha
import ldp.specs.longitudinal
from ldp.errors import ParameterError
from ldp.exact import exp_lower_bound
from ldp.specs.dbitflip import DBitFlip


def grr_channel(spec, x):
    """P[output = y | input x] for every y, from the spec's p and q."""
    return [spec.p if y == x else spec.q for y in range(spec.domain_size)]


def ue_channel(spec, x):
    """P[bit vector | x] for all 2^d vectors (small d)."""
    d = spec.domain_size
    out = {}
    for bits in itertools.product((0, 1), repeat=d):
        prob = Fraction(1)
        for i, b in enumerate(bits):
            one = spec.p if i == x else spec.q
            prob *= one if b else 1 - one
        out[bits] = prob
    return out


def lh_channel(spec, x, hashed):
    """P[y | x, hash] for a fixed hash (the seed is independent of x)."""
    h = hashed[x]
    return [spec.p if y == h else spec.q for y in range(spec.g)]


def hr_channel(spec, x):
    """P[y | x] for every output y, from the paper's layout: x's block and row of the Sylvester matrix."""
    from scipy.linalg import hadamard

    b, half = spec.block_size, spec.block_size // 2
    block, row = divmod(x, b - 1)
    favoured = {block * b + int(c) for c in (hadamard(b)[row + 1] == 1).nonzero()[0]}
    inside, outside = spec.p / half, (1 - spec.p) / (spec.outputs - half)
    return [inside if y in favoured else outside for y in range(spec.outputs)]


def sketch_channel(spec, x, hashed):
    """P[output | x] within one sketch row (the row is independent of x) when value i hashes to hashed[i]."""
    h, m = hashed[x], spec.m
    if isinstance(spec, ldp.CMS):  # the m bits: bit h is 1 with p, every other bit with q = 1 - p
        out = {}
        for bits in itertools.product((0, 1), repeat=m):
            prob = Fraction(1)
            for i, b in enumerate(bits):
                one = spec.p if i == h else spec.q
                prob *= one if b else 1 - one
            out[bits] = prob
        return out
    sign = [
        1 - bin(col & h).count("1") % 2 for col in range(m)
    ]  # HCMS: (column, bit), bit 1 for H[col, h] = +1
    return {
        (col, b): Fraction(1, m) * (spec.p if b == sign[col] else spec.q) for col in range(m) for b in (0, 1)
    }


def ss_channel(spec, x):
    """P[subset | x] for every omega-subset: it holds x w.p. p, the other members uniform without replacement."""
    d, w = spec.domain_size, spec.omega
    holding, other = spec.p / math.comb(d - 1, w - 1), (1 - spec.p) / math.comb(d - 1, w)
    return {s: holding if x in s else other for s in itertools.combinations(range(d), w)}


def chain_channel(spec, x):
    """A longitudinal chain's one report: round 1 (p1, q1) then round 2 (p2, q2), summed over the memo."""
    d = spec.domain_size
    if isinstance(spec, ldp.specs.longitudinal.LGRR):  # memo m w.p. p1 (m = x) or q1, then GRR(p2) of m
        first = [spec.p1 if m == x else spec.q1 for m in range(d)]
        return [sum(first[m] * (spec.p2 if y == m else spec.q2) for m in range(d)) for y in range(d)]
    out = {}
    for bits in itertools.product((0, 1), repeat=d):  # each bit: memo bit 1 w.p. p1 or q1, then p2 or q2
        prob = Fraction(1)
        for i, b in enumerate(bits):
            memo = spec.p1 if i == x else spec.q1
            one = memo * spec.p2 + (1 - memo) * spec.q2
            prob *= one if b else 1 - one
        out[bits] = prob
    return out


def dbitflip_channel(spec, x):
    """P[(sampled buckets, sent bits) | x]: a uniform d-subset, then bit j is 1 w.p. p′ (j = x) or q′ (j ≠ x)."""
    d, b = spec.d, spec.domain_size
    out = {}
    for sampled in itertools.combinations(range(b), d):
        for bits in itertools.product((0, 1), repeat=d):
            prob = Fraction(1, math.comb(b, d))
            for j, bit in zip(sampled, bits):
                one = spec.sent_one if j == x else spec.sent_zero
                prob *= one if bit else 1 - one
            out[(sampled, bits)] = prob
    return out


def worst_ratio(channels):
    best = Fraction(0)
    for a, b in itertools.permutations(channels, 2):
        keys = a.keys() if isinstance(a, dict) else range(len(a))
        for y in keys:
            best = max(best, a[y] / b[y])
    return best


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_heavy_hitter_ratio_equals_claim(epsilon):
    """Given its group (uniform, the same under every input), a report is local hashing over the prefix keys."""
    for spec in heavy_hitter_specs(epsilon):
        ratio = Fraction(0)
        for hashed in itertools.product(range(min(spec.g, 3)), repeat=3):  # every collision pattern of 3 keys
            ratio = max(ratio, worst_ratio([lh_channel(spec, x, hashed) for x in range(3)]))
        assert ratio == spec.privacy_ratio
        assert ratio <= exp_lower_bound(epsilon)
        assert spec.epsilon_achieved <= epsilon
        assert epsilon - spec.epsilon_achieved < 1e-12
        assert spec.p + (spec.g - 1) * spec.q == 1
        # Just above the claim fails: the same probabilities claiming a hair less are refused.
        data = {**spec.to_dict(), "epsilon": spec.epsilon_achieved * (1 - 1e-6)}
        with pytest.raises(ParameterError, match="claims epsilon"):
            ldp.load_spec(data)


def _lh_ratio(spec, d):
    # A hash matters only through which inputs collide: buckets from range(min(g, d))
    # already realize every collision pattern of d inputs.
    ratio = Fraction(0)
    for hashed in itertools.product(range(min(spec.g, d)), repeat=d):
        ratio = max(ratio, worst_ratio([lh_channel(spec, x, hashed) for x in range(d)]))
    return ratio


def loloha_channel(spec, bucket):
    """P[y | the user's value hashes to ``bucket``]: GRR(p₁) over g memoized, then GRR(p₂) of the memo."""
    g = spec.g
    q1, q2 = (1 - spec.p1) / (g - 1), (1 - spec.p2) / (g - 1)
    same = (
        spec.p1 * spec.p2 + (1 - spec.p1) * q2
    )  # y = bucket: memo kept then kept, or memo moved then moved back
    other = spec.p1 * q2 + q1 * spec.p2 + (g - 2) * q1 * q2  # y ≠ bucket
    return [same if y == bucket else other for y in range(g)]


def _loloha_ratio(spec, d):
    # the public pool's hash index is independent of the value: the worst hash (inputs in different buckets) rules
    ratio = Fraction(0)
    for hashed in itertools.product(range(min(spec.g, d)), repeat=d):
        ratio = max(ratio, worst_ratio([loloha_channel(spec, hashed[x]) for x in range(d)]))
    return ratio


def _sketch_ratio(spec, d):
    ratio = Fraction(0)
    small = type(spec)(spec.domain, spec.epsilon, k=1, m=4, p=spec.p)  # 2^4 outputs; the ratio is m's
    for hashed in itertools.product(range(min(small.m, d)), repeat=d):
        ratio = max(ratio, worst_ratio([sketch_channel(small, x, hashed) for x in range(d)]))
    return ratio


def _distribution_ratio(channel):
    def ratio(spec, d):
        assert sum(channel(spec, 0).values() if isinstance(channel(spec, 0), dict) else channel(spec, 0)) == 1
        return worst_ratio([channel(spec, x) for x in range(d)])

    return ratio


#: The exact worst-case ratio of each family, from first principles (its output distribution), by spec class.
EXACT_RATIO = {
    ldp.GRR: _distribution_ratio(grr_channel),
    ldp.specs.UnaryEncoding: _distribution_ratio(ue_channel),
    ldp.HR: _distribution_ratio(hr_channel),
    ldp.specs.sketch.SketchSpec: _sketch_ratio,
    ldp.SubsetSelection: _distribution_ratio(ss_channel),
    ldp.specs.LocalHashing: _lh_ratio,
    ldp.specs.longitudinal.LongitudinalChain: _distribution_ratio(chain_channel),
    DBitFlip: _distribution_ratio(dbitflip_channel),
    ldp.specs.loloha.LOLOHA: _loloha_ratio,
}


def exact_ratio(spec, d):
    """The reference ratio of ``spec``'s family (its class's nearest entry in EXACT_RATIO); a new family fails."""
    for klass in type(spec).__mro__:
        if klass in EXACT_RATIO:
            return EXACT_RATIO[klass](spec, d)
    pytest.fail(
        f"no reference output distribution for {type(spec).__name__} ({spec.mechanism}) in EXACT_RATIO"
    )


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_frequency_oracles_ratio_equals_claim(epsilon):
    for spec in frequency_specs(epsilon, SMALL_DOMAIN[:3]):
        d = spec.domain_size
        ratio = exact_ratio(spec, d)
        assert ratio == spec.privacy_ratio
        # Never above the claim (certified lower bound of e^eps) and tight to ~1e-13.
        assert ratio <= exp_lower_bound(epsilon)
        assert spec.epsilon_achieved <= epsilon
        assert epsilon - spec.epsilon_achieved < 1e-12
        # Probabilities are a distribution.
        if isinstance(spec, ldp.GRR):
            assert spec.p + (d - 1) * spec.q == 1


def test_grr_and_ue_probabilities_match_formulas():
    e = math.e
    grr = ldp.GRR(domain=range(16), epsilon=1)
    assert float(grr.p) == pytest.approx(e / (e + 15), rel=1e-15)
    oue = ldp.OUE(domain=range(16), epsilon=1)
    assert oue.p == Fraction(1, 2) and float(oue.q) == pytest.approx(1 / (e + 1), rel=1e-15)
    sue = ldp.SUE(domain=range(16), epsilon=1)
    assert float(sue.p) == pytest.approx(math.exp(0.5) / (math.exp(0.5) + 1), rel=1e-14)
    olh = ldp.OLH(domain=range(16), epsilon=1)
    assert olh.g == 4 and float(olh.p) == pytest.approx(e / (e + 3), rel=1e-15)


def test_var_star_table_of_formulas_sheet():
    # docs/mechanisms.md#choosing example at eps = 1, d = 16.
    table = ldp.variance_table(1.0, 16)
    assert table["grr"] == pytest.approx(5.66243, abs=1e-5)
    assert table["sue"] == pytest.approx(3.91770, abs=1e-5)
    assert table["oue"] == pytest.approx(3.68269, abs=1e-5)
    assert table["blh"] == pytest.approx(4.68269, abs=1e-5)


def test_claim_below_probabilities_is_rejected():
    honest = ldp.GRR(domain=SMALL_DOMAIN, epsilon=1.0)
    with pytest.raises(ParameterError, match="claims epsilon"):
        ldp.GRR(domain=SMALL_DOMAIN, epsilon=0.999999, p=honest.p)
    with pytest.raises(ParameterError, match="claims epsilon"):
        ldp.OUE(domain=SMALL_DOMAIN, epsilon=1.0, p="1/2", q="1/4")  # gives ln 3 > 1
    # Just at the claim: accepted; the JSON round trip re-checks it.
    ok = ldp.OUE(domain=SMALL_DOMAIN, epsilon=math.log(3) + 1e-9, p="1/2", q="1/4")
    assert ldp.load_spec(ok.to_json()) == ok
    tampered = ok.to_dict() | {"epsilon": 1.0}
    with pytest.raises(ParameterError, match="claims epsilon"):
        ldp.load_spec(tampered)


def test_rappor_check_values():
    spec = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f=0.5, p=0.5, q=0.75)
    assert spec.epsilon_inf == pytest.approx(4.39445, abs=5e-6)
    assert spec.epsilon_one == pytest.approx(1.07429, abs=5e-6)
    assert spec.prob_one_given_one == Fraction(11, 16) and spec.prob_one_given_zero == Fraction(9, 16)


def test_rappor_ratio_by_enumeration(rappor_spec):
    """Single report: enumerate all reports for two values with disjoint bits (the worst case)."""
    spec = rappor_spec
    k = min(spec.num_bits, 6)
    h = 1 if spec.encoding == "boolean" else spec.num_hashes
    one, zero = spec.prob_one_given_one, spec.prob_one_given_zero
    if spec.encoding == "boolean":
        bits_x, bits_y = [1], [0]
    else:
        bits_x = [1] * h + [0] * (k - h)
        bits_y = [0] * h + [1] * h + [0] * (k - 2 * h)
        bits_x = bits_x[:k]

    def prob(report, true_bits):
        out = Fraction(1)
        for s, b in zip(report, true_bits):
            pr = one if b else zero
            out *= pr if s else 1 - pr
        return out

    ratio = Fraction(0)
    for report in itertools.product((0, 1), repeat=len(bits_x)):
        a, b = prob(report, bits_x), prob(report, bits_y)
        ratio = max(ratio, a / b, b / a)
    assert ratio == spec.single_report_ratio
    if spec.f > 0:
        # PRR alone: forced bits with probability f/2 each, kept otherwise.
        keep_one, keep_zero = 1 - spec.f / 2, spec.f / 2
        assert spec.permanent_ratio == (keep_one / keep_zero) ** (1 if spec.encoding == "boolean" else 2 * h)
    else:
        assert math.isinf(spec.epsilon_inf)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: ldp.GRR(domain=("a", "b"), epsilon=0), "epsilon"),
        (lambda: ldp.GRR(domain=("a", "b"), epsilon=-1), "epsilon"),
        (lambda: ldp.GRR(domain=("a", "b"), epsilon=float("nan")), "epsilon"),
        (lambda: ldp.GRR(domain=(), epsilon=1), "empty"),
        (lambda: ldp.GRR(domain=("a", "a"), epsilon=1), "duplicate"),
        (lambda: ldp.GRR(domain=(1, "1"), epsilon=1), "print the same"),
        (lambda: ldp.BinaryRR(domain=("a", "b", "c"), epsilon=1), "exactly 2"),
        (lambda: ldp.OUE(domain=("a", "b"), epsilon=1, p="1/2"), "both p and q"),
        (lambda: ldp.BLH(domain=("a", "b"), epsilon=1, g=3), "g = 2"),
        (lambda: ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=4, f=0.5, p=0.75, q=0.5), "p < q"),
        (lambda: ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=4, f=0.5, p=0.5, q=0.5), "p < q"),
        (lambda: ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=4, f=1, p=0.25, q=0.75), r"\[0, 1\)"),
        (lambda: ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=4, f=-0.1, p=0.25, q=0.75), "f must"),
        (lambda: ldp.Rappor(num_bits=2, num_hashes=3, num_cohorts=4, f=0.5, p=0.25, q=0.75), "cannot exceed"),
        (lambda: ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=0, f=0.5, p=0.25, q=0.75), "num_cohorts"),
        (
            lambda: ldp.Rappor(num_bits=300, num_hashes=2, num_cohorts=4, f=0.5, p=0.25, q=0.75, hash="md5"),
            "num_bits",
        ),
        (
            lambda: ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=4, f=0, p=0, q=0.75),
            "no single-report privacy",
        ),
        (lambda: ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=4, f=0.5, p="x", q=0.75), "p must be"),
        (
            lambda: ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=4, f=0.5, p=0.25, q=0.75, hash="sha1"),
            "hash",
        ),
    ],
)
def test_bad_parameters_raise_clear_errors(build, message):
    with pytest.raises(ParameterError, match=message):
        build()


def test_value_outside_domain_is_a_clear_error():
    spec = ldp.GRR(domain=SMALL_DOMAIN, epsilon=1)
    with pytest.raises(ParameterError, match="not in the domain"):
        spec.index_of("zzz")
    ints = ldp.GRR(domain=range(4), epsilon=1)
    assert ints.index_of("3") == 3 and ints.index_of(3) == 3


def test_best_mechanism_follows_wang_rule():
    for epsilon in (0.5, 1.0, 2.0, 4.0):
        threshold = 3 * math.exp(epsilon) + 2
        for d in (2, 3, 5, 8, 16, 64, 1024):
            best = ldp.best_frequency_mechanism(epsilon, d)
            if d < threshold - 1e-9:
                assert best in ("grr", "ss"), (epsilon, d)  # ss (with omega = 1 it is grr) may beat grr
            elif d > threshold + 1:
                assert best in ("olh", "oue", "ss"), (epsilon, d, best)
            table = ldp.variance_table(epsilon, d)
            assert table[best] <= min(table.values()) * (1 + 1e-12)
