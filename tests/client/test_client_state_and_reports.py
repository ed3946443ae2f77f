"""Client state (persistence, corruption, permissions) and report round trips (issue 2)."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
from conftest import frequency_specs, rappor_specs
from hypothesis import given, settings
from hypothesis import strategies as st

import ldp
from ldp.client import ClientState, make_encoder
from ldp.errors import ReportError, StateError
from ldp.report import Report, pack_bits, unpack_bits
from ldp.report_schema import report_schema_of

RAPPOR = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/2", q="3/4")
OTHER = ldp.Rappor(num_bits=64, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")


# -- client state ------------------------------------------------------------
def test_missing_state_is_created_private_and_reopens_identically(tmp_path):
    path = tmp_path / "sub" / "client.json"
    state = ClientState.open(path, RAPPOR)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name != path.name]  # no temp file left behind
    again = ClientState.open(path, RAPPOR)
    assert again == state and again.secret == state.secret and again.cohort == state.cohort
    assert 0 <= state.cohort < RAPPOR.num_cohorts


def test_restart_gives_the_same_prr_for_the_same_value(tmp_path):
    path = tmp_path / "client.json"
    first = make_encoder(RAPPOR, state=str(path))
    prr = {v: first.permanent_bits(v) for v in ("a", "b", "https://example.com/é")}
    restarted = make_encoder(RAPPOR, state=str(path))  # a new process would do exactly this
    assert {v: restarted.permanent_bits(v) for v in prr} == prr
    assert restarted.encode("a").cohort == first.encode("a").cohort == first.state.cohort
    # another client (another secret) gets another PRR: the PRF is keyed
    other = make_encoder(RAPPOR, state=str(tmp_path / "other.json"))
    assert any(other.permanent_bits(v) != prr[v] for v in prr)


@pytest.mark.parametrize(
    "content, match",
    [
        (b"", "corrupt or truncated"),
        (b"garbage\n", "corrupt or truncated"),
        (b"\xff\xfe\x00", "cannot read"),
        (b'{"format": "ldp-client-state/1", "spec": "', "corrupt or truncated"),  # truncated JSON
        (b'{"format": "something-else"}', "not an ldp client state"),
        (b"[1, 2]", "not an ldp client state"),
        (b'{"format": "ldp-client-state/1", "spec": "x"}', "missing or malformed"),
    ],
)
def test_corrupt_or_truncated_state_is_an_error_and_left_untouched(tmp_path, content, match):
    path = tmp_path / "client.json"
    path.write_bytes(content)
    path.chmod(0o600)  # private, so the content is what is judged
    with pytest.raises(StateError, match=match):
        ClientState.open(path, RAPPOR)
    with pytest.raises(StateError):
        make_encoder(RAPPOR, state=str(path))
    assert path.read_bytes() == content  # never silently replaced


def test_truncated_copy_of_a_real_state_is_an_error(tmp_path):
    path = tmp_path / "client.json"
    ClientState.open(path, RAPPOR)
    whole = path.read_bytes()
    for cut in (1, len(whole) // 2, len(whole) - 3):
        path.write_bytes(whole[:cut])
        with pytest.raises(StateError):
            ClientState.open(path, RAPPOR)
        assert path.read_bytes() == whole[:cut]


def test_foreign_state_is_an_error_and_left_untouched(tmp_path):
    path = tmp_path / "client.json"
    ClientState.open(path, OTHER)
    before = path.read_bytes()
    with pytest.raises(StateError, match="belongs to spec"):
        ClientState.open(path, RAPPOR)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("cohort", 64, "outside"),
        ("cohort", -1, "outside"),
        ("cohort", True, "outside"),
        ("cohort", "3", "outside"),
        ("secret", "00" * 31, "32 bytes"),
        ("secret", "zz" * 32, "malformed"),
    ],
)
def test_state_with_bad_fields_is_an_error(tmp_path, field, value, match):
    path = tmp_path / "client.json"
    ClientState.open(path, RAPPOR)
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    with pytest.raises(StateError, match=match):
        ClientState.open(path, RAPPOR)
    assert path.read_bytes() == before


def test_state_for_another_spec_is_refused_by_the_encoder():
    with pytest.raises(ldp.errors.ParameterError):
        make_encoder(RAPPOR, state=ClientState.new(OTHER))


@pytest.mark.parametrize("cohort", [True, -1, RAPPOR.num_cohorts, 2.0, "1"])
def test_a_state_built_with_a_cohort_outside_the_spec_is_refused_by_the_encoder(cohort):
    """Its reports skip Report's checks (Report.of_encoder): the encoder checks the cohort once, by name."""
    state = ClientState.new(RAPPOR)
    bad = ClientState(spec=state.spec, secret=state.secret, cohort=cohort)
    with pytest.raises(ldp.errors.ParameterError, match="cohort"):
        make_encoder(RAPPOR, state=bad)


