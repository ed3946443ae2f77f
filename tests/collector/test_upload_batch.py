"""The batch upload decoder accepts exactly what the envelope-by-envelope path accepts, with the same result.

For every spec shape (every registered mechanism), real uploads and many
mutations of them (each report mutated as tests/core/test_report_compiled.py
does; ids, times and envelope keys of every JSON type and boundary; pruned
windows; duplicate keys; bodies that are not JSON, not an array, or not
UTF-8) go through both paths: whatever :func:`check_upload_body` accepts,
``parse_upload`` + ``check_envelopes`` accept too, every envelope, with the
same ids, times, stored text and checked content; whatever it leaves (None),
that path decides. Real uploads of a spec the batch decoder types must all
take it (else it would be no faster).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import msgspec
import numpy as np
import orjson
import pytest
from conftest import ODD_JSON_VALUES, every_spec_shape, report_variants, sample_values

import ldp
from ldp.client import encode_batch
from ldp.collector.envelopes import AcceptedColumns, UnreadableBody, check_envelopes, parse_upload
from ldp.collector.ingest import _batches_by_window
from ldp.collector.tasks import new_task
from ldp.collector.upload_batch import _number_column, _Refused, batch_decoder, check_upload_body
from ldp.collector.windows import windows_batches
from ldp.report import BUILTIN_PAYLOAD
from ldp.report_schema import BitVector, BoundedInt, Number, PartField, report_schema_of

SPECS = every_spec_shape()
NOW = 1_800_000_000.0
JSON = "application/json"


def _new_task(spec: Any) -> Any:
    return new_task(spec, window="1h", time_precision=60, min_batch=1)[0]


#: The specs whose uploads the batch decoder types (the others are checked envelope by envelope).
TYPED_SPECS = [spec for spec in SPECS if batch_decoder(_new_task(spec)) is not None]


def _ids(n: int, seed: int = 0) -> list[str]:
    raw = np.random.default_rng(seed).bytes(16 * n)
    return [base64.urlsafe_b64encode(raw[i : i + 16]).rstrip(b"=").decode() for i in range(0, 16 * n, 16)]


def _body(items: Any) -> bytes:
    """JSON text as a client might write it (lone surrogates escaped, NaN and Infinity as Python writes them)."""
    return json.dumps(items, separators=(",", ":")).encode()


def _summary(checked: Any) -> tuple[list[Any], list[Any]]:
    accepted = [(a.index, a.id, a.stored, repr(a.checked)) for a in checked.accepted]
    return accepted, [r.to_dict() for r in checked.rejected]


def _agree(task: Any, body: bytes, content_type: str = JSON, pruned: frozenset[int] = frozenset()) -> bool:
    """Assert that the batch path accepts only what the envelope path accepts, identically; True when it accepted."""
    fast = check_upload_body(task, body, content_type, NOW, pruned=pruned)
    if fast is None:
        return False
    try:
        slow = check_envelopes(task, parse_upload(body, content_type), NOW, pruned=pruned)
    except UnreadableBody as exc:
        raise AssertionError(
            f"the batch path accepted a body the envelope path refuses ({exc}): {body[:300]!r}"
        ) from None
    assert not fast.rejected
    assert _summary(fast) == _summary(slow), body[:300]
    return True


def _task_and_envelopes(spec: Any, n: int = 8) -> tuple[Any, list[dict[str, Any]]]:
    task = _new_task(spec)
    values = sample_values(spec, n)
    reports = [r.to_dict() for r in encode_batch(spec, values, np.random.default_rng(3)).reports(spec)]
    t = int(NOW) - int(NOW) % 60
    return task, [{"id": i, "t": t, "report": r} for i, r in zip(_ids(len(reports)), reports)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.mechanism}-{s.fingerprint[:6]}")
def test_batch_path_agrees_with_the_envelope_path(spec):
    task, envelopes = _task_and_envelopes(spec)
    typed = batch_decoder(task) is not None
    assert _agree(task, _body(envelopes)) == typed, "a real upload of a typed spec must take the batch path"
    first = envelopes[0]
    for number, base in enumerate(envelopes[:3]):
        ids = _ids(400, seed=number + 1)
        for k, report in enumerate(report_variants(base["report"])):
            _agree(task, _body([first, {**base, "id": ids[k % 400], "report": report}]))
    for item in _envelope_variants(first):
        _agree(task, _body([envelopes[1], item]))


def _envelope_variants(base: dict[str, Any]) -> list[Any]:
    out: list[Any] = [None, [], "x", 1, {}]
    for name in ("id", "t", "report"):
        out += [{**base, name: value} for value in ODD_JSON_VALUES]
        out.append({key: value for key, value in base.items() if key != name})
    t, envelope_id = base["t"], base["id"]
    out += [
        {**base, "t": t + 1},
        {**base, "t": t + 60},
        {**base, "t": t + 3_600},
        {**base, "t": t - 86_400 * 400},
        {**base, "t": float(t)},
        {**base, "t": -t},
        {**base, "t": 2**70},
        {**base, "id": envelope_id[:-1] + "B"},  # non-zero trailing bits
        {**base, "id": envelope_id[:-1]},
        {**base, "id": envelope_id + "A"},
        {**base, "id": envelope_id.replace(envelope_id[0], "+")},
        {**base, "id": envelope_id[:-1] + "\n"},
        {**base, "id": "é" * 22},
        {**base, "extra": 1},
        {**base, "client": "c"},
        dict(reversed(list(base.items()))),
    ]
    return out


def test_batch_path_leaves_bodies_the_envelope_path_refuses_or_reads_otherwise():
    spec = ldp.GRR(domain=[f"v{i}" for i in range(16)], epsilon=1.0)
    task, envelopes = _task_and_envelopes(spec, 4)
    good = _body(envelopes)
    assert _agree(task, good)
    text = good.decode()
    one = _body(envelopes[:1]).decode()[1:-1]
    for body in [
        b"\xef\xbb\xbf" + good,  # a byte order mark
        b" \n" + good + b"\n ",  # white space around the array
        good + b"x",
        good[:-1],
        b"[" + one.encode() + b",]",
        one.encode(),  # an object, not an array
        text.replace('"t":', '"t":1,"t":', 1).encode(),  # a duplicate key: the last one counts in both
        text.replace('"v":1', '"v":1,"v":1', 1).encode(),
        text.replace('"value":"', '"value":"v1","value":"', 1).encode(),
        text.replace('"value":"v', '"value":"\\u0076', 1).encode(),  # an escaped spelling of the same text
        good.replace(b'"v', b'"\xff', 1),  # not UTF-8
        json.dumps([{**envelopes[0], "t": float("nan")}]).encode(),
        _body([envelopes[0]] * 1_001),
        b"[]",
    ]:
        _agree(task, body)
    for content_type in ("application/x-ndjson", "text/plain", None, "application/json; charset=utf-8"):
        _agree(task, good, content_type)
    assert check_upload_body(task, good, "text/plain", NOW) is None
    window = task.window_start(envelopes[0]["t"])
    assert check_upload_body(task, good, JSON, NOW, pruned=frozenset({window})) is None
    assert _agree(task, good, pruned=frozenset({window - 3_600}))


def test_batch_path_takes_grouped_reports_and_canonical_bits():
    grr = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    task, _ = new_task(grr, window="1h", time_precision=60, min_batch=1)
    t = int(NOW) - int(NOW) % 60
    ids = _ids(3)
    report = {"v": 2, "spec": grr.fingerprint, "value": "b", "group": "app 1.2"}
    checked = check_upload_body(task, _body([{"id": ids[0], "t": t, "report": report}]), JSON, NOW)
    assert checked is not None and checked.accepted[0].checked.group == "app 1.2"
    assert checked.accepted[0].stored.report == json.dumps(report, separators=(",", ":"))
    assert _agree(task, _body([{"id": ids[1], "t": t, "report": {**report, "group": None}}]))
    oue = ldp.OUE(domain=[f"v{i}" for i in range(12)], epsilon=1.0)  # 2 bytes: 'AAA=' in base64
    task, _ = new_task(oue, window="1h", time_precision=60, min_batch=1)
    body = _body([{"id": ids[2], "t": t, "report": {"v": 1, "spec": oue.fingerprint, "bits": "gAB="}}])
    checked = check_upload_body(task, body, JSON, NOW)
    assert checked is not None and '"bits":"gAA="' in checked.accepted[0].stored.report
    assert _agree(task, body)


def _same_batch(a: Any, b: Any) -> None:
    """The same reports (in any order: counting does not depend on it), the same column types."""
    assert a.spec == b.spec and sorted(a.columns()) == sorted(b.columns())

    def rows(batch: Any) -> list[str]:
        columns = [batch.column(name).tolist() for name in sorted(batch.columns())]
        groups = [None] * len(batch) if batch.groups is None else list(batch.groups)
        return sorted(map(repr, zip(*columns, groups)))

    for name, column in a.columns().items():
        assert column.dtype == b.column(name).dtype, name
    assert (a.groups is None) == (b.groups is None)
    assert rows(a) == rows(b)


def test_the_batch_decoder_types_every_registered_mechanism():
    typed = {spec.mechanism for spec in TYPED_SPECS}
    assert {"binary-rr", "grr", "oue", "sue", "olh", "blh", "rappor", "hr", "loloha"} <= typed, sorted(typed)
    new_kinds = {"ss", "dbitflip", "cms", "hcms", "pem", "treehist", "range-hierarchy", "range-haar"}
    new_kinds |= {"pckv-ue", "pckv-grr", "privkvm", "multi-attribute"}
    new_kinds |= {"duchi", "stochastic-rounding", "piecewise", "hybrid", "laplace", "gaussian", "onebitmean"}
    assert new_kinds <= typed, sorted(new_kinds - typed)
    assert {spec.mechanism for spec in SPECS} == typed
    sampled = [spec for spec in TYPED_SPECS if report_schema_of(spec).conditional]
    assert len(sampled) == 2, "multi-attribute records of sampled attributes (fields present as flagged)"


def _inner(spec: Any, field: Any) -> tuple[Any, Any]:
    """(spec, field) whose rules apply to a schema field: a record part's own."""
    return (field.part(spec), field.inner) if isinstance(field, PartField) else (spec, field)


