"""The bit-counting kernels equal unpacking and summing, exactly, on every path."""

from __future__ import annotations

import numpy as np
import pytest

import ldp.aggregator.bitcounts as bitcounts
from ldp.aggregator.bitcounts import cohort_bit_counts, column_bit_counts, unpacked_bit_counts


def reference(bits: np.ndarray, num_bits: int) -> np.ndarray:
    return np.unpackbits(bits, axis=1, count=num_bits).sum(axis=0, dtype=np.int64)


def cohort_reference(bits: np.ndarray, cohorts: np.ndarray, num_cohorts: int, num_bits: int) -> np.ndarray:
    out = np.zeros((num_cohorts, num_bits), dtype=np.int64)
    for j in range(num_cohorts):
        out[j] = reference(bits[cohorts == j], num_bits)
    return out


def packed(rng: np.random.Generator, n: int, num_bits: int, density: float | None = None) -> np.ndarray:
    """Random packed rows with zero padding; density None draws one per row (sparse to dense rows)."""
    p = rng.uniform(0, 1, (n, 1)) if density is None else density
    return np.packbits(rng.random((n, num_bits)) < p, axis=1)


@pytest.fixture
def small_kernels(monkeypatch):
    """Make the kernels take their sliced paths, with many tiles and chunks, on small inputs."""
    monkeypatch.setattr(bitcounts, "SMALL_ROWS", 0)
    monkeypatch.setattr(bitcounts, "SMALL_BITS", 0)
    monkeypatch.setattr(bitcounts, "SMALL_COHORT_ROWS", 0)
    monkeypatch.setattr(bitcounts, "TILE_BYTES", 8 * 255 * 2)  # 2-word tiles of 255 rows
    monkeypatch.setattr(bitcounts, "COHORT_CHUNK", 7 * 15)


@pytest.mark.parametrize("num_bits", [1, 7, 8, 9, 63, 64, 65, 127, 200, 1000])
def test_column_counts_equal_unpacking(small_kernels, num_bits):
    """Each row count at this width (one test per width, the rows looped: a test per case cost more in pytest's
    overhead than its check); a failure names its case."""
    for n in (0, 1, 14, 15, 16, 254, 255, 256, 511, 600):
        rng = np.random.default_rng([num_bits, n])
        bits = packed(rng, n, num_bits)
        np.testing.assert_array_equal(
            column_bit_counts(bits, num_bits),
            reference(bits, num_bits),
            err_msg=f"num_bits={num_bits}, n={n}",
        )


@pytest.mark.parametrize("num_bits", [13, 1024, 1001])
def test_column_counts_default_settings(num_bits):
    rng = np.random.default_rng(num_bits)
    small = max(
        bitcounts.SMALL_ROWS, bitcounts.SMALL_BITS // num_bits + 1
    )  # the first batch size counted sliced
    for n in (0, 1, small - 1, small, 3000):
        bits = packed(rng, n, num_bits)
        np.testing.assert_array_equal(column_bit_counts(bits, num_bits), reference(bits, num_bits))


def test_column_counts_all_ones_do_not_overflow_lanes(small_kernels):
    """Every lane at its largest count: 15 ones per 4-bit lane, 255 per 8-bit lane, then beyond."""
    for n in (15, 255, 256, 255 * 3 + 1):
        bits = packed(np.random.default_rng(0), n, 131, density=1.0)
        np.testing.assert_array_equal(column_bit_counts(bits, 131), np.full(131, n))


def test_column_counts_of_views_and_unaligned_rows(small_kernels):
    rng = np.random.default_rng(1)
    wide = packed(rng, 700, 8 * 40)
    view = wide[3::2, 5:30]  # strided rows, an odd width starting mid-word
    np.testing.assert_array_equal(column_bit_counts(view, 8 * 25), reference(view, 8 * 25))
    shifted = np.frombuffer(b"\x00" + wide.tobytes(), dtype=np.uint8)[1:].reshape(wide.shape)  # not 8-aligned
    np.testing.assert_array_equal(column_bit_counts(shifted, 8 * 40), reference(wide, 8 * 40))