# -- reports -----------------------------------------------------------------
FINGERPRINTS = st.text("0123456789abcdef", min_size=16, max_size=16)
TEXT = st.text(max_size=40)
U64 = st.integers(0, (1 << 64) - 1)
U32 = st.integers(0, (1 << 32) - 1)
VALUES = st.one_of(
    TEXT, st.integers(-(1 << 63), (1 << 63) - 1), st.floats(allow_nan=False, allow_infinity=False)
)
REPORTS = st.builds(
    Report,
    spec=FINGERPRINTS,
    value=st.none() | VALUES,
    seed=st.none() | U64,
    bits=st.none() | st.binary(max_size=200),
    cohort=st.none() | U32,
    client=st.none() | TEXT,
)


def _same(a: Report, b: Report) -> bool:
    # floats: compare bit patterns (−0.0 must stay −0.0)
    if isinstance(a.value, float) or isinstance(b.value, float):
        if (
            type(a.value) is not type(b.value)
            or np.float64(a.value).tobytes() != np.float64(b.value).tobytes()
        ):
            return False
        a, b = Report(**{**vars(a), "value": None}), Report(**{**vars(b), "value": None})
    return a == b


@settings(max_examples=300, deadline=None)
@given(REPORTS)
def test_report_bytes_round_trip(report):
    assert _same(Report.from_bytes(report.to_bytes()), report)


@settings(max_examples=300, deadline=None)
@given(REPORTS)
def test_report_json_round_trip(report):
    line = report.to_json()
    assert "\n" not in line
    assert _same(Report.from_json(line), report)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_report_error(data):
    try:
        report = Report.from_bytes(data)
    except ReportError:
        return
    assert Report.from_bytes(report.to_bytes()) == report


@settings(max_examples=200, deadline=None)
@given(REPORTS, st.data())
def test_every_truncation_is_a_report_error(report, data):
    raw = report.to_bytes()
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(ReportError, match="truncated"):
        Report.from_bytes(raw[:cut])


@pytest.mark.parametrize("spec", frequency_specs() + rappor_specs(), ids=lambda s: s.mechanism)
def test_real_client_reports_round_trip_and_carry_the_fingerprint(spec):
    encoder = make_encoder(spec)
    value = (
        spec.domain[1] if getattr(spec, "domain", None) else ("yes" if spec.encoding == "boolean" else "v")
    )
    for _ in range(20):
        report = encoder.encode(value)
        assert report.spec == spec.fingerprint
        if not report.extra:  # declared (non built-in) fields have no binary form, only JSON
            assert Report.from_bytes(report.to_bytes()) == report
        assert Report.from_json(report.to_json()) == report
        data = json.loads(report.to_json())
        assert data["v"] == 1 and data["spec"] == spec.fingerprint
        if report.bits is not None:  # packed, numpy.packbits order, zero padding
            width = report_schema_of(spec).field("bits").num_bits(spec)
            assert isinstance(report.bits, bytes) and len(report.bits) == (width + 7) // 8
            lanes = unpack_bits(report.bits, width)
            assert bytes(np.packbits(np.asarray(lanes, dtype=np.uint8))) == report.bits
            assert pack_bits([i for i, b in enumerate(lanes) if b], width) == report.bits
        if isinstance(spec, ldp.Rappor):
            assert data["cohort"] == encoder.state.cohort


