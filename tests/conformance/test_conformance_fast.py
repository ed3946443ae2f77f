"""Conformance of every registered mechanism: structural checks and a small seeded statistical check.

Parametrized over :func:`ldp.registry.declarations` (built-in and installed
mechanisms), never over a hand list: a new mechanism is covered the moment it
is registered (its example spec is derived from its declaration,
``mechanism_examples.py``). The slow counterpart is ``test_conformance_slow.py``.

Statistical check here: one seeded run (the simulation encoder), every
estimate within z·SE of the truth, SE the accumulator's declared
fixed-data standard error, z for α = 1e-6 two-sided with Bonferroni over the
rows: a correct mechanism fails with probability at most 1e-6 under a random
seed, and the seed is fixed.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from mechanism_examples import example_spec, example_values, mechanism_declarations, table_truth
from scipy.stats import norm

from ldp.aggregator import make_aggregator
from ldp.aggregator.accumulate import accumulate_files
from ldp.aggregator.writers import write_reports
from ldp.client import encode_batch
from ldp.errors import ParameterError
from ldp.exact import ratio_within
from ldp.registry import BUILTIN_MECHANISMS
from ldp.specs.base import ExactPrivacySpec, spec_from_dict

DECLARATIONS = mechanism_declarations()
ALPHA = 1e-6


@pytest.fixture(params=DECLARATIONS, ids=lambda d: d.name, scope="module")
def spec(request):
    return example_spec(request.param)


def _seed(spec) -> int:
    return int(spec.fingerprint[:8], 16)


def _batch(spec, n: int, seed: int):
    return encode_batch(spec, example_values(spec, n), np.random.default_rng(seed))


def _accumulator(spec, *batches):
    acc = make_aggregator(spec)
    for batch in batches:
        acc.add_batch(batch)
    return acc


# -- privacy: ε from the exact probabilities ------------------------------------------------------


def test_spec_json_round_trip(spec):
    again = spec_from_dict(json.loads(spec.to_json()))
    assert again == spec and again.fingerprint == spec.fingerprint and type(again) is type(spec)


def _delta(spec) -> float:
    return float(getattr(spec, "delta", 0) or 0)


def test_epsilon_is_certified_by_the_exact_probabilities(spec):
    if not isinstance(spec, ExactPrivacySpec):
        pytest.skip(
            f"{spec.mechanism} is not an ExactPrivacySpec: its ε is not a ratio of exact probabilities"
        )
    if _delta(spec) > 0:
        pytest.skip(f"{spec.mechanism} claims (ε, δ): the pure ratio of its probabilities may exceed e^ε")
    ratio = spec.privacy_ratio
    assert isinstance(ratio, Fraction) and ratio >= 1
    assert ratio_within(ratio, spec.epsilon), f"{spec.mechanism}: e^ε < exact ratio {ratio}"
    assert spec.epsilon_achieved <= spec.epsilon
    if spec.claim_matches_probabilities:  # the stored probabilities give the claim, not less
        assert math.isclose(spec.epsilon_achieved, spec.epsilon, rel_tol=1e-9)


def test_the_worst_pair_attains_the_exact_ratio(spec):
    """The accountant's pieces (the worst pair's output distributions) give at most ε; exact ones attain it."""
    try:
        pieces = spec.privacy_pieces(1)
    except ParameterError as exc:  # an (ε, δ) mechanism with no exact curve says so
        assert _delta(spec) > 0, f"{spec.mechanism}: pure ε but no pieces: {exc}"
        return
    # independent pieces: the privacy loss of the worst output is the sum of each piece's worst, per direction
    forward = sum(p.copies * float(np.max(p.log_p - p.log_q)) for p in pieces)
    backward = sum(p.copies * float(np.max(p.log_q - p.log_p)) for p in pieces)
    worst = max(forward, backward)
    assert worst <= spec.epsilon + 1e-12
    if spec.exact_privacy_curve and isinstance(spec, ExactPrivacySpec):
        assert math.isclose(worst, math.log(float(spec.privacy_ratio)), rel_tol=1e-9, abs_tol=1e-12)


def test_an_edited_epsilon_below_the_probabilities_is_refused(spec):
    if not (isinstance(spec, ExactPrivacySpec) and spec.claim_matches_probabilities):
        pytest.skip(f"{spec.mechanism}: its JSON does not store both ε and the probabilities that give it")
    data = spec.to_dict()
    data["epsilon"] = spec.epsilon / 2
    with pytest.raises(ParameterError, match="epsilon"):
        spec_from_dict(data)


# -- reports: formats, rejects, merging -----------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_report_file_round_trip(spec, suffix, tmp_path):
    batch = _batch(spec, 60, _seed(spec))
    path = tmp_path / f"reports{suffix}"
    assert write_reports(batch, path, spec) == 60
    got = accumulate_files(spec, [str(path)])
    assert (got.valid, got.rejected) == (60, 0)
    assert got.accumulator == _accumulator(spec, batch)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_bad_reports_are_rejected_and_the_rest_counted(spec, suffix, tmp_path):
    batch = _batch(spec, 20, _seed(spec))
    path = tmp_path / f"reports{suffix}"
    write_reports(batch, path, spec)
    lines = path.read_text().splitlines()
    first = lines[1] if suffix == ".csv" else lines[0]  # CSV: after the header
    other_spec = first.replace(spec.fingerprint, "0" * 16)
    assert other_spec != first
    garbage = "{not json" if suffix == ".jsonl" else "x"
    path.write_text("\n".join([*lines, other_spec, garbage]) + "\n")
    got = accumulate_files(spec, [str(path)], rejects_path=str(tmp_path / f"rejects{suffix}"))
    assert (got.valid, got.rejected) == (20, 2), got.summary
    assert got.accumulator == _accumulator(spec, batch)
    assert len((tmp_path / f"rejects{suffix}").read_text().splitlines()) >= 2


def test_merge_is_associative_and_commutative(spec):
    seed = _seed(spec)
    parts = [_batch(spec, 25, seed + i) for i in range(3)]
    a, b, c = (_accumulator(spec, part) for part in parts)
    whole = _accumulator(spec, *parts)
    assert a.merge(b).merge(c) == a.merge(b.merge(c)) == whole
    assert b.merge(a) == a.merge(b)
    assert a.merge(b).merge(c).n == 75 and a.n == 25  # merge changes neither operand


def test_saved_state_rebuilds_an_equal_accumulator(spec):
    """dump_state/load_state (what the collector keeps of a pruned window) keep the counts and estimates."""
    from ldp.aggregator.state import dump_state, load_state

    seed = _seed(spec)
    parts = [_batch(spec, 40, seed + i) for i in range(2)]
    acc = _accumulator(spec, *parts)
    if not type(acc).restorable():  # an installed mechanism may have no saved state: retention refuses it
        with pytest.raises(ParameterError, match="saved state"):
            dump_state(acc)
        return
    data = dump_state(acc)
    back = load_state(spec, data)
    assert type(back) is type(acc) and back == acc and back.n == acc.n == 80
    assert back.estimate(0.9).equals(acc.estimate(0.9))
    assert dump_state(back) == data  # the same state writes the same bytes
    fresh = load_state(spec, dump_state(make_aggregator(spec)))
    assert fresh.n == 0 and fresh.merge(back) == acc  # a restored state merges like the original
    assert (
        load_state(spec, dump_state(_accumulator(spec, parts[0]))).merge(_accumulator(spec, parts[1])) == acc
    )


# -- statistics: one seeded run, every estimate within z·SE ---------------------------------------


def truth_and_table(spec, n: int, seed: int):
    """(estimates, truth, declared standard errors) of n seeded reports, or None when not comparable."""
    values = example_values(spec, n)
    batch = encode_batch(spec, values, np.random.default_rng(seed))
    table = _accumulator(spec, batch).estimate()
    found = table_truth(spec, values, batch.cohorts, table)
    if found is None:
        return None
    column, _, truth = found
    return table[column].to_numpy(float), truth, table["std_error"].to_numpy(float)


def test_one_seeded_run_is_within_z_se(spec):
    """α = 1e-6 two-sided, Bonferroni over the rows (see the module docstring)."""
    found = truth_and_table(spec, 2000, _seed(spec))
    if found is None:
        pytest.skip(f"{spec.mechanism}: its estimate table lists no values, mean or Bloom bits")
    estimate, truth, se = found
    assert len(estimate) > 0 and np.all(se > 0)
    z = norm.isf(ALPHA / (2 * len(estimate)))
    assert np.all(np.abs(estimate - truth) <= z * se), (estimate, truth, se)


# -- cross-language vectors: the stored encodings replay ---------------------------------------------


@pytest.fixture(scope="module")
def vector_tools():
    """The vectors generator (tests/vectors/make_vectors.py) and the stored vectors."""
    import importlib.util
    import sys
    from pathlib import Path

    directory = Path(__file__).resolve().parents[1] / "vectors"
    module_spec = importlib.util.spec_from_file_location("ldp_make_vectors", directory / "make_vectors.py")
    assert module_spec is not None and module_spec.loader is not None
    module = sys.modules.get(module_spec.name)
    if module is None:
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module
        module_spec.loader.exec_module(module)
    return module, json.loads((directory / "vectors.json").read_text(encoding="utf-8"))


def _typescript_encoders() -> set[str]:
    """Mechanisms with a TypeScript encoder (an ``@mechanisms``-tagged class in js/src)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "js" / "scripts" / "spec_fields.py"
    module_spec = importlib.util.spec_from_file_location("ldp_spec_fields_for_vectors", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return set(module.encoder_classes())


def test_single_reports_are_what_the_checking_constructor_builds(spec):
    """The single-report encoder's reports (some skip the constructor's checks: ``Report.of_encoder``) are the
    reports the constructor builds from the same fields, field types included, and their JSON reads back."""
    import dataclasses

    from ldp.client import make_encoder
    from ldp.report import _ENCODER_DEFAULTS, Report

    names = [field.name for field in dataclasses.fields(Report)]
    assert set(names) == {*_ENCODER_DEFAULTS, "spec", "value", "seed", "bits", "extra", "cohort"}
    encoder = make_encoder(spec)
    for value in example_values(spec, 40):
        report = encoder.encode(value)
        fields = {name: getattr(report, name) for name in names}
        again = Report(**fields)
        assert again == report and [type(getattr(again, n)) for n in names] == [
            type(v) for v in fields.values()
        ]
        text = report.to_json()  # (an extra field of bits reads back as its base64 text: its spec decodes it)
        assert Report.from_json(text).to_json() == text


@pytest.mark.parametrize("decl", DECLARATIONS, ids=lambda d: d.name)
def test_stored_vectors_replay_through_the_encoder(decl, vector_tools):
    """Each stored encoding of the mechanism: the same byte stream gives the same report, with the same reads."""
    from ldp.client import make_encoder
    from ldp.client.state import ClientState

    generator, vectors = vector_tools
    specs = {c["id"]: c for c in vectors["specs"]["cases"] if c["mechanism"] == decl.name}
    if not specs and decl not in BUILTIN_MECHANISMS:
        pytest.skip(f"{decl.name} is an installed package's mechanism: no cross-language vectors")
    if not specs and decl.name not in _typescript_encoders():
        pytest.skip(f"{decl.name} has no TypeScript client yet: the vectors compare the two clients")
    cases = [c for c in vectors["encodings"] if c["spec"] in specs]
    assert specs and cases, f"{decl.name} has no vectors: run python tests/vectors/make_vectors.py"
    for case in cases:
        spec = spec_from_dict(json.loads(specs[case["spec"]]["canonical_json"]))
        assert spec.fingerprint == case["fingerprint"]
        state = None
        if "secret" in case:
            state = ClientState(
                spec=spec.fingerprint, secret=bytes.fromhex(case["secret"]), cohort=case["cohort"]
            )
        stream = generator.ByteStream(bytes.fromhex(case["bytes"]))
        with generator.fixed_csprng(stream):
            report = make_encoder(spec, state=state).encode(case["value"])
        assert report.to_json() == case["report_json"] and stream.reads == case["reads"], case
