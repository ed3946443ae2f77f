"""The bulk (Arrow) paths of the CSV and JSON Lines readers decide exactly like the line-by-line paths.

A block of lines is parsed by Arrow at once when it can be; a block holding
a line Arrow would read otherwise (blank, a lone CR, a NUL, not UTF-8, the
wrong number of fields, another JSON type) goes line by line. Either way every
line is counted once: accepted, or rejected with its own line number.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldp
import ldp.aggregator.readers.csv as read_csv
import ldp.aggregator.readers.jsonl as read_jsonl
from ldp.aggregator.io import read_reports
from ldp.aggregator.readers.common import _has_blank_line

RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=8, f="1/2", p="1/4", q="3/4")
FP = RAPPOR.fingerprint


def _good_csv(i: int) -> bytes:
    bits = base64.b64encode(bytes([i % 256, 0])).decode()
    return f"1,{FP},{i % 8},{bits}".encode()


def _good_json(i: int) -> bytes:
    bits = base64.b64encode(bytes([i % 256, 0])).decode()
    return f'{{"v":1,"spec":"{FP}","cohort":{i % 8},"bits":"{bits}"}}'.encode()


#: (bad line, is it a report that is rejected (True) or a blank line that is skipped (False))
CSV_BAD = {
    "blank": (b"", False),
    "spaces": (b"  \t ", False),
    "too few fields": (b"1,abc", True),
    "too many fields": (_good_csv(1) + b",x", True),
    "not utf-8": (b"1," + FP.encode() + b",1,\xff\xfe", True),
    "lone CR": (b"1,x\rx," + FP.encode() + b",1,AAA=", True),
    "NUL": (b"1,\x00," + FP.encode() + b",1,AAA=", True),
    "leading space": (b" 1," + FP.encode() + b",1,AAA=", True),
    "cohort out of range": (b"1," + FP.encode() + b",9,AAA=", True),
    "cohort as float": (b"1," + FP.encode() + b",1.0,AAA=", True),
    "cohort in hex": (b"1," + FP.encode() + b",0x5,AAA=", True),  # Arrow's cast alone reads it as 5
    "cohort with a space": (b"1," + FP.encode() + b", 5,AAA=", True),
}

JSON_BAD = {
    "blank": (b"", False),
    "spaces": (b" \t", False),
    "v float": (_good_json(2).replace(b'"v":1', b'"v":1.0'), True),
    "v string": (_good_json(2).replace(b'"v":1', b'"v":"1"'), True),
    "cohort string": (_good_json(2).replace(b'"cohort":2', b'"cohort":"2"'), True),
    "not json": (b"{nope", True),
    "not utf-8": (_good_json(2).replace(b"bits", b"b\xffits"), True),
    "unknown field": (_good_json(2)[:-1] + b',"extra":1}', True),
}


def _read(path, chunk_size):
    chunks = list(read_reports([path], RAPPOR, chunk_size=chunk_size))
    valid = sum(len(c.batch) for c in chunks)
    rejects = [(r.line, r.reason, r.detail, r.raw) for c in chunks for r in c.rejects]
    bits = np.concatenate([c.batch.bits for c in chunks if len(c.batch)])
    return valid, rejects, bits.tobytes()


def _lines(good, bad: bytes, n: int, at: int, crlf: bool) -> bytes:
    end = b"\r\n" if crlf else b"\n"
    lines = [good(i) for i in range(n)]
    lines[at] = bad
    return end.join(lines) + end


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("case", sorted(CSV_BAD))
def test_csv_bad_line_in_a_bulk_block(tmp_path, monkeypatch, case, crlf):
    bad, is_report = CSV_BAD[case]
    n, at = 300, 150
    path = tmp_path / "r.csv"
    path.write_bytes(b"v,spec,cohort,bits\n" + _lines(_good_csv, bad, n, at, crlf))
    fast = _read(path, 100)
    monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    slow = _read(path, 100)
    assert fast == slow
    valid, rejects, _ = fast
    assert valid == n - 1
    assert [line for line, *_ in rejects] == ([at + 2] if is_report else [])


@pytest.mark.parametrize("case", sorted(JSON_BAD))
def test_jsonl_bad_line_in_a_bulk_block(tmp_path, case):
    bad, is_report = JSON_BAD[case]
    n, at = 300, 150
    path = tmp_path / "r.jsonl"
    path.write_bytes(_lines(_good_json, bad, n, at, False))
    valid, rejects, _ = _read(path, 100)
    assert valid == n - 1
    assert [line for line, *_ in rejects] == ([at + 1] if is_report else [])


def test_csv_bulk_and_line_by_line_read_the_same_good_file(tmp_path, monkeypatch):
    path = tmp_path / "r.csv"
    path.write_bytes(b"\xef\xbb\xbfv,spec,cohort,bits\n" + b"\n".join(_good_csv(i) for i in range(1000)))
    bulk = []
    arrow_block = read_csv._arrow_block

    def spy(*args):
        result = arrow_block(*args)
        bulk.append(result is not None)
        return result

    monkeypatch.setattr(read_csv, "_arrow_block", spy)
    fast = _read(path, 128)
    assert bulk and all(bulk)  # every block, the header's too, went through Arrow
    monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    assert fast == _read(path, 128)
    assert fast[0] == 1000 and fast[1] == []


@pytest.mark.parametrize("text", ["ascii", "utf-8", "not utf-8"])
def test_csv_piece_of_ascii_or_other_text_reads_as_line_by_line(tmp_path, monkeypatch, text):
    """A piece of ASCII lines is parsed as bytes (no UTF-8 check needed) and viewed as text; a piece with other
    UTF-8 text is parsed as text, and one that is not UTF-8 is read otherwise: each gives the reports and
    rejects (line, reason, detail, raw) of the line-by-line path."""
    lines = [_good_csv(i) for i in range(400)]
    odd = {
        "ascii": b"1," + FP.encode() + b",1,A!A=",
        "utf-8": "1,é,1,AAA=".encode(),
        "not utf-8": b"1,\xe9,1,AAA=",
    }
    lines[5] = lines[300] = odd[text]
    path = tmp_path / "r.csv"
    path.write_bytes(b"v,spec,cohort,bits\n" + b"\n".join(lines) + b"\n")
    pieces: list[bool] = []
    arrow_piece = read_csv._arrow_piece
    monkeypatch.setattr(
        read_csv, "_arrow_piece", lambda *args: pieces.append(bool(r := arrow_piece(*args))) or r
    )
    bulk = _read(path, 150)
    assert pieces == [text != "not utf-8"]
    monkeypatch.setattr(read_csv, "_arrow_piece", lambda *args: None)
    monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    assert bulk == _read(path, 150)
    assert bulk[0] == 398 and [line for line, *_ in bulk[1]] == [7, 302]


def test_jsonl_schema_types_only_strict_fields():
    import pyarrow as pa

    schema = read_jsonl._json_schema(RAPPOR)
    types = dict(zip(schema.names, schema.types))
    assert types == {"v": pa.int64(), "spec": pa.string(), "cohort": pa.int64(), "bits": pa.string()}
    olh = read_jsonl._json_schema(ldp.OLH(domain=tuple(range(50)), epsilon=2.0))
    assert "seed" not in olh.names  # uint64 seeds are inferred, not forced into int64


@pytest.mark.parametrize(
    ("data", "blank"),
    [
        (b"a\nb\n", False),
        (b"a\n\nb\n", True),
        (b"a\n \t\r\nb\n", True),
        (b" a\n b", False),
        (b"a\n   ", True),
        (b"\n", True),
        (b"\x0ba\n", False),
    ],
)
def test_has_blank_line(data, blank):
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
    if not ends.size or ends[-1] != len(data):
        ends = np.append(ends, len(data))
    assert _has_blank_line(data, ends) is blank


def test_strict_base64_is_binascii_strict_mode_with_or_without_the_simd_decoder(monkeypatch):
    """strict_base64 (pybase64 when installed) accepts exactly what binascii's strict mode accepts, with the same
    bytes, on valid texts and on texts with stray characters, padding anywhere, or a length not a multiple of 4."""
    import binascii
    import random

    import ldp.report_arrow as report_arrow

    def strict(text: bytes) -> bytes | None:
        try:
            return binascii.a2b_base64(text, strict_mode=True)
        except binascii.Error:
            return None

    def ours(text: bytes) -> bytes | None:
        try:
            return report_arrow.strict_base64(text)
        except binascii.Error:
            return None

    rng = random.Random(5)
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    texts = [
        b"",
        b"QUJD",
        b"QUJD=",
        b"QUI=",
        b"QQ==",
        b"QUJDQQ==",
        b"QQ==QUJD",
        b"QUJ",
        b"QUJDQ",
        b"Q===",
        b"=QUJ",
    ]
    for _ in range(3000):
        text = bytearray(rng.choice(alphabet) for _ in range(rng.choice([4, 8, 20, 24, 3, 5, 7])))
        for _ in range(rng.choice([0, 0, 1, 2, 3])):  # stray characters and padding anywhere
            text[rng.randrange(len(text))] = rng.choice(b"==\n \r-_.\x00\xffA")
        texts.append(bytes(text))
    assert sum(strict(t) is not None for t in texts) > 500  # many accepted, many refused
    with_simd = [ours(t) for t in texts]
    monkeypatch.setattr(report_arrow, "_simd_b64decode", None)
    assert with_simd == [ours(t) for t in texts] == [strict(t) for t in texts]


@pytest.mark.parametrize("num_bytes", [1, 2, 3, 4, 5, 16, 17, 32])
def test_pairwise_base64_decode_agrees_with_the_per_character_tables(num_bytes):
    """The pair-table decoder accepts exactly the rows the one-character tables accept, with the same bytes."""
    from ldp.report_arrow import _decode_base64, _decode_base64_rows

    rng = np.random.default_rng(num_bytes)
    width = 4 * -(-num_bytes // 3)
    raw = rng.integers(0, 256, (600, num_bytes), dtype=np.uint8)
    text = np.frombuffer(b"".join(base64.b64encode(row.tobytes()) for row in raw), dtype=np.uint8)
    text = text.reshape(600, width).copy()
    good = np.ones(600, dtype=bool)
    bad_bytes = np.frombuffer(b"=A\n !/+-_\xff\r", dtype=np.uint8)
    for row in range(0, 600, 3):  # a third of the rows get one or two stray characters
        for _ in range(int(rng.integers(1, 3))):
            text[row, int(rng.integers(0, width))] = rng.choice(bad_bytes)
        good[row] = False
    text[1::7] = rng.integers(0, 256, (len(range(1, 600, 7)), width), dtype=np.uint8)  # some noise rows
    good[1::7] = False
    got, ok = _decode_base64(text, num_bytes)
    want, want_ok = _decode_base64_rows(text, num_bytes)
    assert np.array_equal(ok, want_ok)
    assert np.array_equal(got[ok], want[ok])
    assert ok[good].all() and np.array_equal(got[good], raw[good])  # untouched rows decode to their bytes


@pytest.mark.parametrize(
    ("num_bytes", "stray"),
    [
        (num_bytes, stray)
        for num_bytes in (1, 2, 3, 16, 17, 32)
        for stray in (None, "head", "tail")  # head: the unpadded groups; tail: the padded one
        if stray is None or (stray == "head" and num_bytes >= 3) or (stray == "tail" and num_bytes % 3)
    ],
)
def test_a_chunk_of_valid_groups_decodes_at_once_and_one_stray_character_is_found(num_bytes, stray):
    """All rows valid: the whole chunk's groups decode in one call, to the rows' bytes. A stray character
    (outside the alphabet, or padding) in a row's groups or in its padded group: only that row fails."""
    from ldp.report_arrow import _decode_base64, _decode_base64_rows

    rng = np.random.default_rng(100 + num_bytes)
    width = 4 * -(-num_bytes // 3)
    raw = rng.integers(0, 256, (300, num_bytes), dtype=np.uint8)
    text = np.frombuffer(b"".join(base64.b64encode(row.tobytes()) for row in raw), dtype=np.uint8)
    text = text.reshape(300, width).copy()
    good = np.ones(300, dtype=bool)
    at = {None: None, "head": 0, "tail": 4 * (num_bytes // 3)}[stray]
    if at is not None:  # four strays: a decoder that skipped them would still see whole groups
        for row, char in ((17, b"="), (50, b" "), (120, b"!"), (200, b"-")):
            text[row, at + 1] = char[0]
            good[row] = False
    got, ok = _decode_base64(text, num_bytes)
    want, want_ok = _decode_base64_rows(text, num_bytes)
    assert np.array_equal(ok, good) and np.array_equal(want_ok, good)
    assert np.array_equal(got[good], raw[good]) and np.array_equal(want[good], raw[good])


@pytest.mark.parametrize(
    ("rows", "num_bytes", "padding"), [(1, 4, b"=="), (2, 4, b"=="), (3, 6, b"="), (300, 17, b"==")]
)
def test_padding_that_ends_the_last_rows_groups_fails_that_row_only(rows, num_bytes, padding):
    """The chunk's groups, joined, stay valid base64 when padding ends the last row's unpadded groups ("QQ=="):
    they decode to fewer bytes. That row fails (as one character at a time), the others keep their bytes."""
    from ldp.report_arrow import _decode_base64, _decode_base64_rows

    rng = np.random.default_rng(rows)
    width = 4 * -(-num_bytes // 3)
    raw = rng.integers(0, 256, (rows, num_bytes), dtype=np.uint8)
    text = np.frombuffer(b"".join(base64.b64encode(row.tobytes()) for row in raw), dtype=np.uint8)
    text = text.reshape(rows, width).copy()
    end = 4 * (num_bytes // 3)  # the last row's unpadded groups end here
    text[-1, end - len(padding) : end] = np.frombuffer(padding, dtype=np.uint8)
    good = np.arange(rows) < rows - 1
    got, ok = _decode_base64(text, num_bytes)
    want, want_ok = _decode_base64_rows(text, num_bytes)
    assert np.array_equal(ok, good) and np.array_equal(want_ok, good)
    assert np.array_equal(got[good], raw[good]) and np.array_equal(want[good], raw[good])


@pytest.mark.parametrize("num_bytes", [1, 2, 3, 16, 17])
def test_base64_rows_decode_the_same_from_strided_and_unaligned_views(num_bytes):
    """_decode_base64 reads the rows' leading groups and padded last group through views of the rows: rows
    inside a wider array, at an odd address, or not C-contiguous decode as their contiguous copy does."""
    from ldp.report_arrow import _decode_base64

    rng = np.random.default_rng(200 + num_bytes)
    width = 4 * -(-num_bytes // 3)
    raw = rng.integers(0, 256, (50, num_bytes), dtype=np.uint8)
    text = np.frombuffer(b"".join(base64.b64encode(row.tobytes()) for row in raw), dtype=np.uint8)
    text = text.reshape(50, width).copy()
    text[7, width - 1] = ord("A")  # a bad padded group, when there is one
    text[9, 0] = ord("!")
    want, want_ok = _decode_base64(text, num_bytes)
    untouched = np.ones(50, dtype=bool)
    untouched[[7, 9]] = False
    assert want_ok[untouched].all() and not want_ok[9] and np.array_equal(want[untouched], raw[untouched])
    odd = np.zeros(50 * width + 1, dtype=np.uint8)[1:].reshape(50, width)  # an odd address
    odd[...] = text
    wide = np.zeros((50, width + 3), dtype=np.uint8)
    wide[:, 1 : width + 1] = text
    fortran = np.asfortranarray(text)
    for view in (odd, wide[:, 1 : width + 1], fortran, text[::-1][::-1]):
        got, ok = _decode_base64(view, num_bytes)
        assert np.array_equal(ok, want_ok) and np.array_equal(got[ok], want[ok])


def test_csv_integer_cells_are_plain_decimal_only():
    """As BoundedInt.csv_cell reads one cell: [+-]?digits within int64; anything else is null (re-checked)."""
    from ldp.report_arrow import csv_int_column

    cells = ["0x5", "+5", "05", " 5", "-0", None, "9223372036854775808", "\u0661", "12", "1e3"]
    assert csv_int_column(cells).to_pylist() == [None, 5, 5, None, 0, None, None, None, 12, None]
    # digits only go to Arrow's cast at once; a signed cell is left null, so its row is re-checked alone
    assert csv_int_column(["0x5", "0X5", "+5", "12", "0" * 41 + "1"]).to_pylist() == [
        None,
        None,
        None,
        12,
        None,
    ]


def test_one_byte_csv_integer_cells_convert_as_one_by_one():
    """A column of one-byte cells (a version column) takes a shortcut with the same result as every cell alone."""
    import pyarrow as pa

    from ldp.report_arrow import INT_TEXT, csv_int_array

    cells = ["1", "2", None, "x", "0", "9", "/", ":", " ", "+", "-", "1"]
    strings = pa.array(cells, pa.string())
    for start in range(3):  # sliced arrays too (a buffer offset)
        part = strings.slice(start)
        want = [int(c) if c is not None and INT_TEXT.fullmatch(c) else None for c in cells[start:]]
        assert csv_int_array(part).to_pylist() == want
        assert csv_int_array(part.cast(pa.large_string())).to_pylist() == want
    assert csv_int_array(pa.array(["1", "12", None])).to_pylist() == [1, 12, None]  # not all one byte


#: Cells around the integer grammar: signs, spaces, leading zeros, hexadecimal, int64's bounds, Unicode digits.
_INT_EDGE_CELLS = [
    "0", "5", "05", "+5", "-5", "-0", " 5", "5 ", "0x5", "0X5", "1e3", "5.0", '"5"', "", "\u0661", "\uff15",
    str(2**63 - 1), str(2**63), "-" + str(2**63), "0" * 40, "0" * 41, "1" * 19, "1" * 20,
]  # fmt: skip


def _int_cells_one_by_one(cells: list[str | None]) -> list[int | None]:
    """What :data:`ldp.report_arrow.INT_TEXT` and the int64 range make of each cell alone ("" as empty: None)."""
    from ldp.report_arrow import INT_TEXT

    out: list[int | None] = []
    for cell in cells:
        value = int(cell) if cell and INT_TEXT.fullmatch(cell) else None
        out.append(value if value is not None and -(2**63) <= value < 2**63 else None)
    return out


def test_csv_integer_columns_convert_as_one_by_one():
    """csv_int_array of columns of digits only (cast at once) and of any other cells (filtered first) gives,
    for a cell of ASCII digits, the integer the one-cell rule gives (null beyond int64), and for any other
    cell that integer or null (its row is then re-checked alone, by that rule). Seeded (1) random columns
    over the edge cells, with nulls and slices."""
    import pyarrow as pa

    from ldp.report_arrow import _ascii_digit_cells, csv_int_array

    rng = np.random.default_rng(1)
    digits = [cell for cell in _INT_EDGE_CELLS if cell.isascii() and cell.isdigit()]
    plain_seen = 0
    for trial in range(300):
        pool = digits if trial % 2 else _INT_EDGE_CELLS  # half the columns: digits only
        cells: list[str | None] = [str(c) for c in rng.choice(pool, int(rng.integers(1, 12)))]
        for i in np.flatnonzero(rng.random(len(cells)) < 0.2):
            cells[i] = None
        cells = [None if cell == "" else cell for cell in cells]  # empty: null, as the readers give it
        strings = pa.array(cells, pa.string())
        start = int(rng.integers(0, len(cells)))
        for part, want in ((strings, cells), (strings.slice(start), cells[start:])):
            plain_seen += _ascii_digit_cells(part, 40) is not None
            got, alone = csv_int_array(part).to_pylist(), _int_cells_one_by_one(want)
            for cell, value, expected in zip(want, got, alone):
                plain = cell is not None and cell.isascii() and cell.isdigit()
                assert value == expected or (value is None and not plain), (cell, want)
    assert plain_seen > 100  # the shortcut was taken, and not only by one-byte columns


@pytest.mark.parametrize("odd", [False, True])
def test_csv_cohort_cells_read_in_bulk_as_line_by_line(tmp_path, monkeypatch, odd):
    """A RAPPOR CSV file of cohorts of one and two digits (read at once by NumPy in bulk), with or without
    the edge cells among them, gives the same reports and rejects (line, reason, detail) read in bulk as
    read line by line."""
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=100, f="1/2", p="1/4", q="3/4")
    fp, bits = spec.fingerprint, base64.b64encode(b"\x01\x00").decode()
    cells = [str(i % 100) for i in range(400)]
    if odd:
        cells[3 : 3 + 5 * len(_INT_EDGE_CELLS) : 5] = _INT_EDGE_CELLS
    path = tmp_path / "r.csv"
    path.write_text(
        "v,spec,cohort,bits\n" + "".join(f"1,{fp},{cell},{bits}\n" for cell in cells), encoding="utf-8"
    )

    def read():
        chunks = list(read_reports([path], spec, chunk_size=150))
        cohorts = np.concatenate([c.batch.cohorts for c in chunks if len(c.batch)])
        return cohorts.tolist(), [(r.line, r.reason, r.detail) for c in chunks for r in c.rejects]

    import ldp.report_arrow as report_arrow

    short = report_arrow._short_decimals
    taken: list[bool] = []
    monkeypatch.setattr(
        report_arrow,
        "_short_decimals",
        lambda strings, cells=None: taken.append((r := short(strings, cells)) is not None) or r,
    )
    bulk = read()
    # the chunks of cohorts of digits only (3 of 150 rows, or the last 2) were read by NumPy at once; the one
    # with the edge cells did not get there (a cell not of ASCII digits)
    assert all(taken) and len(taken) == 3 - odd
    monkeypatch.setattr(read_csv, "_arrow_piece", lambda *args: None)
    monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    assert bulk == read()
    cohorts, rejects = bulk
    assert len(cohorts) + len(rejects) == 400 and bool(rejects) == odd
    if odd:  # the cells the one-cell rule reads as cohorts in range are accepted, signs and zeros too
        assert {"+5", "05", "-0"} <= {cells[line - 2] for line in range(2, 402)} - {
            cells[r[0] - 2] for r in rejects
        }


def test_short_decimal_cells_read_as_int_reads_them():
    """Columns of 1 to 8 ASCII digits (leading zeros too), with nulls, sliced, read by NumPy as int() reads each
    cell; a column with a longer, empty or other cell is left to the other paths. Seeded (3)."""
    import pyarrow as pa

    from ldp.report_arrow import _short_decimals

    rng = np.random.default_rng(3)
    for _ in range(200):
        size = int(rng.integers(1, 30))
        lengths = rng.integers(1, int(rng.integers(1, 9)) + 1, size)
        cells: list[str | None] = ["".join(map(str, rng.integers(0, 10, k))) for k in lengths]
        for i in np.flatnonzero(rng.random(size) < 0.2):
            cells[i] = None
        strings = pa.array(cells, pa.string())
        start = int(rng.integers(0, size))
        for part, want in ((strings, cells), (strings.slice(start), cells[start:])):
            got = _short_decimals(part)
            if all(cell is None for cell in want):
                assert got is None
            else:
                assert got is not None and got.to_pylist() == [None if c is None else int(c) for c in want]
    for cells in (
        ["12", "123456789"],
        ["12", "+5"],
        ["1", " 5"],
        ["1", "0x5"],
        ["\u0661"],
        ["1", ""],
        ["1", "1.0"],
    ):
        assert _short_decimals(pa.array(cells, pa.string())) is None, cells
    assert _short_decimals(pa.array(["12"], pa.large_string())) is None


def test_plain_digit_columns_are_only_ascii_digits_of_1_to_40_bytes():
    import pyarrow as pa

    from ldp.report_arrow import _ascii_digit_cells

    def _plain_digits(strings: pa.Array) -> bool:
        return _ascii_digit_cells(strings, 40) is not None

    assert _plain_digits(pa.array(["12", None, "0" * 40, "7"]))
    assert _plain_digits(pa.array(["x12", "12"]).slice(1))  # the bytes of the slice alone
    for cells in (
        ["12", "+5"],
        ["12", " 5"],
        ["12", "0x5"],
        ["\u0661"],
        ["12", "0" * 41],
        ["12", ""],
        [None],
    ):
        assert not _plain_digits(pa.array(cells, pa.string())), cells
    assert not _plain_digits(pa.array(["12"], pa.large_string()))  # the filter decides


def _quotes_close_reference(data: bytes, skip: int) -> bool:
    """:func:`read_csv._quotes_close_on_their_line`, field by field in Python: each quote opens a field and closes it."""
    for line in data[skip:].splitlines(keepends=True) if b"\r" not in data else _lf_lines(data[skip:]):
        i, at_field_start = 0, True
        while i < len(line):
            if line[i : i + 1] == b'"':
                close = line.find(b'"', i + 1)
                if (
                    not at_field_start
                    or close < 0
                    or line[close + 1 : close + 2] not in (b"", b",", b"\r", b"\n")
                ):
                    return False
                i, at_field_start = close + 1, False
                continue
            at_field_start = line[i : i + 1] == b","
            i += 1
    return True


def _lf_lines(data: bytes) -> list[bytes]:
    """Lines ending at LF only (a CR is a byte like any other here), each with its LF."""
    lines = data.split(b"\n")
    return [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from([b"a", b",", b'"', b"\n", b"\r\n", b"\r", b'""', b',"', b'",']), max_size=24),
    st.booleans(),
)
def test_quotes_close_on_their_line_is_the_field_by_field_rule(pieces, bom):
    """The vectorized check of a block's quotes (which CSV blocks Arrow reads in bulk) is the rule it states."""
    from ldp.aggregator.readers.common import _line_blocks

    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(pieces)
    for number, (block, ends) in enumerate(_line_blocks(io.BytesIO(data), 1 << 20)):
        skip = 3 if bom and number == 0 else 0
        assert read_csv._quotes_close_on_their_line(block, ends, skip) == _quotes_close_reference(block, skip)


@pytest.mark.parametrize("bulk", [True, False])
def test_csv_cell_of_a_field_the_spec_does_not_carry_rejects_its_row(tmp_path, monkeypatch, bulk):
    """RAPPOR reports carry no seed: a seed cell rejects its row whatever it holds (0x5 and abc too)."""
    if not bulk:
        monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    seeds = ["", "abc", "0x5", "+5", "7"] * 10
    rows = [_good_csv(i) + b"," + seed.encode() for i, seed in enumerate(seeds)]
    path = tmp_path / "r.csv"
    path.write_bytes(b"v,spec,cohort,bits,seed\n" + b"\n".join(rows) + b"\n")
    valid, rejects, _ = _read(path, 100)
    assert valid == seeds.count("")
    assert [line for line, *_ in rejects] == [i + 2 for i, seed in enumerate(seeds) if seed]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_wide_bit_vectors_are_read_in_chunks_bounded_by_bytes(tmp_path, monkeypatch, suffix):
    """Chunks of wide unary reports hold at most CHUNK_BYTES of bits (at least 1,024 rows), whatever chunk_size asks."""
    import ldp.aggregator.readers.common as read_common
    from ldp.aggregator.writers import write_reports
    from ldp.client import encode_batch

    spec = ldp.OUE(domain=tuple(range(64)), epsilon=1.0)  # 8 bytes of bits per report
    monkeypatch.setattr(read_common, "CHUNK_BYTES", 8 * 2048)
    path = tmp_path / f"reports{suffix}"
    values = list(range(64)) * 80  # 5,120 reports
    write_reports([encode_batch(spec, values, np.random.default_rng(3))], path, spec)
    sizes = [len(chunk.batch) for chunk in read_reports([path], spec, chunk_size=100_000)]
    assert sum(sizes) == len(values) and max(sizes) <= 2048


def _dialects(table) -> dict[str, bytes]:
    """The same reports as the CSV dialects standard tools write."""
    import csv
    import io

    import pyarrow.csv as pa_csv

    out = io.BytesIO()
    pa_csv.write_csv(table, out)  # strings quoted, the header too
    rows = [table.column_names, *zip(*(table.column(name).to_pylist() for name in table.column_names))]

    def python_csv(**options) -> bytes:
        text = io.StringIO()
        csv.writer(text, **options).writerows(rows)
        return text.getvalue().encode()

    r_style = python_csv(quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")  # R's write.csv, row.names=FALSE
    return {
        "pyarrow": out.getvalue(),
        "unquoted": python_csv(lineterminator="\n"),
        "unquoted CRLF": python_csv(),  # the csv module's default line end
        "quoted CRLF": python_csv(quoting=csv.QUOTE_ALL),
        "R": r_style,
        "R with BOM": b"\xef\xbb\xbf" + r_style,
        "quoted CRLF with BOM": b"\xef\xbb\xbf" + python_csv(quoting=csv.QUOTE_ALL),
        "pandas": table.to_pandas().to_csv(index=False).encode(),
    }


@pytest.mark.parametrize(
    "dialect",
    [
        "pyarrow",
        "unquoted",
        "unquoted CRLF",
        "quoted CRLF",
        "R",
        "R with BOM",
        "quoted CRLF with BOM",
        "pandas",
    ],
)
def test_csv_dialects_of_standard_tools_take_the_bulk_path(tmp_path, monkeypatch, dialect):
    """Every block of a file as pyarrow, R, pandas or the csv module write it goes through Arrow, never the csv module."""
    import pyarrow as pa

    n = 1000
    table = pa.table(
        {
            "v": pa.array([1] * n),
            "spec": pa.array([FP] * n),
            "cohort": pa.array([i % 8 for i in range(n)]),
            "bits": pa.array([base64.b64encode(bytes([i % 256, 0])).decode() for i in range(n)]),
        }
    )
    path = tmp_path / "r.csv"
    path.write_bytes(_dialects(table)[dialect])
    bulk, line_by_line = [], []
    arrow_block = read_csv._arrow_block

    def spy(*args):
        result = arrow_block(*args)
        bulk.append(result is not None)
        return result

    take_lines = read_csv._CsvRows.take_lines

    def csv_module(self, lines):
        line_by_line.append(True)
        return take_lines(self, lines)

    monkeypatch.setattr(read_csv, "_arrow_block", spy)
    monkeypatch.setattr(read_csv._CsvRows, "take_lines", csv_module)
    fast = _read(path, 128)
    assert bulk and all(bulk) and not line_by_line
    assert fast[0] == n and fast[1] == []
    monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    assert _read(path, 128) == fast


@pytest.mark.parametrize("mechanism", ["laplace", "duchi"])
def test_csv_number_cells_convert_in_bulk_as_one_by_one(tmp_path, monkeypatch, mechanism):
    """A numeric report's ``value`` cells are converted by Arrow at once, exactly as the line-by-line path does.

    Odd cells (hex, NaN, ±inf, signed, out of range, past the float range,
    not a number at all) reject their rows alike on both paths.
    """
    from ldp.aggregator.writers import write_reports
    from ldp.client import encode_batch

    spec = ldp.Laplace(epsilon=1.0, low=0, high=10) if mechanism == "laplace" else ldp.Duchi(epsilon=1.0)
    path = tmp_path / "r.csv"
    write_reports([encode_batch(spec, np.linspace(0, 1, 300), np.random.default_rng(2))], path, spec)
    lines = path.read_bytes().splitlines()
    odd = ["0x1", "nan", "inf", "-inf", "+0.5", "1e99999", "5.", ".5", "1e", " 1", "\u0661", "1_0", "-0"]
    for k, cell in enumerate(odd):
        head = lines[1 + 7 * k].rsplit(b",", 1)[0]
        lines[1 + 7 * k] = head + b"," + cell.encode()
    path.write_bytes(b"\n".join(lines) + b"\n")

    def read():
        chunks = list(
            read_reports([path], spec, chunk_size=1000)
        )  # one block: no short one goes line by line
        values = np.concatenate([c.batch.values for c in chunks if len(c.batch)])
        return values.tolist(), [(r.line, r.reason, r.detail) for c in chunks for r in c.rejects]

    import ldp.report_arrow as report_arrow

    def row_by_row(cells):
        raise AssertionError("converted one cell at a time")

    monkeypatch.setattr(report_arrow, "csv_float_column", row_by_row)
    fast = read()
    monkeypatch.undo()
    monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    assert fast == read()
    assert len(fast[0]) + len(fast[1]) == 300


def test_csv_float_array_reads_cells_as_float_does():
    """Every cell :data:`FLOAT_TEXT` accepts is cast to the float Python reads; others are null."""
    import pyarrow as pa

    from ldp.report_arrow import csv_float_array, csv_float_column

    rng = np.random.default_rng(7)
    floats = np.concatenate(
        [rng.standard_normal(2000) * 10.0 ** rng.integers(-320, 308, 2000), [5e-324, 1e308]]
    )
    cells = (
        [repr(float(x)) for x in floats]
        + [f"{x:.30e}" for x in floats[:200]]
        + [f"{x:.17f}" for x in floats[:200]]
    )
    cells += [
        "1",
        "+1.5",
        "-0",
        ".5",
        "5.",
        "1E-5",
        "1e99999",
        "-1e99999",
        "1e-99999",
        "0x1",
        " 1",
        "nan",
        "inf",
    ]
    cells += ["1_0", "\u0661", None, "1.2.3", "1e", "00012.50", "9" * 400, "1" * 401, "0." + "3" * 400]
    got = csv_float_array(pa.array(cells, type=pa.string())).to_pylist()
    assert got == csv_float_column(cells).to_pylist()


@pytest.mark.parametrize("large", [False, True])
def test_string_equal_compares_bytes_as_python_compares_text(large):
    """The fingerprint check on a text column (bytes of the target's width, compared as words when the
    width is a multiple of 8) accepts exactly the cells equal to the text; nulls and other widths never."""
    import pyarrow as pa

    from ldp.arrow_numpy import string_array
    from ldp.report_arrow import string_equal

    for target in (FP, "ab", "é" * 4, "0123456789abcdef"):
        cells = [target, None, target[:-1], target + "x", target.upper(), "", target, "x" * len(target)]
        column = string_array(cells)
        if large:
            column = column.cast(pa.large_string())
        for part in (column, column.slice(1)):
            expected = [cell == target for cell in part.to_pylist()]
            assert string_equal(part, target, len(part)).tolist() == expected, (target, large)


@pytest.mark.parametrize("domain", [["a", "bb", "", "1", "A"], [3, 10, 11]])
def test_quoted_compared_cells_are_looked_up_without_unquoting(tmp_path, monkeypatch, domain):
    """A quoted fingerprint or domain cell is looked up among the keys in quotes (never unquoted), and every
    row is accepted or rejected, with the same reason, as when the csv module reads the file line by line."""
    import csv

    spec = ldp.GRR(domain=domain, epsilon=1.0)
    texts = [str(v) for v in domain]
    odd = ["", "zz", texts[0].upper() + "x", texts[-1] + " ", "0" + texts[1], " " + texts[0]]
    rows = []
    for i in range(600):
        value = texts[i % len(texts)] if i % 7 else odd[i % len(odd)]
        fingerprint = spec.fingerprint if i % 11 else ["", "0" * 16, spec.fingerprint.upper()][i % 3]
        rows.append(["1", fingerprint, value])
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["v", "spec", "value"])
    writer.writerows(rows)
    path = tmp_path / "quoted.csv"
    path.write_text(out.getvalue(), encoding="utf-8")

    def read():
        chunks = list(read_reports([path], spec, chunk_size=128))
        values = np.concatenate([c.batch.values for c in chunks if len(c.batch)])
        rejects = [(r.line, r.reason, r.detail, r.raw) for c in chunks for r in c.rejects]
        return values.tolist(), rejects

    looked_up = []
    lookup = read_csv._quoted_lookup
    monkeypatch.setattr(read_csv, "_quoted_lookup", lambda *a: looked_up.append(lookup(*a)) or looked_up[-1])
    fast = read()
    assert looked_up and all(column is not None for column in looked_up)
    assert fast[1] and len(fast[0]) + len(fast[1]) == len(rows)
    monkeypatch.setattr(read_csv, "_arrow_piece", lambda *args: None)
    monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    assert read() == fast


def test_every_cell_is_compares_whole_cells():
    """The fingerprint column's all-alike check: every width of cell, a differing byte anywhere, a tail."""
    from ldp.arrow_numpy import string_array

    for width in (1, 3, 8, 16, 18, 19):
        cell = "".join(chr(97 + i % 26) for i in range(width))
        for n in (1, 2, 7, 8, 9, 33):
            column = string_array([cell] * n)
            offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[: n + 1]
            body = np.frombuffer(column.buffers()[2], dtype=np.uint8)[: n * width]
            assert read_csv._every_cell_is(body, offsets, cell.encode())
            for row in {0, n // 2, n - 1}:
                for at in {0, width - 1}:
                    other = [cell] * n
                    other[row] = cell[:at] + "#" + cell[at + 1 :]
                    changed = string_array(other)
                    offsets = np.frombuffer(changed.buffers()[1], dtype=np.int32)[: n + 1]
                    body = np.frombuffer(changed.buffers()[2], dtype=np.uint8)[: n * width]
                    assert not read_csv._every_cell_is(body, offsets, cell.encode()), (width, n, row, at)
            longer = string_array([cell] * (n - 1) + [cell + "x"])
            offsets = np.frombuffer(longer.buffers()[1], dtype=np.int32)[: n + 1]
            body = np.frombuffer(longer.buffers()[2], dtype=np.uint8)[: int(offsets[-1])]
            assert not read_csv._every_cell_is(body, offsets, cell.encode())


def test_quoted_lookup_reads_otherwise_a_column_whose_quotes_add_up_but_sit_inside_cells(
    tmp_path, monkeypatch
):
    """Two quotes a cell on average is not enough: a cell ``"a`` and a cell ``"b"c"`` hold four between them;
    such a piece is read as the csv module reads it, and gives what the line-by-line path gives."""
    spec = ldp.GRR(domain=["a", "b", "c"], epsilon=1.0)
    fp = spec.fingerprint
    lines = [f'1,"{fp}","{"abc"[i % 3]}"' for i in range(200)]
    lines[50] = f'1,"{fp}","a'
    lines[120] = f'1,"{fp}","b"c"'
    path = tmp_path / "quoted.csv"
    path.write_text('"v","spec","value"\n' + "\n".join(lines) + "\n", encoding="utf-8")

    def read():
        chunks = list(read_reports([path], spec, chunk_size=64))
        values = np.concatenate([c.batch.values for c in chunks if len(c.batch)])
        return values.tolist(), [(r.line, r.reason, r.detail, r.raw) for c in chunks for r in c.rejects]

    looked_up = []
    lookup = read_csv._quoted_lookup
    monkeypatch.setattr(read_csv, "_quoted_lookup", lambda *a: looked_up.append(lookup(*a)) or looked_up[-1])
    fast = read()
    assert None in looked_up  # the value column was not taken as quoted cells
    assert [line for line, *_ in fast[1]] == [52, 122]
    monkeypatch.setattr(read_csv, "_arrow_piece", lambda *args: None)
    monkeypatch.setattr(read_csv, "_arrow_block", lambda *args: None)
    assert read() == fast
