"""The bit-level samplers (ldp.client.bits): every bit used once, exact distributions, and the bytes drawn.

Distribution tests draw from a seeded NumPy generator behind the bit source
(reproducible) and are chi-square tests against the exact probabilities, each
at significance level ALPHA = 1e-6 (categories expected fewer than 5 times
pooled). The Knuth–Yao trees are checked exactly: the probability of every
outcome, summed over every path of the walk, is the exact product of the
coins' probabilities. The byte counts come from a counting CSPRNG source.
"""

from __future__ import annotations

import math
import os
import threading
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import ldp
from ldp.client import CountingSource, GeneratorSource, SystemRandomSource, secure_encode_batch
from ldp.client.bits import (
    ECONOMY_MIN_DRAWS,
    STEP_BITS,
    TAIL_STEP_BITS,
    BitSource,
    agreeing_coins,
    bernoulli_bits,
    bit_source,
    block_table,
    coins,
    dyadic_coins,
    ky_sample,
    rejection_width,
    sampler_for,
    step_table,
    threshold_coins_bits,
    uniform_below_bits,
    uniforms,
)
from ldp.client.randomness import as_source
from ldp.hashing import LH_SEED_SPACE
from ldp.specs.dbitflip import DBitFlip
from ldp.specs.key_value import PCKVGRR, PrivKVM
from ldp.specs.ranges import RangeHaar

ALPHA = 1e-6
DRAWS = 200_000


def seeded_bits(seed: int) -> BitSource:
    return BitSource(GeneratorSource(np.random.default_rng(seed)))  # insecure-ok: a test's replayable source


def chi_square_pvalue(counts: np.ndarray, probabilities: np.ndarray) -> float:
    """Chi-square goodness of fit; categories expected fewer than 5 times are pooled into one."""
    expected = np.asarray(probabilities, dtype=float) * counts.sum()
    small = expected < 5
    if small.any():
        counts = np.append(counts[~small], counts[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    return float(stats.chisquare(counts, expected).pvalue)


class ListedWords:
    """A source handing out given words, then zeros (thread-safe; not secure: tests only)."""

    secure = False

    def __init__(self, words: np.ndarray):
        self._words = np.asarray(words, dtype=np.uint64)
        self._lock = threading.Lock()
        self.drawn = 0

    def words(self, n: int) -> np.ndarray:
        with self._lock:
            head, self._words = self._words[:n], self._words[n:]
            self.drawn += n
        return np.concatenate([head, np.zeros(n - head.size, dtype=np.uint64)])

    def integers(self, bound: int, n: int) -> np.ndarray:
        raise AssertionError("the bit samplers read words only")


# -- the bit source ---------------------------------------------------------------


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 16, 22, 32, 62, 64])
def test_fields_are_uniform_and_independent(width):
    bits = seeded_bits(width)
    bits.fields(3, 1)  # start with bits kept from an earlier draw
    values = bits.fields(width, DRAWS).astype(np.uint64)
    assert int(values.max()) < 1 << width
    top = min(width, 6)
    counts = np.bincount((values >> np.uint64(width - top)).astype(np.int64), minlength=1 << top)
    assert chi_square_pvalue(counts, np.full(1 << top, 2.0**-top)) > ALPHA
    pairs = (values[0::2] >> np.uint64(width - 1)) * 2 + (values[1::2] >> np.uint64(width - 1))  # top bits
    counts = np.bincount(pairs.astype(np.int64), minlength=4)
    assert chi_square_pvalue(counts, np.full(4, 0.25)) > ALPHA


DRAW_SEQUENCE = [
    (10, 7),
    (10, 5),
    (3, 2),
    (1, 11),
    (64, 1),
    (4, 9),
    (62, 2),
    (13, 3),
    (8, 5),
    (16, 3),
    (5, 20),
]


