"""``ldp aggregate --candidates``: the detection correction and level reach the decode; the summary line."""

from __future__ import annotations

import numpy as np
import pandas as pd
from click.testing import CliRunner

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.writers import write_reports
from ldp.cli import cli
from ldp.client import encode_batch

SPEC = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/4", p="1/4", q="3/4")
TRUE = [f"v{i}" for i in range(10)]
CANDIDATES = TRUE + [f"bogus{i}" for i in range(5)]


def _files(tmp_path):
    rng = np.random.default_rng(11)
    weights = np.arange(10, 0, -1) / 55
    batch = encode_batch(SPEC, list(rng.choice(TRUE, size=20_000, p=weights)), rng)
    (tmp_path / "spec.json").write_text(SPEC.to_json())
    (tmp_path / "candidates.txt").write_text("\n".join(CANDIDATES) + "\n")
    write_reports([batch], str(tmp_path / "reports.jsonl"), SPEC)
    return batch


def _run(tmp_path, *options):
    out = tmp_path / "estimates.csv"
    result = CliRunner().invoke(
        cli,
        [
            "aggregate",
            "--spec",
            str(tmp_path / "spec.json"),
            str(tmp_path / "reports.jsonl"),
            "--candidates",
            str(tmp_path / "candidates.txt"),
            "-o",
            str(out),
            *options,
        ],
    )
    assert result.exit_code == 0, result.output
    return pd.read_csv(out), result.output


def test_correction_and_alpha_match_the_python_decode(tmp_path):
    batch = _files(tmp_path)
    accumulator = make_aggregator(SPEC)
    accumulator.add_batch(batch)
    for correction, alpha in (("bonferroni", 0.05), ("bh", 0.01), ("none", 0.2)):
        table, output = _run(tmp_path, "--correction", correction, "--alpha", str(alpha))
        expected = accumulator.estimate(candidates=CANDIDATES, correction=correction, alpha=alpha)
        assert table["detected"].tolist() == expected["detected"].tolist()
        summary = expected.attrs
        assert (
            f"detected {summary['num_detected']} of {len(CANDIDATES)} candidates ({correction}, alpha={alpha:g})"
            in output
        )
        assert f"allocated mass {summary['allocated_mass']:.4f}" in output
        assert summary["alpha"] == alpha and summary["correction"] == correction


def test_default_is_benjamini_hochberg_at_five_percent(tmp_path):
    """The CLI's default (a literal: importing the decode would load SciPy) is the library's."""
    from ldp.aggregator.multiple_testing import DEFAULT_CORRECTION

    _files(tmp_path)
    _, output = _run(tmp_path)
    assert DEFAULT_CORRECTION == "bh" and "(bh, alpha=0.05)" in output
