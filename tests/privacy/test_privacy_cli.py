"""``ldp privacy`` commands (CliRunner, real files)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.privacy.composition import optimal_composition


def _run(*args):
    return CliRunner().invoke(cli, list(args))


def test_compose_table():
    result = _run("privacy", "compose", "--epsilon", "0.1", "--reports", "100", "--delta", "1e-6")
    assert result.exit_code == 0, result.output
    for method in ("basic", "advanced", "KOV closed form", "optimal", "exact f-DP", "CLT"):
        assert method in result.output
    assert f"{optimal_composition(0.1, 100, 1e-6):.6g}" in result.output


def test_compose_with_spec(tmp_path):
    path = tmp_path / "rappor.json"
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")
    path.write_text(spec.to_json())
    result = _run("privacy", "compose", "--spec", str(path), "-k", "5")
    assert result.exit_code == 0, result.output
    assert "exact rappor curve" in result.output and "epsilon_inf" in result.output


@pytest.mark.parametrize(
    "mechanism, row",
    [
        ("duchi", "exact duchi curve"),  # two-point: binary RR between the inputs ±1, exact
        ("laplace", "laplace: f_(eps,0) at its achieved epsilon"),  # grid table: a sound bound, labelled so
    ],
)
def test_numeric_specs_compose_and_print_their_gdp_mu(tmp_path, mechanism, row):
    path = tmp_path / "spec.json"
    spec = ldp.numeric_spec(mechanism, 1.0, 0, 10)
    path.write_text(spec.to_json())
    composed = _run("privacy", "compose", "--spec", str(path), "-k", "10", "--delta", "1e-6")
    assert composed.exit_code == 0, composed.output
    expected = optimal_composition(spec.epsilon_achieved, 10, 1e-6)
    line = next(line for line in composed.output.splitlines() if line.startswith(row))
    assert float(line[len(row) :].split()[0]) == pytest.approx(expected, rel=1e-5)
    printed = _run("spec", mechanism, "--epsilon", "1", "--low", "0", "--high", "10")
    assert printed.exit_code == 0, printed.output
    assert "trade-off: one report is 1.23204-GDP" in printed.output


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--mu", "1", "--delta", "1e-6"], "epsilon = "),
        (["--mu", "1", "--epsilon", "1"], "0.126937"),
        (["--epsilon", "1"], "1.23204"),
        (["--epsilon", "1", "--delta", "1e-5"], "mu <= "),
    ],
)
def test_convert(args, expected):
    result = _run("privacy", "convert", *args)
    assert result.exit_code == 0, result.output
    assert expected in result.output


def test_convert_needs_arguments():
    result = _run("privacy", "convert")
    assert result.exit_code == 2
    assert "Error:" in result.output and "Traceback" not in result.output


def test_tradeoff_with_plot(tmp_path):
    import matplotlib  # noqa: F401  (the test extra has it: missing, this fails)

    spec_path = tmp_path / "oue.json"
    spec_path.write_text(ldp.OUE(domain=tuple(range(8)), epsilon=1.0).to_json())
    png = tmp_path / "curve.png"
    result = _run("privacy", "tradeoff", "--spec", str(spec_path), "--reports", "10", "--plot", str(png))
    assert result.exit_code == 0, result.output
    assert "oue, 10 reports" in result.output
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


def test_bad_input_is_one_line_error(tmp_path):
    result = _run("privacy", "compose", "--epsilon", "-1", "--reports", "3")
    assert result.exit_code == 2 and "epsilon" in result.output
    result = _run("privacy", "tradeoff", "--spec", str(tmp_path / "missing.json"))
    assert result.exit_code == 2 and "Traceback" not in result.output


@pytest.mark.parametrize(
    "plot, needles",
    [
        ("curve.txt", ("--plot", "curve.txt", "unknown image extension '.txt'", ".png")),
        ("curve", ("--plot", "no image extension")),
        ("missing-dir/curve.png", ("--plot", "missing-dir", "does not exist")),
    ],
)
def test_tradeoff_bad_plot_path_fails_before_computing(tmp_path, monkeypatch, plot, needles):
    import matplotlib  # noqa: F401  (the test extra has it: missing, this fails)

    import ldp.privacy.mechanisms

    def not_called(*args, **kwargs):
        raise AssertionError("the curves were computed before the --plot path was checked")

    monkeypatch.setattr(ldp.privacy.mechanisms, "mechanism_tradeoff", not_called)
    spec_path = tmp_path / "grr.json"
    spec_path.write_text(ldp.GRR(domain=("a", "b"), epsilon=1.0).to_json())
    result = _run("privacy", "tradeoff", "--spec", str(spec_path), "--plot", str(tmp_path / plot))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stdout == ""  # nothing was computed or printed
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and all(needle in lines[0] for needle in needles), lines


def test_help_has_examples():
    for sub in ("compose", "convert", "tradeoff"):
        result = _run("privacy", sub, "--help")
        assert result.exit_code == 0 and "Example" in result.output


def test_spec_prints_the_per_report_gdp_mu(tmp_path):
    from ldp.privacy.mechanisms import mechanism_tradeoff, per_report_gdp_mu

    result = _run("spec", "oue", "--epsilon", "1", "--domain-size", "8", "-o", str(tmp_path / "oue.json"))
    assert result.exit_code == 0, result.output
    spec = ldp.load_spec(tmp_path / "oue.json")
    assert f"one report is {per_report_gdp_mu(spec):.6g}-GDP" in result.output
    result = _run(
        "spec",
        "rappor",
        "--num-bits",
        "16",
        "--num-hashes",
        "2",
        "--num-cohorts",
        "4",
        "--f",
        "0.5",
        "--p",
        "0.5",
        "--q",
        "0.75",
        "-o",
        str(tmp_path / "rappor.json"),
    )
    assert result.exit_code == 0, result.output
    rappor = ldp.load_spec(tmp_path / "rappor.json")
    assert (
        f"(its permanent response) are {mechanism_tradeoff(rappor, float('inf')).gdp_mu():.6g}-GDP"
        in result.output
    )


def test_convert_gdp_at_delta_zero_says_no_finite_epsilon():
    result = _run("privacy", "convert", "--mu", "1", "--delta", "0")
    assert result.exit_code == 0, result.output
    assert "no finite epsilon at delta = 0" in result.output
    assert "41" not in result.output  # the old search bound


def _grr_spec_file(tmp_path, epsilon: float):
    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=epsilon)
    path = tmp_path / "grr.json"
    path.write_text(spec.to_json())
    return spec, path


def test_tradeoff_at_delta_zero_prints_the_exact_pure_epsilon(tmp_path):
    """A pure mechanism at δ = 0: its exact ε (the largest privacy loss), not ε + 1."""
    spec, path = _grr_spec_file(tmp_path, 1.5)
    result = _run("privacy", "tradeoff", "--spec", str(path), "--delta", "0", "--reports", "3")
    assert result.exit_code == 0, result.output
    rows = {
        line[:40].strip(): line[40:].split() for line in result.output.splitlines() if line.startswith("grr")
    }
    assert float(rows["grr, 1 report"][0]) == pytest.approx(spec.epsilon_achieved, rel=1e-5)
    assert float(rows["grr, 3 reports"][0]) == pytest.approx(3 * spec.epsilon_achieved, rel=1e-5)
    assert "exact pure epsilon" in result.output


def test_compose_at_delta_zero(tmp_path):
    spec, path = _grr_spec_file(tmp_path, 0.5)
    result = _run("privacy", "compose", "--spec", str(path), "--reports", "10", "--delta", "0")
    assert result.exit_code == 0, result.output
    rows = {line.split("  ")[0]: line for line in result.output.splitlines()}

    def value(method):
        return rows[method][len(method) :].split()[0]

    assert value("optimal (Kairouz-Oh-Viswanath)") == "5"
    assert value("exact grr curve") == f"{10 * spec.epsilon_achieved:.6g}"
    assert value("GDP via eps-DP => mu_eps-GDP") == "inf"
    assert "no finite epsilon at delta = 0" in rows["GDP via eps-DP => mu_eps-GDP"]


# -- issue 24: many reports --------------------------------------------------------------
def test_tradeoff_oue_past_the_explicit_product_prints_the_exact_epsilon(tmp_path):
    from ldp.privacy.mechanisms import mechanism_loss

    spec = ldp.OUE(domain=("a", "b", "c", "d"), epsilon=1.0)
    path = tmp_path / "oue.json"
    path.write_text(spec.to_json())
    result = _run("privacy", "tradeoff", "--spec", str(path), "--reports", "1500")
    assert result.exit_code == 0, result.output
    assert "RuntimeWarning" not in result.output
    row = next(line for line in result.output.splitlines() if line.startswith("oue, 1500 reports"))
    eps, mu = row.split()[-2:]
    # was "0" and "inf" (a NaN curve); the exact figure of the composed pair instead
    assert eps == f"{mechanism_loss(spec, 1500).epsilon(1e-6):.6g}" and float(eps) > 400
    assert mu != "inf" and float(mu) > 0


def test_tradeoff_beyond_the_stated_bound_is_one_line(tmp_path):
    path = tmp_path / "oue.json"
    path.write_text(ldp.OUE(domain=("a", "b"), epsilon=1.0).to_json())
    result = _run("privacy", "tradeoff", "--spec", str(path), "--reports", "2000000")
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "at most 1e+06 reports" in lines[0]


def test_compose_beyond_the_exact_bound_prints_dashes(tmp_path):
    path = tmp_path / "oue.json"
    path.write_text(ldp.OUE(domain=("a", "b"), epsilon=1.0).to_json())
    result = _run("privacy", "compose", "--spec", str(path), "--reports", "20000000000")
    assert result.exit_code == 0, result.output
    rows = {line.split("  ")[0]: line for line in result.output.splitlines()}
    assert "not computed above 1e+09 reports" in rows["exact f-DP (binomial curve)"]
    assert "not computed above 1e+06 reports" in rows["exact oue curve"]
    assert " - " in rows["exact oue curve"]


def _spec_file(tmp_path, spec, name="spec.json"):
    path = tmp_path / name
    path.write_text(spec.to_json())
    return str(path)


def test_lifetime_states_the_ledger_bound_and_the_bound_given_changes(tmp_path):
    from ldp.privacy import lifetime_epsilon

    spec = ldp.Rappor.basic(("a", "b", "c"), f="1/2", p="1/4", q="3/4")
    result = _run(
        "privacy", "lifetime", "--spec", _spec_file(tmp_path, spec), "-t", "1", "-t", "365", "-c", "1"
    )
    assert result.exit_code == 0, result.output
    assert "min(r * epsilon_one, epsilon_inf)" in result.output
    rows = [line.split() for line in result.output.splitlines() if line.strip()[:1].isdigit()]
    figures = {(int(row[0]), row[-3]): float(row[-1]) for row in rows}
    assert figures[(365, "(ledger)")] == pytest.approx(lifetime_epsilon(spec, 365), rel=1e-5)
    assert figures[(365, "1")] == pytest.approx(2 * spec.epsilon_inf, rel=1e-5)
    assert figures[(1, "1")] == pytest.approx(spec.epsilon_one, rel=1e-5)


def test_lifetime_of_a_chain_charges_a_keys_first_report_epsilon_one(tmp_path):
    """L-GRR over 16 values at ε₁ = 0.25, ε∞ = 1: r ≥ 2 reports of one value are charged ε′ ≈ 0.32 each, one
    report ε₁; ``ldp privacy lifetime`` says so, and τ = 1 costs 0.25 (it printed ε′ before)."""
    from ldp.specs.longitudinal import LGRR

    spec = LGRR(domain=list(range(16)), epsilon=0.25, epsilon_inf=1.0)
    result = _run(
        "privacy", "lifetime", "--spec", _spec_file(tmp_path, spec), "-t", "1", "-t", "10", "-c", "1"
    )
    assert result.exit_code == 0, result.output
    assert "epsilon_one for r = 1, min(r * charged, epsilon_inf) from r = 2" in result.output
    rows = [line.split() for line in result.output.splitlines() if line.strip()[:1].isdigit()]
    figures = {(int(row[0]), row[-3]): float(row[-1]) for row in rows}
    assert figures[(1, "(ledger)")] == pytest.approx(0.25, rel=1e-5)
    assert figures[(10, "1")] == pytest.approx(
        2 * spec.epsilon_inf, rel=1e-5
    )  # two values, five reports each


def test_lifetime_of_a_fresh_spec(tmp_path):
    result = _run(
        "privacy", "lifetime", "--spec", _spec_file(tmp_path, ldp.GRR(domain=(0, 1), epsilon=0.5)), "-t", "10"
    )
    assert result.exit_code == 0, result.output
    assert "fresh randomness" in result.output and result.output.split()[-1] == "5"


def test_plan_exact_against_optimal_composition(tmp_path):
    """Budget 20 at delta = 1e-6, OUE at epsilon = 1: the generic rule refuses report 21, the exact curve 26."""
    path = _spec_file(tmp_path, ldp.OUE(domain=("a", "b", "c", "d"), epsilon=1.0))
    for rule, sent in (("optimal", 20), ("exact", 25)):
        result = _run(
            "privacy", "plan", "--spec", path, "--budget", "20", "--delta", "1e-6", "--composition", rule
        )
        assert result.exit_code == 0, result.output
        assert f"the ledger sends {sent} reports ({sent} days)" in result.output
        assert f"report {sent + 1} is refused" in result.output
    gdp = _run("privacy", "plan", "--spec", path, "--mu", "2", "--per-day", "2")
    assert gdp.exit_code == 0 and "committing mu = " in gdp.output and "(4 days)" in gdp.output


def test_plan_of_a_memoized_spec_over_time(tmp_path):
    path = _spec_file(tmp_path, ldp.Rappor.basic(("a", "b", "c"), f="1/2", p="1/4", q="3/4"))
    forever = _run("privacy", "plan", "--spec", path, "--budget", "7")
    assert forever.exit_code == 0 and "any number of reports" in forever.output
    given = _run("privacy", "plan", "--spec", path, "--budget", "5", "--per-day", "4", "--changes", "1")
    assert given.exit_code == 0, given.output
    assert (
        "sends 4 reports (1 day)" in given.output
        and "at most 1 time(s): within the budget forever" in given.output
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        ([], "give --budget E or --mu M"),
        (["--budget", "1", "--mu", "1"], "give --budget E or --mu M"),
        (["--mu", "1", "--delta", "1e-3"], "has no delta"),
        (["--budget", "-1"], "budget epsilon"),
        (["--budget", "1", "--per-day", "0"], "per_day"),
    ],
)
def test_plan_bad_input_is_one_line(tmp_path, args, needle):
    path = _spec_file(tmp_path, ldp.GRR(domain=(0, 1), epsilon=0.5))
    result = _run("privacy", "plan", "--spec", path, *args)
    assert result.exit_code != 0 and needle in result.output and "Traceback" not in result.output


def test_ledger_shows_committed_and_spent_per_spec(tmp_path):
    from ldp.privacy import Budget, PrivacyLedger

    rappor = ldp.Rappor.basic(("a", "b", "c"), f="1/2", p="1/4", q="3/4")
    grr = ldp.GRR(domain=(0, 1), epsilon=0.5)
    path = tmp_path / "client.ledger.json"
    opened = PrivacyLedger.load_or_create(path, Budget(epsilon=20.0))
    for value in ("a", "a", "a", "b"):
        opened.charge(rappor, value)
    opened.charge(grr, 0)
    result = _run("privacy", "ledger", str(path))
    assert result.exit_code == 0, result.output
    assert f"committed epsilon = {opened.committed:.6g}, spent epsilon = {opened.spent:.6g}" in result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.output.splitlines()[3:]}
    assert rows[rappor.fingerprint] == ["4", "2"] and rows[grr.fingerprint] == ["1", "-"]
    missing = _run("privacy", "ledger", str(tmp_path / "none.json"))
    assert (
        missing.exit_code != 0 and "no privacy ledger" in missing.output and "Traceback" not in missing.output
    )