def _field_mutations(spec: Any, report: dict[str, Any]) -> list[tuple[Any, bool]]:
    """(report or raw JSON text of one field, whether the batch path can take it) at each field's boundaries.

    A raw text is ``(name, text)``: the field written as that JSON text (1e309, NaN, another spelling of
    a number). Whether the batch path can take it: every JSON type and spelling it types, valid or not
    (a valid one must take it; an int for a float; not a float for an int, a number it would spell
    otherwise, or a ``bits`` text that Report re-encodes).
    """
    out: list[tuple[Any, bool]] = []
    for field in report_schema_of(spec).fields:
        name = field.name
        part, rules = _inner(spec, field)
        if field.presence_flag() is not None:  # a record part present only where its flag is set
            out += [({**report, name: None}, False), ({k: v for k, v in report.items() if k != name}, True)]
            if name not in report:
                out.append(({**report, name: 0}, True))
                continue
        value = report[name]
        if type(rules) is BoundedInt:
            bound = rules.bound_for(part)
            out += [({**report, name: raw}, True) for raw in (0, bound - 1, bound, bound + 1, -1, 2**63 - 1)]
            out += [({**report, name: float(bound - 1)}, False), ((name, f"{bound - 1}.0"), False)]
            out += [((name, f"{bound - 1}e0"), False), ((name, "-0"), True)]
        elif type(rules) is Number:
            up, down = np.nextafter(value, np.inf), np.nextafter(value, -np.inf)
            for raw in (value, -value, up, down, 0.0, -0.0, 1e15, 5e-324, 1e16, -1e16, 1e300):
                out.append(({**report, name: float(raw)}, abs(raw) < 1e16))
            if float(value).is_integer():
                out.append(({**report, name: int(value)}, True))  # an int stored as sent, counted as a float
            for text in ("1e309", "-1e309", "NaN", "Infinity", "-Infinity"):
                out.append(((name, text), False))
            for text in ("1E0", "-0", "0e0", "1.0e-0", f"{value:.17e}", f"{value:.17E}", f"{value:.25f}"):
                out.append(((name, text), True))  # parsed, then written back as the shortest text
        elif isinstance(rules, BitVector):
            num_bits = rules.num_bits(part)
            bits = bytearray(base64.b64decode(value))
            positions = list(range(min(num_bits, 24))) + list(range(max(24, num_bits - 8), num_bits))
            ones = [i for i in range(num_bits) if bits[i >> 3] & (0x80 >> (i & 7))]
            variants = []
            for i in positions:  # one bit flipped: a subset of k ± 1, dBitFlip's samples or its sent bits
                flipped = bytearray(bits)
                flipped[i >> 3] ^= 0x80 >> (i & 7)
                variants.append(flipped)
            if ones and len(ones) < num_bits:  # a set bit moved: the same weight
                moved = bytearray(bits)
                zero = next(i for i in range(num_bits) if i not in ones)
                moved[ones[0] >> 3] ^= 0x80 >> (ones[0] & 7)
                moved[zero >> 3] ^= 0x80 >> (zero & 7)
                variants.append(moved)
            for spare in range(num_bits, 8 * len(bits)):  # a padding bit set
                padded = bytearray(bits)
                padded[-1] |= 0x80 >> (spare & 7)
                variants.append(padded)
            variants += [bits + b"\0", bits[:-1], bytearray(len(bits)), bytearray(b"\xff" * len(bits))]
            out += [({**report, name: base64.b64encode(raw).decode()}, True) for raw in variants]
            text = base64.b64encode(bits).decode()
            end = 4 * (len(bits) // 3)  # where the unpadded groups end
            if end:  # padding there: the last report's groups joined to the others' stay valid base64
                out.append(({**report, name: text[: end - 2] + "==" + text[end:]}, False))
            if text.endswith("="):  # non-canonical trailing bits: a valid spelling of the same bytes
                tail = text.rstrip("=")
                b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                odd = tail[:-1] + b64[b64.index(tail[-1]) | 1] + text[len(tail) :]
                out.append(({**report, name: odd}, name != "bits"))  # 'bits' is re-encoded: envelope path
    return out


@pytest.mark.parametrize(
    "spec",
    [s for s in TYPED_SPECS if _field_mutations(s, _task_and_envelopes(s, n=1)[1][0]["report"])],
    ids=lambda s: f"{s.mechanism}-{s.fingerprint[:6]}",
)
def test_batch_path_agrees_at_the_boundaries_of_each_field_kind(spec):
    """Bounded integers at and past their bound, numbers at and off the output support (spelled
    otherwise, non-finite, too large for one text), bit vectors with a bit flipped (a subset of k ± 1),
    moved or set in the padding, record parts present against their flags: the batch path agrees with
    the envelope path, and takes every upload that path accepts in a form it types."""
    # (domain values: test_batch_path_agrees_with_the_envelope_path mutates them)
    task, envelopes = _task_and_envelopes(spec, n=3)
    first = envelopes[0]
    taken = 0
    for number, base in enumerate(envelopes[1:]):
        ids = _ids(200, seed=7 + number)
        for k, (mutated, typed) in enumerate(_field_mutations(spec, base["report"])):
            if isinstance(mutated, tuple):  # a field's raw JSON text
                name, text = mutated
                placeholder = {**base["report"], name: "@raw@"}
                body = _body([first, {**base, "id": ids[k % 200], "report": placeholder}])
                body = body.replace(b'"@raw@"', text.encode())
            else:
                body = _body([first, {**base, "id": ids[k % 200], "report": mutated}])
            if _agree(task, body):
                taken += 1
            elif typed:
                slow = check_envelopes(task, parse_upload(body, JSON), NOW)
                assert slow.rejected, ("a valid upload in a typed form must take the batch path", mutated)
    assert taken


@pytest.mark.parametrize("spec", TYPED_SPECS, ids=lambda s: f"{s.mechanism}-{s.fingerprint[:6]}")
def test_batch_path_takes_any_white_space_and_leaves_other_key_orders(spec):
    task, envelopes = _task_and_envelopes(spec, n=3)
    assert _agree(task, json.dumps(envelopes, indent=1, separators=(" , ", " : ")).encode())
    reordered = [{**e, "report": dict(reversed(list(e["report"].items())))} for e in envelopes]
    extras = [f.name for f in report_schema_of(spec).fields if f.name not in BUILTIN_PAYLOAD]
    assert _agree(task, _body(reordered)) == (len(extras) < 2)  # extra fields are stored in the order sent
    if extras:
        name = extras[0]
        escaped = _body(envelopes).replace(
            f'"{name}"'.encode(), f'"\\u{ord(name[0]):04x}{name[1:]}"'.encode(), 1
        )
        assert json.loads(escaped) == envelopes
        assert _agree(task, escaped) == (len(extras) < 2)
        doubled = _body(envelopes).replace(f'"{name}":'.encode(), f'"{name}":0,"{name}":'.encode(), 1)
        _agree(task, doubled)


@pytest.mark.parametrize("spec", TYPED_SPECS, ids=lambda s: f"{s.mechanism}-{s.fingerprint[:6]}")
def test_an_upload_kept_as_columns_is_counted_as_its_checked_records(spec):
    """Counting an accepted upload from its columns gives each window the batch its records give,
    also for an upload spanning two windows and for several uploads of one window joined."""
    task, envelopes = _task_and_envelopes(spec)
    later = [dict(e, id=i, t=e["t"] + 3600) for e, i in zip(envelopes, _ids(len(envelopes), seed=1))]
    uploads = [
        check_upload_body(task, _body(body), JSON, NOW + 3600)
        for body in (envelopes[:5], envelopes[5:], envelopes[:3] + later[:4])
    ]
    assert all(type(u.accepted) is AcceptedColumns for u in uploads)
    pairs = [(a.stored.t, a.checked) for u in uploads for a in u.accepted]
    expected = windows_batches(task, pairs)
    got = _batches_by_window(task, [], [u.accepted for u in uploads])
    assert sorted(got) == sorted(expected) and len(expected) == 2
    for start in expected:
        _same_batch(got[start], expected[start])
    # records counted one by one (a replay among them) and uploads counted whole, together
    mixed = _batches_by_window(task, pairs[:2], [uploads[1].accepted])
    for start, batch in windows_batches(task, pairs[:2] + pairs[5:8]).items():
        _same_batch(mixed[start], batch)


def test_accepted_columns_read_as_the_envelope_paths_records():
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/4", q="3/4")
    task, envelopes = _task_and_envelopes(spec, n=6)
    fast = check_upload_body(task, _body(envelopes), JSON, NOW)
    slow = check_envelopes(task, parse_upload(_body(envelopes), JSON), NOW)
    assert fast is not None and len(fast.accepted) == 6
    assert fast.accepted == slow.accepted and list(fast.accepted) == slow.accepted
    assert fast.accepted[-1] == slow.accepted[-1] and fast.accepted[1:4] == slow.accepted[1:4]
    with pytest.raises(IndexError):
        fast.accepted[6]


def test_numbers_the_two_encoders_may_spell_otherwise_take_the_envelope_path():
    """Below 1e16 msgspec (the batch path's stored text) and orjson (the envelope path's) write every
    float alike; from there on msgspec drops the exponent's '+' (no built-in spec outputs such a number,
    so a spec whose support takes any is stood in for here)."""
    rng = np.random.default_rng(11)
    magnitudes = 10.0 ** rng.uniform(-30, 16, 20_000) * rng.choice([-1.0, 1.0], 20_000)
    floats = [float(x) for x in magnitudes if abs(x) < 1e16] + [0.0, -0.0, 5e-324, 9_999_999_999_999_998.0]
    assert msgspec.json.encode(floats) == orjson.dumps(floats)
    assert msgspec.json.encode(1e16) != orjson.dumps(1e16)

    class Everything:  # an output support holding every number
        @staticmethod
        def in_support(values: Any) -> np.ndarray:
            return np.ones(np.shape(values), dtype=bool)

    finish = _number_column(Everything())
    assert finish([9_999_999_999_999_998.0, -1e15, 3]) == [9_999_999_999_999_998.0, -1e15, 3.0]
    for large in (1e16, -1e16, 1e300, 10**17):
        with pytest.raises(_Refused):
            finish([0.5, large])
