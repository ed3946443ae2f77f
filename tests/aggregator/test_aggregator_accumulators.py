"""Accumulators: counting by hand, batch vs single reports, merge algebra, bad input."""

from __future__ import annotations

import dataclasses
import itertools
import sys
import types
from functools import reduce

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldp
import ldp.aggregator.bitcounts as bitcounts
import ldp.aggregator.rappor
from ldp.aggregator import (
    LocalHashingAccumulator,
    RapporAccumulator,
    UnaryAccumulator,
    ValueAccumulator,
    make_aggregator,
)
from ldp.aggregator.olh import bucket_bounds, support_counts
from ldp.batch import ReportBatch
from ldp.errors import ParameterError, ReportError
from ldp.hashing import LH_PRIME, LH_SEED_SPACE, lh_bucket
from ldp.report import Report, pack_bits

DOMAIN = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k")  # 11 values: 2 packed bytes with padding

SPECS = [
    ldp.BinaryRR(domain=("no", "yes"), epsilon=1.0),
    ldp.GRR(domain=DOMAIN, epsilon=1.0),
    ldp.SUE(domain=DOMAIN, epsilon=1.0),
    ldp.OUE(domain=DOMAIN, epsilon=1.0),
    ldp.OLH(domain=DOMAIN, epsilon=2.0),
    ldp.BLH(domain=DOMAIN, epsilon=1.0),
    ldp.Rappor(num_bits=13, num_hashes=2, num_cohorts=5, f="1/2", p="1/2", q="3/4"),
    ldp.Rappor.basic(DOMAIN, f="1/4", p="1/4", q="3/4", num_cohorts=3),
    ldp.Rappor.boolean(f="1/4", p="1/4", q="3/4", num_cohorts=2),
]


def _ids(spec):
    return f"{spec.mechanism}-{getattr(spec, 'encoding', '')}"


def _num_bits(spec) -> int:
    return spec.num_bits if isinstance(spec, ldp.Rappor) else spec.domain_size


def random_batch(spec, n: int, rng: np.random.Generator) -> ReportBatch:
    """Uniformly random, valid reports (any content a client could send)."""
    fp = spec.fingerprint
    if isinstance(spec, ldp.GRR):
        return ReportBatch(spec=fp, values=rng.integers(0, spec.domain_size, n))
    if isinstance(spec, ldp.specs.LocalHashing):
        seeds = rng.integers(0, LH_SEED_SPACE, n, dtype=np.int64).astype(np.uint64)
        return ReportBatch(spec=fp, seeds=seeds, values=rng.integers(0, spec.g, n))
    k = _num_bits(spec)
    bits = np.packbits(rng.integers(0, 2, (n, k), dtype=np.uint8), axis=1)
    if isinstance(spec, ldp.Rappor):
        return ReportBatch(spec=fp, bits=bits, cohorts=rng.integers(0, spec.num_cohorts, n))
    return ReportBatch(spec=fp, bits=bits)


