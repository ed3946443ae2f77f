"""Exact privacy: the worst-case probability ratio, computed from each spec's
own probabilities by enumerating outputs, equals the e^ε the spec reports,
never exceeds the claim, and a spec claiming less than it gives is rejected."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from conftest import SMALL_DOMAIN, frequency_specs, heavy_hitter_specs
from reference_channels import exact_ratios, worst_ratio
from reference_channels.frequency import lh_channel

import ldp
from ldp.errors import ParameterError
from ldp.exact import exp_lower_bound


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


#: The exact worst-case ratio of each family, from first principles (its output distribution), by spec class.
EXACT_RATIO = exact_ratios()


def exact_ratio(spec, d):
    """The reference ratio of ``spec``'s family (its class's nearest entry in EXACT_RATIO); a new family fails.

    The references are the modules of tests/privacy/reference_channels/: a new family adds its own.
    """
    for klass in type(spec).__mro__:
        if klass in EXACT_RATIO:
            return EXACT_RATIO[klass](spec, d)
    pytest.fail(
        f"no reference output distribution for {type(spec).__name__} ({spec.mechanism}): add a module to "
        "tests/privacy/reference_channels/"
    )


def test_a_family_adds_its_reference_channel_as_a_module_of_its_own(tmp_path, monkeypatch):
    """The references are found by listing tests/privacy/reference_channels/: a new module is read, no list edited."""
    import sys

    import reference_channels

    assert {ldp.GRR, ldp.HR, ldp.SubsetSelection} <= set(EXACT_RATIO)
    (tmp_path / "zz_new_family.py").write_text(
        "class NewSpec:\n    pass\n\n\nEXACT_RATIO = {NewSpec: lambda spec, d: 1}\n", encoding="utf-8"
    )
    monkeypatch.setattr(reference_channels, "__path__", [*reference_channels.__path__, str(tmp_path)])
    try:
        found = exact_ratios()
        assert set(EXACT_RATIO) < set(found)
        assert [cls.__name__ for cls in set(found) - set(EXACT_RATIO)] == ["NewSpec"]
    finally:
        sys.modules.pop("reference_channels.zz_new_family", None)


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