def test_unpacked_counts_in_blocks(monkeypatch):
    monkeypatch.setattr(bitcounts, "UNPACK_BYTES", 30)
    bits = packed(np.random.default_rng(2), 50, 21)
    np.testing.assert_array_equal(unpacked_bit_counts(bits, 21), reference(bits, 21))


@pytest.mark.parametrize("num_bits", [1, 8, 13, 64, 65, 128, 200])
def test_cohort_counts_equal_unpacking(small_kernels, num_bits):
    """Each cohort and row count at this width (one test per width, as above); a failure names its case."""
    for num_cohorts in (1, 2, 5, 64):
        for n in (0, 1, 2, 16, 104, 105, 106, 400):
            rng = np.random.default_rng([num_bits, num_cohorts, n])
            bits = packed(rng, n, num_bits)
            cohorts = rng.integers(0, num_cohorts, n)
            expected = cohort_reference(bits, cohorts, num_cohorts, num_bits)
            np.testing.assert_array_equal(
                cohort_bit_counts(bits, cohorts, num_cohorts, num_bits),
                expected,
                err_msg=f"num_bits={num_bits}, num_cohorts={num_cohorts}, n={n}",
            )


def test_cohort_edge_cases(small_kernels):
    rng = np.random.default_rng(3)
    k, m = 70, 9
    bits = packed(rng, 400, k)
    cases = {
        "one cohort": np.zeros(400, dtype=np.int64),
        "last cohort only": np.full(400, m - 1),
        "sorted": np.sort(rng.integers(0, m, 400)),
        "reverse sorted": np.sort(rng.integers(0, m, 400))[::-1],
        "skewed": np.where(rng.random(400) < 0.9, 4, rng.integers(0, m, 400)),
        "uint8 cohorts": rng.integers(0, m, 400).astype(np.uint8),
        "uint64 cohorts": rng.integers(0, m, 400).astype(np.uint64),
        "int32 cohorts": rng.integers(0, m, 400).astype(np.int32),
    }
    for name, cohorts in cases.items():
        expected = cohort_reference(bits, cohorts, m, k)
        np.testing.assert_array_equal(cohort_bit_counts(bits, cohorts, m, k), expected, err_msg=name)


def test_cohort_counts_all_ones_fill_the_16_bit_lanes(monkeypatch):
    """A whole chunk in one cohort with every bit set: the largest 16-bit lane count."""
    monkeypatch.setattr(bitcounts, "SMALL_COHORT_ROWS", 0)
    n = bitcounts.COHORT_CHUNK + 15  # one full chunk plus a second
    assert bitcounts.COHORT_CHUNK < 1 << 16
    bits = np.full((n, 2), 0xFF, dtype=np.uint8)
    counts = cohort_bit_counts(bits, np.zeros(n, dtype=np.int64), 3, 16)
    np.testing.assert_array_equal(counts, [[n] * 16, [0] * 16, [0] * 16])