def test_every_bit_of_every_word_is_handed_out_at_most_once():
    """One set bit in the words in turn: the draws' fields hold it at most once, whatever their widths."""
    words_needed = 12
    for position in range(64 * words_needed):
        words = np.zeros(words_needed, dtype=np.uint64)
        words[position // 64] = np.uint64(1) << np.uint64(position % 64)
        bits = BitSource(ListedWords(words))
        seen = sum(int(np.bitwise_count(bits.fields(w, n).astype(np.uint64)).sum()) for w, n in DRAW_SEQUENCE)
        assert seen <= 1, f"bit {position} handed out {seen} times"


def test_kept_bits_serve_the_next_draws_first():
    source = ListedWords(np.arange(1, 100, dtype=np.uint64))
    bits = BitSource(source)
    bits.fields(10, 1)  # one word: six 10-bit fields, five kept
    assert source.drawn == 1
    bits.fields(10, 5)  # the kept fields: no new word
    assert source.drawn == 1
    bits.fields(1, 4)  # the word's 4 spare bits
    assert source.drawn == 1
    bits.fields(1, 1)
    assert source.drawn == 2


def test_threads_sharing_a_bit_source_never_share_a_field():
    values = np.arange(1 << 16, dtype=np.uint16)  # every 16-bit value once
    bits = BitSource(ListedWords(values.view(np.uint64)))
    drawn: list[np.ndarray] = []

    def draw() -> None:
        for _ in range(40):
            drawn.append(bits.fields(16, 97).copy())

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = np.concatenate(drawn)
    assert everything.size == 4 * 40 * 97
    assert np.unique(everything).size == everything.size


def test_a_forked_child_does_not_reuse_its_parents_kept_bits():
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    bits = BitSource(SystemRandomSource())
    bits.fields(4, 1)  # 60 bits kept
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next fields, then leave at once
        os.write(write, bits.fields(4, 15).astype(np.uint8).tobytes())
        os._exit(0)
    os.waitpid(pid, 0)
    child = np.frombuffer(os.read(read, 15), dtype=np.uint8)
    os.close(read)
    os.close(write)
    assert not np.array_equal(child, bits.fields(4, 15).astype(np.uint8))  # equal w.p. 2^-60 if independent


def test_each_random_source_has_one_bit_source():
    source = SystemRandomSource()
    assert bit_source(source) is bit_source(source)
    assert bit_source(bit_source(source)) is bit_source(source)
    with pytest.raises(ldp.ParameterError, match="random source"):
        bit_source(None)  # type: ignore[arg-type]


# -- uniform integers --------------------------------------------------------------


@pytest.mark.parametrize(
    "bound", [2, 3, 5, 7, 100, 513, 1000, 1023, 1024, 40_000, (1 << 20) + 1, LH_SEED_SPACE]
)
def test_uniform_integers_are_uniform(bound):
    draws = uniform_below_bits(seeded_bits(bound % 997), bound, DRAWS)
    assert draws.dtype == np.int64
    assert int(draws.min()) >= 0 and int(draws.max()) < bound
    bins = min(bound, 64)
    edges = [math.ceil(k * bound / bins) for k in range(bins + 1)]  # bin k holds [edges[k], edges[k+1])
    index = np.searchsorted(np.array(edges[1:-1], dtype=np.int64), draws, side="right")
    counts = np.bincount(index, minlength=bins)
    sizes = np.diff(np.array(edges, dtype=float))
    assert chi_square_pvalue(counts, sizes / sizes.sum()) > ALPHA


@pytest.mark.parametrize(("bound", "width"), [(3, 2), (1023, 10), (513, 12), (1000, 10), (LH_SEED_SPACE, 62)])
def test_rejection_width_reads_the_fewest_bits(bound, width):
    assert rejection_width(bound) == width


def test_uniform_integers_refuse_a_bound_out_of_range():
    with pytest.raises(ldp.ParameterError, match="bound"):
        uniform_below_bits(seeded_bits(0), 0, 3)


# -- coins ------------------------------------------------------------------------------

PROBABILITIES = [
    Fraction(1, 2),
    Fraction(5, 8),
    Fraction(3, 16),
    Fraction(13, 32),
    Fraction(1, 1024),
    Fraction(1023, 1024),
]


def _exact_outcomes(p: Fraction, later_step: int) -> dict[int, Fraction]:
    """The probability of each outcome of ``block_table(p)``, summed over every path of the walk.

    A node reached after ``depth`` bits carries mass n / 2^depth: the walk keeps the integer n (a step of
    ``step`` bits hands each of the 2^step next codes the same n, over 2^(depth + step)), so only the
    outcomes' sums at the end are Fractions.
    """
    table = block_table(p)
    ended: dict[int, dict[int, int]] = {}  # depth → outcome → numerator over 2^depth
    nodes, depth, step = {0: 1}, 0, table.first_step
    while nodes:
        codes = step_table(table, depth, step).tolist()
        reached: dict[int, int] = {}
        here = ended.setdefault(depth + step, {})
        for node, mass in nodes.items():
            for code in codes[node << step : (node + 1) << step]:
                if code < 0:
                    here[~code] = here.get(~code, 0) + mass
                else:
                    reached[code] = reached.get(code, 0) + mass
        nodes, depth, step = reached, depth + step, later_step
    outcomes: dict[int, Fraction] = {}
    for bits, masses in ended.items():
        for outcome, mass in masses.items():
            outcomes[outcome] = outcomes.get(outcome, Fraction(0)) + Fraction(mass, 1 << bits)
    return outcomes


@pytest.mark.parametrize("later_step", [STEP_BITS, TAIL_STEP_BITS])
@pytest.mark.parametrize("p", PROBABILITIES, ids=str)
def test_knuth_yao_tree_gives_each_block_its_exact_probability(p, later_step):
    outcomes = _exact_outcomes(p, later_step)
    for pattern in range(256):
        ones = bin(pattern).count("1")
        assert outcomes.get(pattern, 0) == p**ones * (1 - p) ** (8 - ones), pattern


SPEC_PROBABILITIES = {
    "grr": ldp.GRR(domain=tuple(range(1024)), epsilon=1.0).p,
    "binary-rr": ldp.BinaryRR(domain=(0, 1), epsilon=1.0).p,
    "olh": ldp.OLH(domain=tuple(range(1024)), epsilon=1.0).p,
    "5/8": Fraction(5, 8),
    "1/3 (not dyadic)": Fraction(1, 3),
    "2^-40": Fraction(1, 1 << 40),
}


@pytest.mark.parametrize("name", SPEC_PROBABILITIES)
def test_coins_have_their_probability_and_blocks_theirs(name):
    p = SPEC_PROBABILITIES[name]
    flips = bernoulli_bits(seeded_bits(len(name)), p, 8 * 50_000 + 3)
    assert flips.dtype == bool and flips.size == 8 * 50_000 + 3
    se = math.sqrt(float(p * (1 - p)) / flips.size)
    assert abs(flips.mean() - float(p)) < stats.norm.isf(ALPHA / 4) * se + 1e-12
    patterns = np.packbits(flips[: 8 * 50_000].reshape(-1, 8), axis=1, bitorder="little").ravel()
    ones = np.bitwise_count(np.arange(256, dtype=np.uint8)).astype(float)
    probabilities = float(p) ** ones * float(1 - p) ** (8 - ones)
    assert chi_square_pvalue(np.bincount(patterns, minlength=256), probabilities) > ALPHA / 2


def test_ky_sample_reads_about_the_entropy():
    """Binary RR at ε = 1 (0.84 bits a coin): the walks read fewer than 1.68 bits a coin (seeded: exact count)."""
    p = SPEC_PROBABILITIES["binary-rr"]
    source = GeneratorSource(np.random.default_rng(9))  # insecure-ok: a test's replayable source
    drawn = []
    real = source.words
    source.words = lambda n: drawn.append(n) or real(n)  # type: ignore[method-assign]
    ky_sample(BitSource(source), block_table(p), 50_000)
    entropy = -float(p) * math.log2(float(p)) - float(1 - p) * math.log2(float(1 - p))
    assert 64 * sum(drawn) / (8 * 50_000) < 2 * entropy


def test_a_probability_outside_the_unit_interval_is_refused():
    with pytest.raises(ldp.ParameterError, match="probability"):
        bernoulli_bits(seeded_bits(0), Fraction(3, 2), 4)


# -- the samplers' choice and the bytes drawn -----------------------------------------


def test_large_csprng_batches_read_bits_and_the_rest_read_words():
    secure = SystemRandomSource()
    assert isinstance(sampler_for(secure, ECONOMY_MIN_DRAWS), BitSource)
    assert sampler_for(secure, ECONOMY_MIN_DRAWS - 1) is secure
    seeded = np.random.default_rng(0)  # insecure-ok: a seeded generator keeps its word samplers
    assert not isinstance(sampler_for(seeded, 10**6), BitSource)
    words = as_source(np.random.default_rng(1))  # insecure-ok: a test's replayable source
    assert coins(words, Fraction(1, 2), 5).dtype == bool
    assert uniforms(bit_source(words), 1 << 64, 3).dtype == np.uint64  # beyond 2^63: from the words


def _rr_entropy(spec, size: int) -> float:
    p, q = float(spec.p), float(spec.q)
    return -p * math.log2(p) - (size - 1) * q * math.log2(q)


def _entropy_bits(spec) -> float:
    if spec.mechanism in ("olh", "blh"):
        return math.log2(LH_SEED_SPACE) + _rr_entropy(spec, spec.g)
    if spec.mechanism == "hr":
        half, p = spec.block_size // 2, float(spec.p)
        h = -p * math.log2(p) - (1 - p) * math.log2(1 - p)
        return h + p * math.log2(half) + (1 - p) * math.log2(spec.outputs - half)
    if spec.mechanism == "hcms":  # a uniform row and column, then the sign kept with p
        return math.log2(spec.k) + math.log2(spec.m) + _h(spec.p)
    if spec.mechanism == "range-haar":  # a uniform level l, index below 2^l, then the sign kept with p
        return math.log2(spec.levels) + (spec.levels - 1) / 2 + _h(spec.p)
    if spec.mechanism == "dbitflip":  # d uniform buckets of b, then d coins; sent_one = 1 − sent_zero
        return math.log2(math.comb(spec.domain_size, spec.d)) + spec.d * _h(spec.sent_zero)
    if (
        spec.mechanism == "pckv-grr"
    ):  # the perturbation only (a lower bound: the sampled pair and v* left out)
        a = float(spec.a)
        return _h(a) + a * _h(spec.p) + (1 - a) * (math.log2(spec.padded_size - 1) + 1)
    if spec.mechanism == "privkvm":  # a uniform key, the presence and sign coins (v* left out: a lower bound)
        return math.log2(spec.domain_size) + _h(spec.p1) + _h(spec.p2)
    return _rr_entropy(spec, spec.domain_size)


def _h(p) -> float:
    p = float(p)
    return -p * math.log2(p) - (1 - p) * math.log2(1 - p)


@pytest.mark.parametrize(
    "spec",
    [
        ldp.GRR(domain=tuple(range(1024)), epsilon=1.0),
        ldp.BinaryRR(domain=(0, 1), epsilon=1.0),
        ldp.OLH(domain=tuple(range(1024)), epsilon=1.0),
        ldp.BLH(domain=tuple(range(1024)), epsilon=1.0),
        ldp.HR(domain=tuple(range(1024)), epsilon=1.0),
        ldp.HR(domain=tuple(range(100)), epsilon=1.0, blocks=4),
        ldp.HCMS(domain=tuple(range(1024)), epsilon=1.0),
        RangeHaar(domain=tuple(range(1024)), epsilon=1.0),
        DBitFlip(domain=tuple(range(1024)), epsilon=1.0),
        DBitFlip(domain=tuple(range(64)), epsilon=1.0, d=16),
        PCKVGRR(domain=tuple(range(1024)), epsilon=1.0),
        PrivKVM(domain=tuple(range(1024)), epsilon=1.0),
    ],
    ids=lambda s: f"{s.mechanism}-{s.domain_size}",
)
def test_secure_batch_reads_at_most_twice_the_entropy(spec):
    """The bytes ldp.client.secure_encode_batch reads per report, against the report's entropy (issue 28's ≤ 2×)."""
    n = 20_000
    source = CountingSource()
    if hasattr(spec, "example_inputs"):  # key-value: sets of pairs
        secure_encode_batch(spec, spec.example_inputs(n), source=source)
    else:
        secure_encode_batch(spec, np.arange(n) % spec.domain_size, indices=True, source=source)
    assert 8 * source.bytes / n <= 2 * _entropy_bits(spec)


class ReadOnlyWords:
    """A seeded source handing out read-only words, as SystemRandomSource does (np.frombuffer of os.urandom)."""

    secure = False

    def __init__(self, seed: int):
        self._rng = np.random.default_rng(seed)

    def words(self, n: int) -> np.ndarray:
        out = self._rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
        out.setflags(write=False)
        return out

    def integers(self, bound: int, n: int) -> np.ndarray:
        raise AssertionError("the bit samplers read words only")


@pytest.mark.parametrize("bound", [200, 65_000, (1 << 31) + 1])
def test_uniform_integers_from_read_only_words(bound):
    """8-, 16- and 32-bit rejection units are views of the words: the redraw must not write into them."""
    assert rejection_width(bound) in (8, 16, 32)
    draws = uniform_below_bits(BitSource(ReadOnlyWords(bound)), bound, 10_000)
    assert draws.shape == (10_000,) and int(draws.min()) >= 0 and int(draws.max()) < bound


@pytest.mark.parametrize("name", ["l-grr", "grr"])
def test_a_secure_batch_on_the_bit_path_with_eight_bit_units(name):
    """GRR-like batches over 201 values (others below 200: 8-bit units) on the OS CSPRNG's read-only words.

    l-grr's keep probability is not dyadic, so its coins come from the word sampler and leave no kept bits:
    every batch wrote into the CSPRNG's read-only buffer before fields() handed out arrays the caller owns.
    """
    from ldp.registry import declaration

    domain = tuple(range(201))
    spec = declaration(name).load_spec()(domain=domain, epsilon=1.0)
    for _ in range(5):
        batch = secure_encode_batch(spec, np.arange(8192) % 201, indices=True, source=SystemRandomSource())
        assert len(batch) == 8192


def test_a_source_giving_fewer_words_than_asked_is_refused_and_keeps_nothing():
    class Short:
        secure = False

        def words(self, n):
            return np.ones(max(n - 1, 0), dtype=np.uint64)

        def integers(self, bound, n):
            raise AssertionError

    bits = BitSource(Short())
    with pytest.raises(ldp.ParameterError, match="gave 1 words, asked for 2"):
        bits.fields(10, 12)
    assert bits.fields(10, 0).size == 0


def test_bounds_may_be_numpy_integers_and_counts_not_negative():
    bits = BitSource(ReadOnlyWords(1))
    assert uniform_below_bits(bits, np.int64(200), 5).shape == (5,)
    with pytest.raises(ldp.ParameterError, match="negative"):
        bits.fields(8, -1)


# -- coins of per-row dyadic probabilities ------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "threshold", "below"),
    [
        (2**64 - 1, 1 << 63, True),  # every bit read differs at once (L = 0): t's top bit
        (2**64 - 1, (1 << 63) - 1, False),
        (0x5555_5555_5555_5555, 1 << 62, True),  # bits 0 1 0 1 …: one equal bit, then t's second bit
        (0x5555_5555_5555_5555, 1 << 63, False),
        (0, 2**64 - 1, False),  # 0s only: 64 equal bits, U = t, not below (and the draw ends)
    ],
)
def test_threshold_coins_take_the_bit_of_t_after_the_equal_ones(word, threshold, below):
    """Bits of a constant word: a run of 0s (bits of U equal to t's) ended by a 1 (the first that differs)."""
    drawn = threshold_coins_bits(
        BitSource(ListedWords(np.full(8, word, dtype=np.uint64))), np.array([threshold] * 3)
    )
    assert drawn.tolist() == [below] * 3


