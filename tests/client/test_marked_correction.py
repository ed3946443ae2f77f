"""RAPPOR's coins as q-coins with the marked bits corrected (ldp.client.marked_correction): exact, few bytes.

Statistical tests run on a seeded generator's words (the sampler reads any
source's words alike) at a significance level ALPHA = 1e-6 per test
(Bonferroni over its comparisons). The fast set runs the NumPy backend; the
compiled one is compared with it in the slow set, as its first use compiles it.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from test_onehot import Recording, Replay, SeededSecure, h

from ldp.client import GeneratorSource, marked_correction, onehot
from ldp.client.marked_correction import corrected_coins, correction
from ldp.client.onehot import marked_coins
from ldp.client.plain_streams import stream_coins
from ldp.errors import ParameterError

ALPHA = 1e-6

#: (p, q, how the marked bits are corrected): OR with a further coin (11/16, 9/16: w = 2/7, the benchmark's
#: p = 1/2), flipped (5/8, 3/8: no further coin), flipped then OR (7/8, 5/8: w = 4/5), AND (1/5, 1/2: w = 2/5),
#: sparse q-coins by blocks (7/16, 1/16: f = 1/4, p = 0, q = 1/2) and by runs (1/3, 1/40).
PAIRS = [
    (Fraction(11, 16), Fraction(9, 16), (False, True, Fraction(2, 7))),
    (Fraction(5, 8), Fraction(3, 8), (True, True, Fraction(0))),
    (Fraction(7, 8), Fraction(5, 8), (True, True, Fraction(4, 5))),
    (Fraction(1, 5), Fraction(1, 2), (False, False, Fraction(2, 5))),
    (Fraction(7, 16), Fraction(1, 16), (False, True, Fraction(2, 5))),
    (Fraction(1, 3), Fraction(1, 40), (False, True, Fraction(37, 117))),
]


def test_plain_coins_take_blocks_unless_they_read_past_the_entropy_bound():
    """The one rule (onehot.draws_runs): blocks at q = 1/16 and 3/32 (1.48× and 1.47× h(q), a third of the runs'
    CPU), runs at q = 1/40 (blocks: over 1.75× h(q))."""
    assert not onehot.draws_runs(Fraction(1, 16))
    assert not onehot.draws_runs(Fraction(3, 32))
    assert onehot.draws_runs(Fraction(1, 40))


def test_each_correction_gives_the_marked_bits_exactly_p():
    """For every (p, q) on a grid: a + (1 − a) w = p (OR) or a w = p (AND), a = q or 1 − q, w in [0, 1]."""
    grid = [Fraction(i, 24) for i in range(1, 24)] + [Fraction(1, 3), Fraction(7, 10), Fraction(1, 1000)]
    for p in grid:
        for q in grid:
            fix = correction(p, q)
            a = 1 - q if fix.flip else q
            assert 0 <= fix.coin <= 1
            assert (a + (1 - a) * fix.coin if fix.keep_ones else a * fix.coin) == p
            if p == 1 - q:
                assert not fix.needs_coins  # the flipped q-coin is already a p-coin
            other = (1 - q) if not fix.flip else q  # the other choice of a needs at least as much entropy
            w = (p - other) / (1 - other) if p >= other else p / other
            assert h_or_zero(fix.coin) <= h_or_zero(w) + 1e-12


def h_or_zero(w: Fraction) -> float:
    return 0.0 if w in (0, 1) else h(w)


@pytest.mark.parametrize(("p", "q", "expected"), PAIRS)
def test_the_correction_of_each_pair(p, q, expected):
    fix = correction(p, q)
    assert (fix.flip, fix.keep_ones, fix.coin) == expected


@pytest.mark.parametrize(("p", "q", "expected"), PAIRS)
@pytest.mark.parametrize("width", [64, 13])
def test_marked_and_unmarked_bits_have_their_probabilities_and_are_independent(p, q, expected, width):
    """Per-bit χ² of marked and of unmarked bits, their pooled counts of ones (two-sided binomial: a small bias
    common to all bits), then the 2^4 patterns of two marked and two unmarked bits of a report against the
    product of their probabilities (α = 1e-6 over the five tests).

    Width 13: rows of two bytes, so the batch's last bytes are not a whole word (the kernel's tail loop).
    """
    n = 6000
    rng = np.random.default_rng(8)
    marked = rng.random((n, width)) < 0.2
    marked[:, :2], marked[:, 2:4] = True, False  # the pattern test's four bits
    out = corrected_coins(SeededSecure(21), np.packbits(marked, axis=1), width, p, q, backend="numpy")
    bits = np.unpackbits(out, axis=1, count=width).astype(bool)
    for marks, probability in ((marked, p), (~marked, q)):
        trials, ones = marks.sum(axis=0), (bits & marks).sum(axis=0)
        used = trials > 0
        pi = float(probability)
        chi2 = ((ones[used] - trials[used] * pi) ** 2 / (trials[used] * pi * (1 - pi))).sum()
        assert chi2 < stats.chi2.isf(ALPHA / 5, int(used.sum()))
        assert stats.binomtest(int(ones.sum()), int(trials.sum()), pi).pvalue > ALPHA / 5
    patterns = bits[:, 0] * 8 + bits[:, 1] * 4 + bits[:, 2] * 2 + bits[:, 3]
    probabilities = [p, p, q, q]
    expected_counts = [
        n * np.prod([float(t if (j >> (3 - i)) & 1 else 1 - t) for i, t in enumerate(probabilities)])
        for j in range(16)
    ]
    assert stats.chisquare(np.bincount(patterns, minlength=16), expected_counts).pvalue > ALPHA / 5


def test_the_bits_read_depend_on_the_batch_size_and_its_count_of_marks_only():
    """Words read: the plain coins' (by n and the width), then ⌈marks / ROW⌉ rows of further coins, wherever the
    marks are: two batches with the same count of marks in other places read the same words from the same seed."""
    n, width, p, q = 500, 128, Fraction(11, 16), Fraction(9, 16)
    rng = np.random.default_rng(3)
    spread = rng.random((n, width)) < 0.02
    total = int(spread.sum())
    packed = np.zeros((n, width), dtype=bool)
    packed.reshape(-1)[:total] = True  # the same count, all in the first reports
    reads = []
    for marks in (spread, packed):
        source = SeededSecure(5)
        corrected_coins(source, np.packbits(marks, axis=1), width, p, q, backend="numpy")
        reads.append(source.bytes)
    assert reads[0] == reads[1]
    plain, further = SeededSecure(5), SeededSecure(5)
    stream_coins(plain, n, width, q, backend="numpy")
    stream_coins(further, n, width, q, backend="numpy")
    further.bytes = 0
    rows = -(-total // marked_correction.ROW)
    stream_coins(further, rows, marked_correction.ROW, correction(p, q).coin, backend="numpy")
    assert reads[0] == plain.bytes + further.bytes
    entropy = (total * h(p) + (n * width - total) * h(q)) / 8
    assert reads[0] <= 1.5 * entropy  # about 1.3× (the lanes: 4 digits a coin, 4.05×)


def test_without_marks_or_further_coins_only_the_plain_coins_are_read():
    n, width = 300, 40
    none = np.zeros((n, 5), dtype=np.uint8)
    for p, q, marks in (
        (Fraction(11, 16), Fraction(9, 16), none),  # no marks: no further coins
        (Fraction(5, 8), Fraction(3, 8), np.full((n, 5), 0x81, np.uint8)),  # flipped: none needed
    ):
        a, b = SeededSecure(2), SeededSecure(2)
        out = corrected_coins(a, marks, width, p, q, backend="numpy")
        plain = stream_coins(b, n, width, q, backend="numpy")
        assert a.bytes == b.bytes
        assert np.array_equal(out, plain ^ marks)


@pytest.mark.parametrize("sampler", [corrected_coins, marked_coins], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"p": Fraction(1)}, "p must be in"),
        ({"q": "nonsense"}, "q must be a probability"),
        ({"width": 0}, "a report holds at least one coin"),
        ({"marks": np.zeros((2, 3), np.uint8)}, "shape"),
        ({"marks": np.zeros((2, 2), np.int64)}, "uint8"),
        ({"marks": np.full((2, 2), 0xFF, np.uint8)}, "past the report's 13 bits"),
        ({"backend": "fortran"}, "backend"),
    ],
)
def test_bad_arguments_are_one_line_parameter_errors_naming_the_sampler(sampler, kwargs, message):
    args = {
        "marks": np.zeros((2, 2), np.uint8),
        "width": 13,
        "p": Fraction(3, 4),
        "q": Fraction(1, 3),
    } | kwargs
    with pytest.raises(ParameterError, match=message) as error:
        sampler(SeededSecure(1), args.pop("marks"), args.pop("width"), args.pop("p"), args.pop("q"), **args)
    assert "\n" not in str(error.value) and str(error.value).startswith(f"{sampler.__name__}: ")


@pytest.mark.slow
@pytest.mark.parametrize(("p", "q", "expected"), PAIRS)
@pytest.mark.parametrize(("width", "density"), [(128, 0.016), (100, 0.25), (13, 0.5)])
def test_numba_and_numpy_backends_make_the_same_corrected_reports(p, q, expected, width, density):
    """From the same words (a seeded generator's, and recorded CSPRNG words), both backends return the same reports."""
    pytest.importorskip("numba")
    n = 9001  # an odd count of 13-bit rows: the batch's last byte is not a whole word
    marks = np.packbits(np.random.default_rng(6).random((n, width)) < density, axis=1)
    a = corrected_coins(GeneratorSource(np.random.default_rng(2)), marks, width, p, q, backend="numba")
    b = corrected_coins(GeneratorSource(np.random.default_rng(2)), marks, width, p, q, backend="numpy")
    assert np.array_equal(a, b)
    recording = Recording()
    c = corrected_coins(recording, marks, width, p, q, backend="numba")
    replayed = corrected_coins(Replay(np.concatenate(recording.kept)), marks, width, p, q, backend="numpy")
    assert np.array_equal(c, replayed)
