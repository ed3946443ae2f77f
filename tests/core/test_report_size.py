"""Report size (docs/report-format.md#size), auto under a size limit and ``ldp spec --param``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import every_spec_shape

import ldp
from ldp.cli import cli
from ldp.errors import ParameterError
from ldp.report_schema import index_bits, report_schema_of
from ldp.specs.selection import FREQUENCY_MECHANISMS, variance_table


@pytest.mark.parametrize("count, bits", [(1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (1024, 10), (1025, 11)])
def test_index_bits_is_the_ceiling_of_log2(count, bits):
    assert index_bits(count) == bits


def test_report_bits_of_the_built_in_forms():
    domain = range(1024)
    assert ldp.GRR(domain=domain, epsilon=1.0).report_bits == 10
    assert ldp.BinaryRR(domain=(0, 1), epsilon=1.0).report_bits == 1
    assert ldp.OUE(domain=domain, epsilon=1.0).report_bits == 1024
    olh = ldp.OLH(domain=domain, epsilon=4.0)
    seed_bits = index_bits(report_schema_of(olh).field("seed").bound)
    assert olh.report_bits == seed_bits + index_bits(olh.g)
    rappor = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")
    assert rappor.report_bits == 128 + 6
    assert ldp.Duchi(epsilon=1.0).report_bits == 64


def test_every_registered_spec_has_a_report_size():
    for spec in every_spec_shape():
        bits = spec.report_bits
        assert isinstance(bits, int) and bits >= 1, spec.mechanism
        assert bits == sum(f.payload_bits(spec) for f in report_schema_of(spec).fields)


def test_auto_under_a_size_limit_picks_the_best_that_fits():
    full = variance_table(1.0, 1024)
    limited = variance_table(1.0, 1024, max_report_bits=16)
    fits = {
        name for name in full if FREQUENCY_MECHANISMS[name](domain=range(1024), epsilon=1.0).report_bits <= 16
    }
    assert set(limited) == fits and fits
    assert ldp.best_frequency_mechanism(1.0, 1024) != "grr"
    assert ldp.best_frequency_mechanism(1.0, 1024, max_report_bits=16) == min(limited, key=limited.get)


def test_auto_under_an_impossible_limit_names_the_smallest():
    with pytest.raises(ParameterError, match=r"fit in 5 bits .* the smallest is grr with 10 bits"):
        ldp.best_frequency_mechanism(1.0, 1024, max_report_bits=5)


def test_cli_max_report_bits_and_param():
    runner = CliRunner()
    out = runner.invoke(
        cli, ["spec", "auto", "--epsilon", "1", "--domain-size", "1024", "--max-report-bits", "16"]
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["mechanism"] == ldp.best_frequency_mechanism(1.0, 1024, max_report_bits=16)
    out = runner.invoke(cli, ["spec", "olh", "--epsilon", "1", "--domain-size", "8", "--param", "g=5"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["g"] == 5
    out = runner.invoke(cli, ["spec", "olh", "--epsilon", "1", "--domain-size", "8", "--param", "gg=5"])
    assert out.exit_code != 0 and "unknown fields: gg" in out.output
    out = runner.invoke(cli, ["spec", "grr", "--epsilon", "1", "--domain", "a,b", "--max-report-bits", "3"])
    assert out.exit_code != 0 and "--max-report-bits applies to auto only" in out.output
    out = runner.invoke(cli, ["spec", "olh", "--epsilon", "1", "--domain-size", "8", "--param", "epsilon=2"])
    assert out.exit_code != 0 and "give it with its own option" in out.output
    out = runner.invoke(cli, ["spec", "olh", "--epsilon", "1", "--domain-size", "8", "--param", "novalue"])
    assert out.exit_code != 0 and "expected NAME=VALUE" in out.output