def test_cohort_counts_keep_every_bit_pattern_of_128_bit_rows(monkeypatch):
    """128-bit rows move as one 16-byte (complex128) item: rows whose words read as NaN, signalling NaN,
    infinity or denormals as floats are counted bit for bit."""
    monkeypatch.setattr(bitcounts, "SMALL_COHORT_ROWS", 0)
    rng = np.random.default_rng(6)
    words = rng.integers(0, 1 << 63, (600, 2), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    words[0::4] = np.uint64(0xFFFF_FFFF_FFFF_FFFF)  # a NaN with every payload bit set
    words[1::4, 0] = np.uint64(0x7FF0_0000_0000_0001)  # a signalling NaN
    words[2::4, 1] = np.uint64(0x7FF0_0000_0000_0000)  # infinity
    words[3::8, 0] = np.uint64(0x0000_0000_0000_0001)  # the smallest denormal
    bits = words.view(np.uint8).reshape(600, 16)
    for m in (5, 300):  # one-byte and two-byte cohort keys (300 < COHORT_CHUNK: the sliced path)
        cohorts = rng.integers(0, m, 600)
        np.testing.assert_array_equal(
            cohort_bit_counts(bits, cohorts, m, 128),
            cohort_reference(bits, cohorts, m, 128),
            err_msg=f"m={m}",
        )


def test_cohort_counts_count_the_rows_of_each_cohort_on_every_path(monkeypatch):
    rng = np.random.default_rng(7)
    monkeypatch.setattr(bitcounts, "COHORT_CHUNK", 7 * 15)
    for n, m in (
        (10, 5),
        (2000, 5),
        (2000, 300),
    ):  # unpacked; sliced in chunks; more cohorts than a chunk holds
        bits = packed(rng, n, 24)
        cohorts = rng.integers(0, m, n)
        rows = np.full(m, 3, dtype=np.int64)  # added to, not overwritten
        cohort_bit_counts(bits, cohorts, m, 24, rows_out=rows)
        np.testing.assert_array_equal(rows, np.bincount(cohorts, minlength=m) + 3, err_msg=f"n={n}, m={m}")


def test_cohort_counts_leave_nothing_behind_in_their_work_space(monkeypatch):
    """The work space is kept from call to call: slots no row fills must count as zero, whatever filled them
    before (a batch of all ones, then batches whose cohorts leave slots of a unit empty)."""
    monkeypatch.setattr(bitcounts, "SMALL_COHORT_ROWS", 0)
    rng = np.random.default_rng(8)
    for width in (2, 16, 24):  # a row of one word, two words (complex items), three (void items)
        full = np.full((3000, width), 0xFF, dtype=np.uint8)
        cohort_bit_counts(full, rng.integers(0, 4, 3000), 4, 8 * width)
        for n in (1, 14, 16, 29, 500):
            bits = packed(rng, n, 8 * width, density=0.1)
            cohorts = rng.integers(0, 7, n)
            np.testing.assert_array_equal(
                cohort_bit_counts(bits, cohorts, 7, 8 * width),
                cohort_reference(bits, cohorts, 7, 8 * width),
                err_msg=f"width={width}, n={n}",
            )


def test_cohort_counts_default_settings_and_many_cohorts():
    rng = np.random.default_rng(4)
    for m, n in ((64, bitcounts.SMALL_COHORT_ROWS - 1), (64, bitcounts.SMALL_COHORT_ROWS), (300, 5000)):
        bits = packed(rng, n, 128)
        cohorts = rng.integers(0, m, n)
        expected = cohort_reference(bits, cohorts, m, 128)
        np.testing.assert_array_equal(cohort_bit_counts(bits, cohorts, m, 128), expected)
    many = bitcounts.COHORT_CHUNK + 1  # more cohorts than a chunk holds reports: the unpacking path
    bits = packed(rng, 3000, 10)
    cohorts = rng.integers(0, many, 3000)
    expected = np.zeros((many, 10), dtype=np.int64)
    for j in np.unique(cohorts):
        expected[j] = reference(bits[cohorts == j], 10)
    np.testing.assert_array_equal(cohort_bit_counts(bits, cohorts, many, 10), expected)


def test_cohort_counts_of_views(small_kernels):
    """Strided rows, a width that is not whole words, reversed rows (the kernel copies them to a buffer)."""
    rng = np.random.default_rng(5)
    wide = packed(rng, 500, 8 * 24)
    for view, num_bits in ((wide[1::3, 2:18], 128), (wide[:, 3:9], 45), (wide[::-1], 8 * 24)):
        cohorts = rng.integers(0, 6, view.shape[0])
        expected = cohort_reference(view, cohorts, 6, num_bits)
        np.testing.assert_array_equal(cohort_bit_counts(view, cohorts, 6, num_bits), expected)