def test_threshold_coins_have_their_probabilities_and_read_two_bits_each():
    """Per-row probabilities t/2^64 (three kinds of rows mixed): a z-test per kind at α = 1e-6 (Bonferroni),
    and the bits read: 2 a coin on average, within z·SE (each coin's count of bits is geometric, variance 2)."""
    n = DRAWS
    kinds = np.array([1 << 63, 3 << 62, (1 << 64) // 10], dtype=np.uint64)  # 1/2, 3/4, ⌊2^64/10⌋/2^64
    which = np.arange(n) % 3
    words = ListedWords(np.random.default_rng(64).integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True))
    bits = BitSource(words)
    drawn = threshold_coins_bits(bits, kinds[which])
    z = stats.norm.isf(ALPHA / 2 / 4)
    for kind, t in enumerate(kinds.tolist()):
        p, got = t / 2**64, drawn[which == kind]
        assert abs(got.mean() - p) <= z * math.sqrt(p * (1 - p) / got.size)
    read = 64 * words.drawn - bits._kept_bits
    assert abs(read / n - 2) <= z * math.sqrt(2 / n)


@pytest.mark.parametrize("on_bits", [False, True], ids=["words", "bits"])
def test_dyadic_coins_of_probability_zero_and_one_are_certain(on_bits):
    """Numerators 0 and 2^e (a threshold of 2^64 would wrap to 0) and one in between (p = 3/8: z-test, α = 1e-6)."""
    source = GeneratorSource(np.random.default_rng(8))  # insecure-ok: a test's replayable source
    sampler = BitSource(source) if on_bits else source
    n = 30_000
    drawn = dyadic_coins(sampler, np.repeat(np.array([0, 8, 3], dtype=np.uint64), n), 3).reshape(3, n)
    assert not drawn[0].any() and drawn[1].all()
    assert abs(drawn[2].mean() - 3 / 8) <= stats.norm.isf(ALPHA / 2) * math.sqrt(3 / 8 * 5 / 8 / n)


@pytest.mark.parametrize("p", [Fraction(1, 3), Fraction(2, 7), Fraction(1, 1000), Fraction(999, 1000)])
def test_coins_of_any_rational_probability_on_bits(p):
    """A probability that is not dyadic: U < p by p's binary expansion, 2 bits a coin (z-tests at α = 1e-6)."""
    n = DRAWS
    words = ListedWords(np.random.default_rng(13).integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True))
    bits = BitSource(words)
    drawn = bernoulli_bits(bits, p, n)
    z = stats.norm.isf(ALPHA / 4)  # two tests, two-sided
    assert abs(drawn.mean() - float(p)) <= z * math.sqrt(float(p * (1 - p)) / n)
    read = 64 * words.drawn - bits._kept_bits  # geometric counts of mean 2 and variance 2 each
    assert abs(read / n - 2) <= z * math.sqrt(2 / n)