def reference_counts(spec, batch: ReportBatch):
    """Counts computed report by report with the scalar helpers of ldp."""
    if isinstance(spec, ldp.Rappor):
        cohorts = np.zeros(spec.num_cohorts, dtype=np.int64)
        ones = np.zeros((spec.num_cohorts, spec.num_bits), dtype=np.int64)
        for row, cohort in zip(batch.bits, batch.cohorts.tolist()):
            cohorts[cohort] += 1
            for i in range(spec.num_bits):
                ones[cohort, i] += (row[i // 8] >> (7 - i % 8)) & 1
        return cohorts, ones
    counts = np.zeros(spec.domain_size, dtype=np.int64)
    for i in range(len(batch)):
        for v in range(spec.domain_size):
            if isinstance(spec, ldp.GRR):
                counts[v] += batch.values[i] == v
            elif isinstance(spec, ldp.specs.LocalHashing):
                counts[v] += lh_bucket(int(batch.seeds[i]), v, spec.g) == batch.values[i]
            else:
                counts[v] += (batch.bits[i, v // 8] >> (7 - v % 8)) & 1
    return counts


def state(acc):
    if isinstance(acc, RapporAccumulator):
        return acc.cohort_counts.copy(), acc.bit_counts.copy()
    return acc.support_counts.copy(), acc.n


def split(batch: ReportBatch, cuts) -> list[ReportBatch]:
    bounds = [0, *cuts, len(batch)]
    parts = []
    for lo, hi in itertools.pairwise(bounds):
        fields = {
            name: (None if getattr(batch, name) is None else getattr(batch, name)[lo:hi])
            for name in ("values", "seeds", "bits", "cohorts")
        }
        parts.append(ReportBatch(spec=batch.spec, **fields))
    return parts


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_batch_counts_match_report_by_report_reference(spec):
    batch = random_batch(spec, 300, np.random.default_rng(1))
    acc = make_aggregator(spec)
    acc.add_batch(batch)
    expected = reference_counts(spec, batch)
    if isinstance(spec, ldp.Rappor):
        np.testing.assert_array_equal(acc.cohort_counts, expected[0])
        np.testing.assert_array_equal(acc.bit_counts, expected[1])
    else:
        np.testing.assert_array_equal(acc.support_counts, expected)
    assert acc.n == 300


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_add_equals_add_batch(spec):
    batch = random_batch(spec, 257, np.random.default_rng(2))
    one_by_one = make_aggregator(spec)
    for report in batch.reports(spec):
        one_by_one.add(report)
    together = make_aggregator(spec)
    together.add_batch(batch)
    assert one_by_one == together
    assert one_by_one.n == 257


def test_hand_built_reports():
    grr = ldp.GRR(domain=DOMAIN, epsilon=1.0)
    acc = make_aggregator(grr)
    for value in ("c", "c", "k"):
        acc.add(Report(spec=grr.fingerprint, value=value))
    assert acc.support_counts.tolist() == [0, 0, 2] + [0] * 7 + [1]

    oue = ldp.OUE(domain=DOMAIN, epsilon=1.0)
    acc = make_aggregator(oue)
    acc.add(Report(spec=oue.fingerprint, bits=pack_bits([0, 3, 10], 11)))
    acc.add(Report(spec=oue.fingerprint, bits=pack_bits([3], 11)))
    assert acc.support_counts.tolist() == [1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1]

    olh = ldp.OLH(domain=DOMAIN, epsilon=2.0)
    acc = make_aggregator(olh)
    seed = 123456789012
    acc.add(Report(spec=olh.fingerprint, seed=seed, value=lh_bucket(seed, 4, olh.g)))
    supported = [lh_bucket(seed, v, olh.g) == lh_bucket(seed, 4, olh.g) for v in range(11)]
    assert acc.support_counts.tolist() == [int(s) for s in supported]

    rappor = ldp.Rappor(num_bits=13, num_hashes=2, num_cohorts=5, f="1/2", p="1/2", q="3/4")
    acc = make_aggregator(rappor)
    acc.add(Report(spec=rappor.fingerprint, cohort=4, bits=pack_bits([1, 12], 13)))
    assert acc.cohort_counts.tolist() == [0, 0, 0, 0, 1]
    assert acc.bit_counts[4].tolist() == [0, 1] + [0] * 10 + [1]
    assert acc.bit_counts[:4].sum() == 0


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_bad_reports_raise_and_change_nothing(spec):
    acc = make_aggregator(spec)
    acc.add_batch(random_batch(spec, 20, np.random.default_rng(3)))
    before = state(acc)
    other = ldp.GRR(domain=("x", "y", "z"), epsilon=3.0)
    good = next(random_batch(spec, 1, np.random.default_rng(4)).reports(spec))
    bad = [dataclasses.replace(good, spec=other.fingerprint)]
    if good.bits is not None:
        bad.append(dataclasses.replace(good, bits=good.bits + b"\x00"))
        spare = len(good.bits) * 8 - _num_bits(spec)
        if spare:
            bad.append(dataclasses.replace(good, bits=good.bits[:-1] + bytes([good.bits[-1] | 1])))
    if good.cohort is not None:
        bad.append(dataclasses.replace(good, cohort=spec.num_cohorts))
    if good.seed is not None:
        bad.append(dataclasses.replace(good, value=spec.g))
        bad.append(dataclasses.replace(good, seed=LH_SEED_SPACE))
    if isinstance(spec, ldp.GRR):
        bad.append(dataclasses.replace(good, value="not in the domain"))
    for report in bad:
        with pytest.raises(ReportError):
            acc.add(report)
    with pytest.raises(ReportError, match="spec"):
        acc.add_batch(
            dataclasses.replace(random_batch(spec, 3, np.random.default_rng(5)), spec=other.fingerprint)
        )
    after = state(acc)
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_bad_batches_raise(spec):
    acc = make_aggregator(spec)
    batch = random_batch(spec, 10, np.random.default_rng(6))
    if batch.bits is not None:
        with pytest.raises(ReportError, match="shape"):
            acc.add_batch(dataclasses.replace(batch, bits=batch.bits[:, :-1]))
    if batch.cohorts is not None:
        with pytest.raises(ReportError, match="cohorts"):
            acc.add_batch(dataclasses.replace(batch, cohorts=batch.cohorts + spec.num_cohorts))
    if batch.values is not None:
        with pytest.raises(ReportError, match="values"):
            acc.add_batch(dataclasses.replace(batch, values=batch.values - 100))
    assert acc.n == 0


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_from_counts_round_trip_and_validation(spec):
    acc = make_aggregator(spec)
    acc.add_batch(random_batch(spec, 50, np.random.default_rng(7)))
    cls = type(acc)
    if isinstance(acc, RapporAccumulator):
        assert cls.from_counts(spec, acc.cohort_counts, acc.bit_counts) == acc
        with pytest.raises(ParameterError):
            cls.from_counts(spec, acc.cohort_counts, acc.bit_counts + 1000)
        with pytest.raises(ParameterError):
            cls.from_counts(spec, acc.cohort_counts[:-1], acc.bit_counts)
    else:
        assert cls.from_counts(spec, acc.support_counts, acc.n) == acc
        with pytest.raises(ParameterError):
            cls.from_counts(spec, acc.support_counts[:-1], acc.n)
        with pytest.raises(ParameterError):
            cls.from_counts(spec, acc.support_counts - 1000, acc.n)
        with pytest.raises(ParameterError):
            cls.from_counts(spec, acc.support_counts, -1)


def test_merge_rejects_other_specs():
    a = make_aggregator(ldp.OUE(domain=DOMAIN, epsilon=1.0))
    b = make_aggregator(ldp.OUE(domain=DOMAIN, epsilon=2.0))
    with pytest.raises(ParameterError, match="different specs"):
        a.merge(b)
    with pytest.raises(ParameterError, match="cannot merge"):
        a.merge(make_aggregator(ldp.GRR(domain=DOMAIN, epsilon=1.0)))


def test_make_aggregator_types():
    kinds = [
        ValueAccumulator,
        ValueAccumulator,
        UnaryAccumulator,
        UnaryAccumulator,
        LocalHashingAccumulator,
        LocalHashingAccumulator,
        RapporAccumulator,
        RapporAccumulator,
        RapporAccumulator,
    ]
    for spec, kind in zip(SPECS, kinds):
        assert type(make_aggregator(spec)) is kind
    with pytest.raises(ParameterError, match="no aggregator"):
        make_aggregator(object())


@settings(max_examples=40, deadline=None)
@given(
    spec=st.sampled_from(SPECS),
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=6),
    data=st.data(),
)
def test_merge_is_associative_and_order_independent(spec, seed, sizes, data):
    rng = np.random.default_rng(seed)
    batches = [random_batch(spec, size, rng) for size in sizes]
    parts = []
    for batch in batches:
        acc = make_aggregator(spec)
        acc.add_batch(batch)
        parts.append(acc)
    whole = make_aggregator(spec)
    for batch in batches:
        whole.add_batch(batch)
    left = reduce(lambda x, y: x.merge(y), parts)
    order = data.draw(st.permutations(range(len(parts))))
    shuffled = reduce(lambda x, y: x.merge(y), [parts[i] for i in order])

    def tree(items):  # a random bracketing
        if len(items) == 1:
            return items[0]
        cut = data.draw(st.integers(1, len(items) - 1))
        return tree(items[:cut]).merge(tree(items[cut:]))

    assert left == whole
    assert shuffled == whole
    assert tree(parts) == whole
    assert whole.n == sum(sizes)


def test_merge_returns_a_new_accumulator():
    spec = SPECS[1]
    a, b = make_aggregator(spec), make_aggregator(spec)
    a.add_batch(random_batch(spec, 5, np.random.default_rng(8)))
    before = a.support_counts.copy()
    merged = a.merge(b)
    assert merged is not a and merged == a
    np.testing.assert_array_equal(a.support_counts, before)


@pytest.mark.parametrize("path", ["unpacked", "sliced"])
def test_rappor_counting_paths_match_reference(monkeypatch, path):
    spec = ldp.Rappor(num_bits=21, num_hashes=2, num_cohorts=50, f="1/2", p="1/2", q="3/4")
    batch = random_batch(spec, 400, np.random.default_rng(9))
    if path == "sliced":  # the bit-sliced kernel, in several chunks, instead of unpacking
        monkeypatch.setattr(bitcounts, "SMALL_COHORT_ROWS", 0)
        monkeypatch.setattr(bitcounts, "COHORT_CHUNK", 9 * 15)
    else:  # unpacking, in several blocks
        monkeypatch.setattr(bitcounts, "UNPACK_BYTES", 21 * 64)
    acc = make_aggregator(spec)
    acc.add_batch(batch)
    cohorts, ones = reference_counts(spec, batch)
    np.testing.assert_array_equal(acc.cohort_counts, cohorts)
    np.testing.assert_array_equal(acc.bit_counts, ones)


@pytest.mark.parametrize("path", ["unpacked", "sliced"])
def test_unary_counting_paths_match_reference(monkeypatch, path):
    spec = SPECS[3]
    batch = random_batch(spec, 500, np.random.default_rng(10))
    if path == "sliced":  # the bit-sliced kernel on tiles of 255 rows
        monkeypatch.setattr(bitcounts, "SMALL_ROWS", 0)
        monkeypatch.setattr(bitcounts, "SMALL_BITS", 0)
        monkeypatch.setattr(bitcounts, "TILE_BYTES", 8)
    else:
        monkeypatch.setattr(bitcounts, "SMALL_ROWS", 10**9)
        monkeypatch.setattr(bitcounts, "UNPACK_BYTES", 7)
    acc = make_aggregator(spec)
    acc.add_batch(batch)
    np.testing.assert_array_equal(acc.support_counts, reference_counts(spec, batch))


@pytest.mark.parametrize("g", [2, 3, 7, 1000, LH_PRIME - 2])
def test_olh_support_counts_match_scalar_hash(g):
    rng = np.random.default_rng(g)
    n, d = 200, 29
    seeds = rng.integers(0, LH_SEED_SPACE, n, dtype=np.int64).astype(np.uint64)
    seeds[:4] = [0, 1, LH_SEED_SPACE - 1, LH_PRIME - 1]  # extreme a and b
    buckets = rng.integers(0, g, n)
    buckets[:4] = [lh_bucket(int(s), 5, g) for s in seeds[:4]]
    expected = np.array([sum(lh_bucket(int(s), v, g) == y for s, y in zip(seeds, buckets)) for v in range(d)])
    np.testing.assert_array_equal(support_counts(seeds, buckets, g, d, chunk=32), expected)
    np.testing.assert_array_equal(support_counts(seeds, buckets, g, d, chunk=17, threads=2), expected)


def test_olh_bucket_bounds_partition_residues():
    for g in (2, 3, 10, 12345, LH_PRIME - 2):
        ys = np.array([0, 1, g // 2, g - 2, g - 1])
        lo, width = bucket_bounds(ys, g)
        assert lo[0] == 0 and int(lo[-1]) + int(width[-1]) == LH_PRIME
        assert int(lo[0]) + int(width[0]) == int(lo[1]) and int(lo[3]) + int(width[3]) == int(lo[4])
        for y, low, w in zip(ys.tolist(), lo.tolist(), width.tolist()):  # first and last residue map to y
            assert w >= 1
            assert (low * g) // LH_PRIME == y
            assert ((low + w - 1) * g) // LH_PRIME == y


def test_olh_support_counts_errors():
    seeds = np.array([1, 2], dtype=np.uint64)
    with pytest.raises(ReportError):
        support_counts(seeds, np.array([0, 5]), 3, 4)
    with pytest.raises(ReportError):
        support_counts(np.array([LH_SEED_SPACE, 0], dtype=np.uint64), np.array([0, 1]), 3, 4)
    with pytest.raises(ReportError):
        support_counts(seeds, np.array([0]), 3, 4)
    with pytest.raises(ParameterError):
        support_counts(seeds, np.array([0, 1]), 3, 4, threads=0)
    assert (
        support_counts(np.array([], dtype=np.uint64), np.array([], dtype=np.int64), 3, 4).tolist() == [0] * 4
    )


def test_bloom_estimate_with_candidates_delegates(monkeypatch):
    spec = SPECS[6]
    acc = make_aggregator(spec)
    acc.add_batch(random_batch(spec, 30, np.random.default_rng(11)))
    calls = []

    def decode(spec_arg, cohort_counts, bit_counts, candidates, **options):
        calls.append((spec_arg, cohort_counts.copy(), bit_counts.copy(), list(candidates), options))
        return "decoded"

    fake = types.ModuleType("ldp.aggregator.rappor.decode")
    fake.decode = decode
    monkeypatch.setitem(sys.modules, "ldp.aggregator.rappor.decode", fake)
    monkeypatch.setattr(ldp.aggregator.rappor, "decode", fake, raising=False)
    assert acc.estimate(candidates=["x", "y"], correction="bh", alpha=0.01) == "decoded"
    ((spec_arg, n_j, c, cands, options),) = calls
    assert spec_arg is spec and cands == ["x", "y"]
    assert options == {
        "correction": "bh",
        "confidence": 0.95,
        "alpha": 0.01,
    }  # the detection level reaches the decode
    np.testing.assert_array_equal(n_j, acc.cohort_counts)
    np.testing.assert_array_equal(c, acc.bit_counts)


def test_bloom_estimate_without_candidates_is_the_bit_table():
    spec = SPECS[6]
    acc = make_aggregator(spec)
    acc.add_batch(random_batch(spec, 200, np.random.default_rng(12)))
    table = acc.estimate(confidence=0.9)
    bits = acc.bit_estimates()
    assert len(table) == spec.num_cohorts * spec.num_bits
    np.testing.assert_allclose(table["estimate"], bits.estimate.ravel())
    np.testing.assert_allclose(table["std_error"], np.sqrt(bits.variance).ravel())
    # docs/mechanisms.md#rappor-decoding, written out for one cell
    j, i = 2, 5
    one, zero = float(spec.prob_one_given_one), float(spec.prob_one_given_zero)
    big_n, c = acc.cohort_counts[j], acc.bit_counts[j, i]
    t = (c - zero * big_n) / (one - zero)
    r = zero + (one - zero) * min(max(t, 0), big_n) / big_n
    assert bits.estimate[j, i] == pytest.approx(t)
    assert bits.variance[j, i] == pytest.approx(big_n * r * (1 - r) / (one - zero) ** 2)
    with pytest.raises(ParameterError):
        make_aggregator(SPECS[7]).estimate(candidates=["a"])


def test_estimate_needs_reports():
    with pytest.raises(ParameterError, match="zero reports"):
        make_aggregator(SPECS[1]).estimate()
    with pytest.raises(ParameterError, match="confidence"):
        acc = make_aggregator(SPECS[1])
        acc.add(Report(spec=SPECS[1].fingerprint, value="a"))
        acc.estimate(confidence=1.5)
