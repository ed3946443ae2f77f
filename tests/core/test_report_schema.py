"""The report schema seam: a new mechanism with a new report field needs no library edit.

A toy k-ary randomized response over indices (reports carry one field,
``"index"``, an integer in [0, k)) is defined entirely here: its spec class
declares its report schema, and its encoder and accumulator are registered
through :mod:`ldp.plugins`. Checking, the JSON form, writing JSON Lines, CSV
and Parquet with the library writers, reading them back with the library
readers (bad rows to rejects with a reason) and aggregating all work with no
edit to report_check, report_columns, writers, the readers, batch or report.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ldp
import ldp.client
from ldp import plugins
from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.aggregator.io import read_reports
from ldp.aggregator.report_columns import validate_columns
from ldp.aggregator.writers import write_reports
from ldp.batch import ReportBatch
from ldp.errors import ParameterError, ReportError
from ldp.report import Report
from ldp.report_check import check_report, required_fields
from ldp.report_schema import BitVector, BoundedInt, ReportSchema, report_schema_of
from ldp.specs import base as spec_base
from ldp.specs.base import Spec, registered_specs


@dataclasses.dataclass(frozen=True)
class IndexRR(Spec):
    """Toy k-ary randomized response on indices: keep the index with probability p, else a uniform other one."""

    mechanism: ClassVar[str] = "test-index-rr"
    report_kind: ClassVar[str] = "index"
    report_schema: ClassVar[ReportSchema] = ReportSchema((BoundedInt("index", bound="k"),))

    k: int
    p: float = 0.75

    @property
    def q(self) -> float:
        return (1 - self.p) / (self.k - 1)

    def privacy_summary(self) -> dict[str, float]:
        return {"epsilon": math.log(self.p / self.q)}


@dataclasses.dataclass(frozen=True)
class RowSketch(Spec):
    """Toy report form of a count-mean sketch: a hash-row index and m bits under a new name."""

    mechanism: ClassVar[str] = "test-row-sketch"
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (BoundedInt("row", bound="k"), BitVector("sketch", length="m"))
    )

    k: int = 3
    m: int = 12

    def privacy_summary(self) -> dict[str, float]:
        return {"epsilon": math.inf}  # a report-form fixture, not a mechanism


@dataclasses.dataclass(frozen=True)
class NoSchema(Spec):
    """A spec class that forgot its report schema."""

    mechanism: ClassVar[str] = "test-no-schema"

    k: int = 3

    def privacy_summary(self) -> dict[str, float]:
        return {"epsilon": math.inf}


class IndexRREncoder:
    def __init__(self, spec: IndexRR, seed: int = 0):
        self.spec = spec
        self._rng = np.random.default_rng(seed)

    def encode(self, value: int) -> Report:
        index = int(value)
        if self._rng.random() >= self.spec.p:
            index = (index + 1 + int(self._rng.integers(self.spec.k - 1))) % self.spec.k
        return Report(spec=self.spec.fingerprint, extra={"index": index})


class IndexRRAccumulator(Accumulator):
    _state_fields = ("counts",)

    def __init__(self, spec: IndexRR):
        self.spec = spec
        self.counts = np.zeros(spec.k, dtype=np.int64)

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def add(self, report: Report) -> None:
        self.counts[check_report(self.spec, report).field("index")] += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        index = batch.column("index")
        assert index is not None
        self.counts += np.bincount(index, minlength=self.spec.k)

    def merge(self, other: IndexRRAccumulator) -> IndexRRAccumulator:
        self._check_mergeable(other)
        self.counts += other.counts
        return self

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", **options: Any
    ) -> pd.DataFrame:
        self._refuse_options(options)
        spec = self.spec
        estimate = (self.counts - self.n * spec.q) / (spec.p - spec.q)
        return pd.DataFrame({"value": np.arange(spec.k), "estimate": estimate})


@pytest.fixture
def index_rr():
    """IndexRR registered as a mechanism with its encoder and accumulator; unregistered afterwards."""
    spec_base.register(IndexRR)
    plugins.implements(IndexRR, "encoder")(lambda spec, state=None: IndexRREncoder(spec))
    plugins.implements(IndexRR, "accumulator")(lambda spec, threads=1: IndexRRAccumulator(spec))
    try:
        yield IndexRR(k=4)
    finally:
        spec_base._REGISTRY.pop(IndexRR.mechanism, None)
        for role in ("encoder", "accumulator"):
            plugins._IMPLEMENTATIONS[role].pop(IndexRR, None)


def _reports(spec: IndexRR, n: int) -> list[Report]:
    encoder = ldp.client.make_encoder(spec)
    return [encoder.encode(i % spec.k) for i in range(n)]


def test_the_spec_is_registered_like_any_other(index_rr):
    assert registered_specs()["test-index-rr"] is IndexRR
    assert spec_base.spec_from_dict(index_rr.to_dict()) == index_rr
    assert required_fields(index_rr) == ("index",)


def test_registration_is_cleaned_up():
    assert "test-index-rr" not in registered_specs()
    assert not plugins.has_implementation(IndexRR, "accumulator")


def test_check_report_reads_the_declared_field(index_rr):
    fp = index_rr.fingerprint
    assert check_report(index_rr, Report(spec=fp, extra={"index": 3})).field("index") == 3
    with pytest.raises(ReportError, match=r"index 4 is out of range \[0, 4\)"):
        check_report(index_rr, Report(spec=fp, extra={"index": 4}))
    with pytest.raises(ReportError, match=r"index 'x' is out of range"):
        check_report(index_rr, Report(spec=fp, extra={"index": "x"}))
    with pytest.raises(ReportError, match=r"report has no 'index' \(test-index-rr reports carry index\)"):
        check_report(index_rr, Report(spec=fp))
    with pytest.raises(ReportError, match=r"unexpected 'value' for test-index-rr"):
        check_report(index_rr, Report(spec=fp, value=1, extra={"index": 1}))


def test_json_round_trip(index_rr):
    report = Report(spec=index_rr.fingerprint, extra={"index": 2}, group="g1")
    text = report.to_json()
    assert text == f'{{"v":2,"spec":"{index_rr.fingerprint}","index":2,"group":"g1"}}'
    back = Report.from_json(text)
    assert back == report and back.get("index") == 2
    assert back.to_dict() == json.loads(text)


def test_the_new_field_is_unexpected_for_other_specs():
    grr = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    # IndexRR's schema (declared when this module was imported) made "index" a known report field
    report = Report.from_dict({"v": 1, "spec": grr.fingerprint, "value": "a", "index": 1})
    with pytest.raises(ReportError, match="unexpected 'index' for grr"):
        check_report(grr, report)
    with pytest.raises(ReportError, match="unknown fields: 'indx'"):
        Report.from_dict({"v": 1, "spec": grr.fingerprint, "value": "a", "indx": 1})


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".csv.gz", ".parquet"])
def test_write_read_aggregate(index_rr, tmp_path, suffix):
    reports = _reports(index_rr, 500)
    path = tmp_path / f"reports{suffix}"
    assert write_reports(reports, path, index_rr) == 500
    chunks = list(read_reports([path], index_rr, chunk_size=64))
    assert not any(c.rejects for c in chunks)
    got = np.concatenate([c.batch.column("index") for c in chunks])
    assert got.tolist() == [r.get("index") for r in reports]
    accumulator = make_aggregator(index_rr)
    for chunk in chunks:
        accumulator.add_batch(chunk.batch)
    direct = make_aggregator(index_rr)
    direct.add_reports(reports)
    assert accumulator == direct and accumulator.n == 500
    assert len(accumulator.estimate()) == index_rr.k


def test_jsonl_writer_matches_report_to_json(index_rr, tmp_path):
    batch = ReportBatch.from_columns(index_rr.fingerprint, {"index": np.array([0, 3, 1], dtype=np.int64)})
    path = tmp_path / "r.jsonl"
    write_reports(batch, path, index_rr)
    assert path.read_text().splitlines() == list(batch.to_json_lines(index_rr))


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_bad_rows_go_to_rejects(index_rr, tmp_path, suffix):
    fp = index_rr.fingerprint
    good = _reports(index_rr, 40)
    path = tmp_path / f"r{suffix}"
    write_reports(good, path, index_rr)
    if suffix == ".jsonl":
        bad = [
            f'{{"v":1,"spec":"{fp}","index":9}}',
            f'{{"v":1,"spec":"{fp}","index":"x"}}',
            f'{{"v":1,"spec":"{fp}"}}',
            f'{{"v":1,"spec":"{fp}","index":1,"seed":3}}',
        ]
    else:
        bad = [f"1,{fp},9", f"1,{fp},x", f"1,{fp},"]
    with open(path, "a") as out:
        out.write("\n".join(bad) + "\n")
    chunks = list(read_reports([path], index_rr))
    rejects = [r for c in chunks for r in c.rejects]
    assert sum(len(c.batch) for c in chunks) == 40
    reasons = [r.reason for r in rejects]
    expected = ["value_out_of_domain", "value_out_of_domain", "missing_field", "unexpected_field"]
    assert reasons == expected[: len(bad)]
    assert all(r.detail for r in rejects)


def test_parquet_bad_rows_go_to_rejects(index_rr, tmp_path):
    fp = index_rr.fingerprint
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"v": [1, 1, 1], "spec": [fp] * 3, "index": [1, 7, None]}), path)
    chunks = list(read_reports([path], index_rr))
    assert sum(len(c.batch) for c in chunks) == 1
    rejects = [(r.line, r.reason) for c in chunks for r in c.rejects]
    assert rejects == [(2, "value_out_of_domain"), (3, "missing_field")]


def test_a_spec_without_a_schema_is_a_clear_error(tmp_path):
    spec = NoSchema()
    pattern = r"NoSchema \(mechanism 'test-no-schema'\) declares no report schema"
    with pytest.raises(ParameterError, match=pattern):
        report_schema_of(spec)
    with pytest.raises(ParameterError, match=pattern):
        check_report(spec, Report(spec=spec.fingerprint, value=1))
    with pytest.raises(ParameterError, match=pattern):
        validate_columns(spec, {"v": pa.array([1])}, 1)
    with pytest.raises(ParameterError, match=pattern):
        write_reports(
            ReportBatch(spec=spec.fingerprint, values=np.zeros(1, np.int64)), tmp_path / "r.csv", spec
        )
    path = tmp_path / "r.jsonl"
    path.write_text(f'{{"v":1,"spec":"{spec.fingerprint}","value":1}}\n')
    with pytest.raises(ParameterError, match=pattern):
        list(read_reports([path], spec))


def test_schema_declarations_are_checked():
    with pytest.raises(ParameterError, match="names a field twice"):
        ReportSchema((BoundedInt("index", bound=3), BoundedInt("index", bound=3)))
    with pytest.raises(ParameterError, match="not allowed"):
        ReportSchema((BoundedInt("group", bound=3),))
    with pytest.raises(ParameterError, match="one or more"):
        ReportSchema(())


def test_every_registered_spec_declares_a_schema():
    for cls in registered_specs().values():
        if isinstance(cls.__dict__.get("report_schema"), functools.cached_property):  # per instance
            with pytest.raises(ParameterError, match="per spec instance"):
                report_schema_of(cls)
            continue
        assert report_schema_of(cls).names


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_bit_vector_under_a_new_name(tmp_path, suffix):
    spec = RowSketch()
    rng = np.random.default_rng(5)
    bits = np.packbits(rng.integers(0, 2, (50, 12)).astype(np.uint8), axis=1)
    batch = ReportBatch.from_columns(spec.fingerprint, {"row": rng.integers(0, 3, 50), "sketch": bits})
    first = next(batch.reports(spec))
    assert first.to_json().startswith(f'{{"v":1,"spec":"{spec.fingerprint}","row":')
    assert Report.from_json(first.to_json()).get("sketch") == first.to_dict()["sketch"]  # base64 text
    assert check_report(spec, Report.from_json(first.to_json())).field("sketch") == bytes(bits[0])
    path = tmp_path / f"r{suffix}"
    write_reports(batch, path, spec)
    if suffix == ".jsonl":
        assert path.read_text().splitlines() == list(batch.to_json_lines(spec))
        with open(path, "a") as out:  # padding bits set; too short
            out.write(f'{{"v":1,"spec":"{spec.fingerprint}","row":0,"sketch":"AAF="}}\n')
            out.write(f'{{"v":1,"spec":"{spec.fingerprint}","row":0,"sketch":"AA=="}}\n')
    chunks = list(read_reports([path], spec))
    got = [c.batch for c in chunks]
    assert np.array_equal(np.concatenate([b.column("sketch") for b in got]), bits)
    assert np.array_equal(np.concatenate([b.column("row") for b in got]), batch.column("row"))
    reasons = [r.reason for c in chunks for r in c.rejects]
    assert reasons == (["bad_padding", "wrong_length"] if suffix == ".jsonl" else [])


def test_a_part_fields_flags_must_be_an_earlier_bit_vector():
    from ldp.report_schema import DomainElement, PartField

    flagged = PartField("a0_value", inner=DomainElement(), index=0, parts="attributes", flags="sampled")
    with pytest.raises(ParameterError, match="flags field 'sampled' must be an earlier BitVector"):
        ReportSchema((flagged,))
    with pytest.raises(ParameterError, match="flags field 'sampled' must be an earlier BitVector"):
        ReportSchema((flagged, BitVector("sampled", length=2)))
    schema = ReportSchema((BitVector("sampled", length=2), flagged))
    assert schema.conditional and schema.field("a0_value").presence_flag() == ("sampled", 0)
    with pytest.raises(ParameterError, match="needs the part's own ReportField"):
        PartField("a0_value", index=0)


_FRESH_PARSE = """
import json, sys
from ldp.report import Report
from ldp.errors import ReportError
cases = json.load(open(sys.argv[1]))["encodings"]
for case in cases:
    assert Report.from_json(case["report_json"]).spec == case["fingerprint"], case["spec"]
for bad in ('{"v":1,"spec":"0123456789abcdef","a1_typo":1}', '{"v":1,"spec":"0123456789abcdef","ax_bits":"gA=="}'):
    try:
        Report.from_json(bad)
    except ReportError as err:
        assert "unknown fields" in str(err), err
    else:
        raise AssertionError(bad)
print(len(cases))
"""


def test_every_vector_report_parses_in_a_process_that_built_no_spec(tmp_path):
    """Parsing must not depend on which specs the process happened to build first (a lazy registry loads them).

    Regression: ``Report.from_json`` refused multi-attribute, CMS, PEM... reports
    in a fresh process, and the vectors test passed or failed with test order.
    """
    import subprocess
    import sys
    from pathlib import Path

    vectors = Path(__file__).resolve().parents[1] / "vectors" / "vectors.json"
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_PARSE, str(vectors)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(json.loads(vectors.read_text())["encodings"])
