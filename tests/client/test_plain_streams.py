"""Plain q-coins from a few long digit streams (ldp.client.plain_streams): exact, independent, few bytes.

Statistical tests run on a seeded generator's words (the sampler reads any
source's words alike) at a significance level ALPHA = 1e-6 per test
(Bonferroni over its comparisons). The fast set runs the NumPy backend; the
compiled one is compared with it in the slow set, as its first use compiles it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from test_onehot import Replay, SeededSecure, h

from ldp.client import onehot, plain_streams
from ldp.client.plain_streams import stream_coins
from ldp.errors import ParameterError

ALPHA = 1e-6

#: q: dyadic (every window settles), the benchmark's 3-digit ones, non-dyadic (open windows, exact cuts).
QS = [Fraction(1, 4), Fraction(1, 8), Fraction(5, 8), Fraction(1, 3)]


def assert_exact_coins(bits: np.ndarray, q: Fraction) -> None:
    """Per-bit χ², the pooled count of ones (two-sided binomial) and the 2^4 patterns of four bits of a report
    (two neighbours, one far, the last) against q's product law: α = ALPHA over the three tests."""
    n, width = bits.shape
    pi = float(q)
    ones = bits.sum(axis=0)
    chi2 = ((ones - n * pi) ** 2 / (n * pi * (1 - pi))).sum()
    assert chi2 < stats.chi2.isf(ALPHA / 3, width)
    assert stats.binomtest(int(ones.sum()), n * width, pi).pvalue > ALPHA / 3
    picked = bits[:, [0, 1, width // 2, width - 1]].astype(np.int64)
    patterns = picked @ np.array([8, 4, 2, 1])
    expected = [n * math.prod(pi if (j >> (3 - i)) & 1 else 1 - pi for i in range(4)) for j in range(16)]
    assert stats.chisquare(np.bincount(patterns, minlength=16), expected).pvalue > ALPHA / 3


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("width", [128, 13])
def test_every_coin_has_probability_q_and_they_are_independent(q, width):
    """Width 13: a short last block (its own table) in every report."""
    n = 3000
    out = stream_coins(SeededSecure(11), n, width, q, backend="numpy")
    assert out.shape == (n, -(-width // 8)) and out.dtype == np.uint8
    assert_exact_coins(np.unpackbits(out, axis=1, count=width), q)
    assert not np.any(np.unpackbits(out, axis=1)[:, width:])  # the last byte's spare bits are 0


def test_reports_next_to_each_other_in_a_stream_are_independent():
    """Report r and report r + L (the stream's next report) read consecutive digits: their coins are independent
    (2 × 2 table of their first coins, and of the last coin of one with the first of the next; α = 1e-6)."""
    n, width, q = 6000, 16, Fraction(1, 3)
    bits = np.unpackbits(stream_coins(SeededSecure(4), n, width, q, backend="numpy"), axis=1)
    lanes = plain_streams.STREAMS
    for a, b in ((bits[:-lanes, 0], bits[lanes:, 0]), (bits[:-lanes, width - 1], bits[lanes:, 0])):
        table = np.bincount(2 * a.astype(np.int64) + b, minlength=4).reshape(2, 2)
        assert stats.chi2_contingency(table).pvalue > ALPHA / 2


def test_the_bytes_read_depend_on_n_the_width_and_q_only():
    """Without a refill the words read are the first segments' (public) plus two of padding, whatever the seed:
    at q = 1/4 blocks of 8 read 8.16 digits for 6.49 bits (1.26×), and at n = 2,000 (16 reports a stream) the
    segments' slack adds about 9 digits a report: 1.35× the entropy."""
    n, width, q = 2000, 128, Fraction(1, 4)
    lanes = plain_streams.STREAMS
    reports = (n - np.arange(lanes) + lanes - 1) // lanes
    words = -(-int(plain_streams._segment_digits(q, width, reports).sum()) // 64) + 2
    for seed in (1, 2, 3):
        source = SeededSecure(seed)
        stream_coins(source, n, width, q, backend="numpy")
        assert source.bytes == 8 * words
    entropy = n * width * h(q) / 8
    assert 8 * words < 1.4 * entropy


def test_streams_that_run_past_their_segments_read_on_exactly(monkeypatch):
    """Segments of 4 deviations less than the expected need: nearly every stream stops and reads on from new
    segments (its unread digits, then a fresh word); the coins keep their law."""
    monkeypatch.setattr(plain_streams, "SEGMENT_SIGMAS", -4.0)
    n, width, q = 3000, 64, Fraction(5, 8)
    source = SeededSecure(9)
    out = stream_coins(source, n, width, q, backend="numpy")
    lanes = plain_streams.STREAMS
    reports = (n - np.arange(lanes) + lanes - 1) // lanes
    first = -(-int(plain_streams._segment_digits(q, width, reports).sum()) // 64) + 2
    assert source.bytes > 8 * first  # refills happened
    assert_exact_coins(np.unpackbits(out, axis=1, count=width), q)


def test_fair_coins_are_the_words_bits():
    """q = 1/2: a block's cell is its digits, so the coins are the words' bytes (the spare bits of a short last
    byte cleared), ⌈n·⌈width/8⌉/8⌉ words read."""
    n, width = 37, 13
    words = np.random.default_rng(5).integers(0, 2**64, size=20, dtype=np.uint64)
    out = stream_coins(Replay(words), n, width, Fraction(1, 2), backend="numpy")
    expected = words.view(np.uint8)[: 2 * n].reshape(n, 2).copy()
    expected[:, 1] &= 0xF8
    assert np.array_equal(out, expected)
    source = SeededSecure(1)
    stream_coins(source, n, width, Fraction(1, 2))
    assert source.bytes == 8 * -(-2 * n // 8)


def open_block_streams() -> list[tuple[np.ndarray, int]]:
    """Words whose first 32 digits are those of q = 1/3's first cut (2/3)^8 (not dyadic: they cannot settle the
    block), and the pattern (0: U below the cut, else 1) the next 16 digits decide: the report's segment ends
    48 digits in (n = 1, 8 coins), then the stream reads on from a fresh word (zeros)."""
    cut = Fraction(2, 3) ** 8
    prefix = cut.numerator * 2**32 // cut.denominator
    cases = []
    for tail in (0, 2**32 - 1, 0x5A5A5A5A):
        low = Fraction(prefix, 2**32) + Fraction(tail >> 16, 2**48)
        assert low + Fraction(1, 2**48) <= cut or low >= cut  # the 16 digits decide it
        cases.append((np.array([(prefix << 32) | tail], dtype=np.uint64), 0 if low < cut else 1))
    return cases


def test_a_block_that_32_digits_leave_open_is_settled_by_the_exact_cuts():
    assert plain_streams._segment_digits(Fraction(1, 3), 8, np.array([1]))[0] == 48
    for stream, pattern in open_block_streams():
        out = stream_coins(Replay(stream), 1, 8, Fraction(1, 3), backend="numpy")
        assert out[0, 0] == pattern


def test_bad_arguments_name_what_was_wrong():
    with pytest.raises(ParameterError, match="stream_coins: q"):
        stream_coins(SeededSecure(1), 4, 8, Fraction(3, 2))
    with pytest.raises(ParameterError, match="width"):
        stream_coins(SeededSecure(1), 4, 0, Fraction(1, 3))
    with pytest.raises(ParameterError, match="backend"):
        stream_coins(SeededSecure(1), 4, 8, Fraction(1, 3), backend="gpu")
    assert stream_coins(SeededSecure(1), 0, 8, Fraction(1, 3)).shape == (0, 1)


@pytest.mark.slow
@pytest.mark.parametrize("q", [*QS, Fraction(9, 16), Fraction(1, 2)])
@pytest.mark.parametrize(("n", "width"), [(9000, 128), (5000, 13), (7, 5), (130, 64)])
@pytest.mark.parametrize("sigmas", [plain_streams.SEGMENT_SIGMAS, -3.0])
def test_numba_and_numpy_backends_draw_the_same_coins(monkeypatch, q, n, width, sigmas):
    """From the same words (a seeded generator's, or recorded CSPRNG words), both backends return the same coins
    and read the same words; σ = −3: segments too short, so the refills are compared too."""
    pytest.importorskip("numba")
    monkeypatch.setattr(plain_streams, "SEGMENT_SIGMAS", sigmas)
    numpy_source, numba_source = SeededSecure(3), SeededSecure(3)
    a = stream_coins(numpy_source, n, width, q, backend="numpy")
    b = stream_coins(numba_source, n, width, q, backend="numba")
    assert np.array_equal(a, b)
    assert numpy_source.bytes == numba_source.bytes


@pytest.mark.slow
def test_the_compiled_kernel_settles_an_open_block_by_the_exact_cuts_as_numpy_does():
    """One report (general steps), and four of 128 coins (the lockstep: stream 0's first block is the open one,
    the other streams read on past it)."""
    pytest.importorskip("numba")
    for stream, pattern in open_block_streams():
        assert stream_coins(Replay(stream), 1, 8, Fraction(1, 3), backend="numba")[0, 0] == pattern
        a = stream_coins(Replay(stream), 4, 128, Fraction(1, 3), backend="numpy")
        b = stream_coins(Replay(stream), 4, 128, Fraction(1, 3), backend="numba")
        assert np.array_equal(a, b)
        assert a[0, 0] == pattern  # the cell is the packed byte


@pytest.mark.slow
def test_a_large_batch_has_its_law_on_the_compiled_kernel():
    """200,000 reports of 128 coins (the lockstep's rounds, open blocks at q = 5/8), α = 1e-6."""
    pytest.importorskip("numba")
    for q in (Fraction(1, 4), Fraction(5, 8)):
        out = stream_coins(SeededSecure(17), 200_000, 128, q, backend="numba")
        assert_exact_coins(np.unpackbits(out, axis=1), q)
    assert onehot.BLOCK == 8