@pytest.mark.parametrize(
    "raw, match",
    [
        (b"", "truncated"),
        (b"\x03\x00" + bytes(8), "version 3"),
        (b"\x01\x40" + bytes(8), "unknown bits"),
        (b"\x01\x01" + bytes(8) + b"\x07" + bytes(8), "type tag 7"),
        (b"\x01\x00" + bytes(8) + b"\x00", "trailing"),
        (b"\x01\x01" + bytes(8) + b"\x02\x00\x02\xff\xfe", "UTF-8"),
        (b"\x01\x04" + bytes(8) + b"\x00\x05ab", "truncated: bits"),
    ],
)
def test_malformed_bytes_name_the_problem(raw, match):
    with pytest.raises(ReportError, match=match):
        Report.from_bytes(raw)


@pytest.mark.parametrize(
    "line, match",
    [
        ("{", "not valid JSON"),
        ("[]", "JSON object"),
        ('{"spec": "0123456789abcdef"}', "version"),
        ('{"v": 1}', "fingerprint"),
        ('{"v": 1, "spec": "xyz"}', "16-hex-digit"),
        ('{"v": 1, "spec": "0123456789abcdef", "bits": "!!"}', "base64"),
        ('{"v": 1, "spec": "0123456789abcdef", "cohort": -1}', "cohort"),
        ('{"v": 1, "spec": "0123456789abcdef", "value": true}', "value"),
        ('{"v": 1, "spec": "0123456789abcdef", "extra": 0}', "unknown fields"),
    ],
)
def test_malformed_json_names_the_problem(line, match):
    with pytest.raises(ReportError, match=match):
        Report.from_json(line)


# -- spec JSON round trips -------------------------------------------------------
@pytest.mark.parametrize("spec", frequency_specs() + rappor_specs(), ids=lambda s: s.mechanism)
def test_every_spec_loads_from_dict_string_and_path(tmp_path, spec):
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json(indent=2))
    for source in (json.loads(spec.to_json()), spec.to_json(), str(path), path, spec):
        loaded = ldp.load_spec(source)
        assert loaded == spec and type(loaded) is type(spec)
        assert loaded.fingerprint == spec.fingerprint and loaded.to_json() == spec.to_json()


DOMAINS = st.one_of(
    st.lists(st.text(min_size=1, max_size=8), min_size=2, max_size=12, unique=True),
    st.integers(2, 50).map(lambda d: list(range(d))),
)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["binary-rr", "grr", "sue", "oue", "olh", "blh"]),
    DOMAINS,
    st.floats(0.05, 8.0, allow_nan=False),
)
def test_frequency_spec_json_round_trip(mechanism, domain, epsilon):
    from ldp.specs.selection import FREQUENCY_MECHANISMS

    if mechanism == "binary-rr":
        domain = domain[:2]
    spec = FREQUENCY_MECHANISMS[mechanism](domain=tuple(domain), epsilon=epsilon)
    loaded = ldp.load_spec(spec.to_json())
    assert loaded == spec and loaded.fingerprint == spec.fingerprint
    assert loaded.privacy_ratio == spec.privacy_ratio  # exact probabilities survive JSON


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 256),
    st.integers(1, 8),
    st.integers(1, 256),
    st.sampled_from(["mmh3", "md5"]),
    st.fractions(0, 1, max_denominator=1000).filter(lambda f: f < 1),
    st.data(),
)
def test_rappor_spec_json_round_trip(num_bits, num_hashes, num_cohorts, hash_name, f, data):
    num_hashes = min(num_hashes, num_bits)
    p = data.draw(st.fractions(0, 1, max_denominator=1000).filter(lambda x: 0 < x < 1))
    q = data.draw(st.fractions(p, 1, max_denominator=1000).filter(lambda x: p < x < 1))
    spec = ldp.Rappor(
        num_bits=num_bits, num_hashes=num_hashes, num_cohorts=num_cohorts, f=f, p=p, q=q, hash=hash_name
    )
    loaded = ldp.load_spec(json.loads(spec.to_json()))
    assert loaded == spec and loaded.fingerprint == spec.fingerprint
    assert (loaded.f, loaded.p, loaded.q) == (f, p, q)


@pytest.mark.parametrize("value", ["\x85", "a\u2028b", "\u2029", "é"])
def test_report_json_line_has_no_raw_unicode_line_break(value):
    """A domain value holding U+0085/U+2028/U+2029 still gives one JSON Lines record."""
    report = make_encoder(ldp.GRR(epsilon=1.0, domain=(value, "other"))).encode(value)
    line = report.to_json()
    assert len(line.splitlines()) == 1
    assert Report.from_json(line) == report