@pytest.mark.parametrize(("p", "coin"), [(Fraction(1, 3), False), (Fraction(2, 3), True)])
def test_a_coin_whose_first_64_digits_equal_p_compares_the_rest(p, coin):
    """64 equal digits (a word of 0s), then fresh bits that differ at once: digit 1 of p's tail 2^64·p mod 1."""
    bits = BitSource(ListedWords(np.array([0, 2**64 - 1], dtype=np.uint64)))
    assert bernoulli_bits(bits, p, 1).tolist() == [coin]


def test_a_source_of_zeros_is_refused_not_looped():
    with pytest.raises(ldp.errors.ParameterError, match="broken"):
        bernoulli_bits(BitSource(ListedWords(np.zeros(0, dtype=np.uint64))), Fraction(1, 3), 4)


@pytest.mark.parametrize("p", [Fraction(3, 4), Fraction(13486113947262437243, 1 << 64), Fraction(5, 16)])
def test_agreeing_coins_are_one_coin_of_the_agreement_probability(p):
    """High w.p. f·p + (1 − f)(1 − p), on bits as on words; f = 0 and 1/2 put q·2^32 on an integer (the exact
    digits), the others on floating-point ones: z-tests at α = 1e-6 (Bonferroni over 4 × 2)."""
    n = 40_000
    numerators = np.array([0, 1 << 52, 123_456_789_012_345, (1 << 53) - 1, 1 << 53], dtype=np.uint64)
    z = stats.norm.isf(ALPHA / 2 / 10)
    for on_bits in (False, True):
        source = GeneratorSource(np.random.default_rng(17))  # insecure-ok: a test's replayable source
        sampler = BitSource(source) if on_bits else source
        drawn = agreeing_coins(sampler, np.repeat(numerators, n), 53, p).reshape(numerators.size, n)
        for t, row in zip(numerators.tolist(), drawn):
            f = Fraction(t, 1 << 53)
            q = float(f * p + (1 - f) * (1 - p))
            assert abs(row.mean() - q) <= z * math.sqrt(q * (1 - q) / n), (on_bits, t)


@pytest.mark.parametrize(
    ("word", "numerator", "high"), [(2**64 - 1, 0, False), (2**64 - 1, 1 << 52, True), (0, 0, False)]
)
def test_agreeing_coins_take_the_digit_after_the_equal_ones(word, numerator, high):
    """p = 3/4, f = 0: q = 1/4 = 0.01…; f = 1/2: q = 1/2 = 0.1…. Bits of 1s: digit 1; bits of 0s: U = q, not below."""
    bits = BitSource(ListedWords(np.full(8, word, dtype=np.uint64)))
    assert agreeing_coins(bits, np.array([numerator], dtype=np.uint64), 53, Fraction(3, 4)).tolist() == [high]
