"""The one-hot coin sampler of the secure batch path (ldp.client.onehot): exact, near the entropy, one answer per backend.

Statistical tests run on a seeded generator's words (the sampler reads any
source's words the same way; a seeded source makes the test reproducible)
at a significance level ALPHA = 1e-6 per test (Bonferroni over its
comparisons). The compiled (numba) backend is compared with the NumPy one
in the slow set: its first use compiles it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ldp.client import CountingSource, GeneratorSource, SystemRandomSource, onehot
from ldp.client.batch import secure_encode_batch
from ldp.client.onehot import PRECISION, WINDOW, one_hot_coins, pattern_table
from ldp.errors import ParameterError
from ldp.registry import declarations

ALPHA = 1e-6
D = 1024


class SeededSecure(CountingSource):
    """A seeded generator's words, counted and flagged secure so the secure batch encoders take their CSPRNG path."""

    def __init__(self, seed: int):
        super().__init__(GeneratorSource(np.random.default_rng(seed)))
        self.secure = True  # tests only: a seeded generator is never a CSPRNG


class Replay:
    """Hands out given words in order (then zeros): the same stream for both backends."""

    secure = True

    def __init__(self, words: np.ndarray):
        self.stream = np.asarray(words, dtype=np.uint64)
        self.at = 0

    def words(self, n: int) -> np.ndarray:
        out = np.zeros(n, dtype=np.uint64)
        part = self.stream[self.at : self.at + n]
        out[: part.size] = part
        self.at += n
        return out


class Recording:
    """The OS CSPRNG, keeping every word it hands out."""

    secure = True

    def __init__(self) -> None:
        self.inner = SystemRandomSource()
        self.kept: list[np.ndarray] = []

    def words(self, n: int) -> np.ndarray:
        words = np.array(self.inner.words(n), dtype=np.uint64)
        self.kept.append(words)
        return words


def h(p: Fraction | float) -> float:
    p = float(p)
    return -p * math.log2(p) - (1 - p) * math.log2(1 - p)


def unary(mechanism: str, d: int = D, epsilon: float = 1.0):
    return next(decl for decl in declarations() if decl.name == mechanism).load_spec()(
        domain=tuple(range(d)), epsilon=epsilon
    )


@pytest.mark.parametrize(("q", "size"), [("oue", 8), ("sue", 8), ("sue", 3), ("oue", 1)])
def test_pattern_table_settles_a_window_only_inside_its_cell(q, size):
    """Every window the table settles lies, exactly, inside the cut interval of its pattern; the bounds bracket the cuts."""
    table = pattern_table(unary(q).q, size)
    one = 1 << PRECISION
    for cut, low, high in zip(table.cuts, table.lower.tolist(), table.upper.tolist()):
        assert low <= cut * one <= high
    cuts = table.cuts
    den = math.lcm(*(c.denominator for c in cuts))
    nums = [c.numerator * (den // c.denominator) for c in cuts]
    entries = table.window.astype(np.int64)
    settled = 0
    for v, entry in enumerate(entries.tolist()):
        digits, cell = entry >> 8, entry & 0xFF
        if digits:
            prefix = v >> (WINDOW - digits)
            # [prefix, prefix + 1) / 2^digits ⊆ [C_cell, C_cell+1)
            assert nums[cell] << digits <= prefix * den
            assert (prefix + 1) * den <= nums[cell + 1] << digits
            settled += 1
    assert settled > 0.99 * entries.size


def block_cells(counts: np.ndarray, q: Fraction, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Observed and expected counts of the 2^size patterns, each below-5-expected pattern merged into its popcount."""
    total = counts.sum()
    masses = np.array(
        [float(q ** j.bit_count() * (1 - q) ** (size - j.bit_count())) for j in range(1 << size)]
    )
    expected = total * masses
    small = expected < 5
    observed = list(counts[~small])
    wanted = list(expected[~small])
    popcount = np.array([j.bit_count() for j in range(1 << size)])
    for c in range(size + 1):
        group = small & (popcount == c)
        if group.any():
            observed.append(counts[group].sum())
            wanted.append(expected[group].sum())
    return np.array(observed), np.array(wanted)


@pytest.mark.parametrize(
    ("mechanism", "d", "epsilon"), [("oue", 64, 1.0), ("sue", 61, 1.0), ("oue", 64, 4.0)]
)
def test_coins_have_the_spec_probabilities(mechanism, d, epsilon):
    """Per-bit frequencies against p and q, and whole 8-coin blocks against q^|j| (1−q)^(8−|j|) (chi-square, α = 1e-6).

    ε = 4 (OUE's q ≈ 0.018) draws runs of coins, the others blocks.
    """
    spec = unary(mechanism, d, epsilon)
    n = 6000
    idx = np.random.default_rng(1).integers(0, d, n)
    bits = np.unpackbits(
        one_hot_coins(SeededSecure(7), idx, d, spec.p, spec.q, backend="numpy"), axis=1, count=d
    ).astype(np.int64)
    assert_one_hot_distribution(bits, idx, spec.p, spec.q, ALPHA)


def assert_one_hot_distribution(
    bits: np.ndarray, idx: np.ndarray, p: Fraction, q: Fraction, alpha: float
) -> None:
    """The true bits against p (z), every other position against q (chi-square over positions), and whole 8-coin
    blocks without a true bit against q^|j| (1−q)^(8−|j|) (chi-square); each at α/3, so α in all."""
    n, d = bits.shape
    rows = np.arange(n)
    alpha = alpha / 3
    # the true bits: one binomial, z-test
    ones = bits[rows, idx].sum()
    z = (ones - n * float(p)) / math.sqrt(n * float(p * (1 - p)))
    assert abs(z) < stats.norm.isf(alpha / 2)
    # every other position: a binomial of the reports whose value is elsewhere
    others = bits.copy()
    others[rows, idx] = 0
    trials = n - np.bincount(idx, minlength=d)
    x = float(q)
    chi2 = (((others.sum(axis=0) - trials * x) ** 2) / (trials * x * (1 - x))).sum()
    assert chi2 < stats.chi2.isf(alpha, d)
    # whole blocks (bytes without the true bit): patterns, jointly
    full = d // 8
    packed = np.packbits(bits[:, : 8 * full], axis=1)
    clean = packed[(idx[:, None] // 8) != np.arange(full)[None, :]]
    observed, expected = block_cells(np.bincount(clean, minlength=256), q, 8)
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert chi2 < stats.chi2.isf(alpha, observed.size - 1)


@pytest.mark.parametrize("q", [Fraction(1, 4), Fraction(1, 64)])
def test_chains_cut_short_and_refilled_keep_the_spec_probabilities(q, monkeypatch):
    """Chains of reports sharing one stream whose first rows fall 40 digits short (so most chains stop and take
    new rows, their carried digits then fresh ones) draw coins of exactly p = 1/2 and q (blocks at q = 1/4, runs
    at 1/64; α = 1e-6, as above): the hand-off to a chain's next report and the refills change no probability.
    Simple fractions: the specs' exact q take 0.1–0.2 s to tabulate."""
    d, n, p = 64, 6000, Fraction(1, 2)
    refills, lengths = [], []
    real_refill, real_length = onehot._refill, onehot._chain_length
    monkeypatch.setattr(onehot, "ROW_SLACK", -40)
    monkeypatch.setattr(
        onehot,
        "_refill",
        lambda pool, stalled, *rest: refills.append(stalled.size) or real_refill(pool, stalled, *rest),
    )
    monkeypatch.setattr(
        onehot, "_chain_length", lambda need: lengths.append(real_length(need)) or lengths[-1]
    )
    idx = np.random.default_rng(2).integers(0, d, n)
    bits = np.unpackbits(
        one_hot_coins(SeededSecure(8), idx, d, p, q, backend="numpy"), axis=1, count=d
    ).astype(np.int64)
    chains = -(-n // lengths[0])
    assert (
        lengths[0] > 1 and len(refills) >= 2 and refills[0] >= chains // 2
    )  # most chains stopped, some twice
    assert_one_hot_distribution(bits, idx, p, q, ALPHA)


def test_the_digits_drawn_and_the_q_coins_do_not_depend_on_the_values():
    """From the same words, reports of other values read the same words and draw the same coins but at the true
    positions (the true coin comes first in every report's stream, a q-coin is drawn at every position). Simple
    fractions: the specs' exact q take 0.1–0.2 s to tabulate."""
    a, b = np.random.default_rng(3).integers(0, 64, (2, 2000))
    p, q = Fraction(1, 4), Fraction(1, 128)  # (as the longitudinal OUE's at ε = 4: runs)
    source_a, source_b = SeededSecure(9), SeededSecure(9)
    coins_a = np.unpackbits(one_hot_coins(source_a, a, 64, p, q, backend="numpy"), axis=1, count=64)
    coins_b = np.unpackbits(one_hot_coins(source_b, b, 64, p, q, backend="numpy"), axis=1, count=64)
    assert source_a.bytes == source_b.bytes
    rows = np.arange(a.size)
    assert np.array_equal(coins_a[rows, a], coins_b[rows, b])  # the true coins: each report's first step
    coins_a[rows, a] = coins_a[rows, b] = coins_b[rows, a] = coins_b[rows, b] = 0
    assert np.array_equal(coins_a, coins_b)


def test_report_widths_leave_the_later_bits_zero_and_draw_nothing_for_them():
    spec = unary("oue", 64)
    widths = np.array([4, 16, 64, 5] * 50)
    idx = widths - 1
    bits = np.unpackbits(
        one_hot_coins(SeededSecure(3), idx, 64, spec.p, spec.q, widths=widths, backend="numpy"), axis=1
    )
    assert not (bits * (np.arange(64)[None, :] >= widths[:, None])).any()
    narrow, wide = SeededSecure(3), SeededSecure(3)
    one_hot_coins(
        narrow, np.zeros(200, np.int64), 64, spec.p, spec.q, widths=np.full(200, 4), backend="numpy"
    )
    one_hot_coins(wide, np.zeros(200, np.int64), 64, spec.p, spec.q, backend="numpy")
    assert narrow.bytes < wide.bytes / 2  # one word each at least (rows are whole words)


def entropy_bytes(spec) -> float:
    """The report's entropy given the input (bytes), for the mechanisms of the sampler."""
    if spec.mechanism == "cms":
        bits = math.log2(spec.k) + h(spec.p) + (spec.m - 1) * h(spec.q)
    elif hasattr(spec, "support"):
        a, b = spec.support
        bits = h(a) + (spec.domain_size - 1) * h(b)
    else:
        bits = h(spec.p) + (spec.domain_size - 1) * h(spec.q)
    return bits / 8


ENTROPY_MECHANISMS = ("oue", "sue", "cms", "l-oue", "l-sue", "l-osue")
ENTROPY_EPSILONS = (0.5, 1.0, 2.0, 4.0)


def _entropy_cases() -> list:
    """Every (mechanism, ε) pair; the fast set keeps each mechanism once, with the ε cycling over all four."""
    return [
        pytest.param(
            mechanism,
            epsilon,
            marks=() if ENTROPY_EPSILONS.index(epsilon) == i % len(ENTROPY_EPSILONS) else pytest.mark.slow,
        )
        for epsilon in ENTROPY_EPSILONS
        for i, mechanism in enumerate(ENTROPY_MECHANISMS)
    ]


@pytest.mark.parametrize(("mechanism", "epsilon"), _entropy_cases())
def test_secure_batch_reads_at_most_twice_the_entropy(mechanism, epsilon, monkeypatch):
    """The CSPRNG path reads ≤ 2× the report's entropy (the bit-sliced sampler read ~959 B per report at d = 1,024).

    A bound, not a statistical test: the fast set checks each mechanism at one ε (all four ε covered), the
    slow set the other 18 pairs. Both run the one-hot sampler's NumPy lanes, as the fast set's defaults do.
    """
    monkeypatch.setattr(onehot, "SECURE_BATCH", "always")
    monkeypatch.setattr(onehot, "NUMBA_THRESHOLD", 1 << 62)
    decl = next(decl for decl in declarations() if decl.name == mechanism)
    spec = decl.load_spec()(domain=tuple(range(D)), epsilon=epsilon)
    n = 400
    source = SeededSecure(11)
    batch = secure_encode_batch(spec, np.arange(n) % D, indices=True, source=source)  # type: ignore[arg-type]
    assert len(batch) == n
    assert source.bytes / n <= 2 * entropy_bytes(spec)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mechanism", "epsilon"), [(m, e) for e in ENTROPY_EPSILONS for m in ENTROPY_MECHANISMS]
)
def test_secure_batch_reads_at_most_twice_the_entropy_at_d_64(mechanism, epsilon, monkeypatch):
    """The same bound at d = 64, where a report needs 0.5–8 bytes: a report reading its own stream took up to
    7.35× (a stopped report's 32 fresh digits, runs spending digits on ones past the report's end); chains of
    reports sharing one stream and runs no longer than the report's remaining coins keep it under 2× (the fast
    twin: test_one_hot_coins_read_at_most_twice_the_entropy_at_d_64)."""
    monkeypatch.setattr(onehot, "SECURE_BATCH", "always")
    monkeypatch.setattr(onehot, "NUMBA_THRESHOLD", 1 << 62)
    decl = next(decl for decl in declarations() if decl.name == mechanism)
    spec = decl.load_spec()(domain=tuple(range(64)), epsilon=epsilon)
    n = 2000
    source = SeededSecure(12)
    batch = secure_encode_batch(spec, np.arange(n) % 64, indices=True, source=source)  # type: ignore[arg-type]
    assert len(batch) == n
    assert source.bytes / n <= 2 * entropy_bytes(spec)


@pytest.mark.parametrize(
    ("p", "q"),
    [(Fraction(1, 2), Fraction(1, 4)), (Fraction(1, 2), Fraction(1, 64)), (Fraction(1, 4), Fraction(1, 128))],
)
def test_one_hot_coins_read_at_most_twice_the_entropy_at_d_64(p, q):
    """one_hot_coins at d = 64 reads ≤ 2× h(p) + 63 h(q) per report (blocks at q = 1/4; runs at 1/64, as OUE's at
    ε = 4, 3.96× before, and at 1/128 with p = 1/4, as the longitudinal OUE's at ε = 4, 7.35× before). A bound;
    simple fractions: the specs' exact q take 0.1–0.2 s to tabulate."""
    n = 3000
    source = SeededSecure(13)
    one_hot_coins(source, np.random.default_rng(4).integers(0, 64, n), 64, p, q, backend="numpy")
    assert source.bytes * 8 / n <= 2 * (h(p) + 63 * h(q))


def drawn_digits_within_the_bound(q: Fraction) -> bool:
    """Whichever of blocks and runs draws_runs takes at q reads ≤ BLOCKS_ENTROPY × h(q) digits a coin
    (expected), and runs only where they read fewer digits than blocks."""
    blocks, runs = onehot._digits_per_coin(q)
    if onehot.draws_runs(q):
        return runs < blocks and runs <= onehot.BLOCKS_ENTROPY * h(q)
    return blocks <= onehot.BLOCKS_ENTROPY * h(q)


def test_one_rule_takes_blocks_unless_they_read_past_the_entropy_bound(monkeypatch):
    """Blocks (several times less kernel CPU) wherever they read ≤ BLOCKS_ENTROPY × h(q) digits a coin:
    q = 1/21 (as the longitudinal OUE's at ε = 2, 0.048: runs read 1.25× fewer digits) takes blocks, q = 1/56
    (OUE's at ε = 4, 0.018: blocks 2.6× h(q)) runs; the one drawn reads within the bound (the slow twin: the
    specs' q and a grid). The same rule for one_hot_coins, plain_coins and marked_coins. Simple fractions: the
    specs' exact q take 0.1–0.2 s to tabulate."""
    sparse, chain = Fraction(1, 56), Fraction(1, 21)
    blocks, runs = onehot._digits_per_coin(chain)
    assert runs < blocks and not onehot.draws_runs(chain)  # runs would read fewer digits: blocks all the same
    assert onehot.draws_runs(sparse)
    assert drawn_digits_within_the_bound(chain) and drawn_digits_within_the_bound(sparse)
    drawn_by = []
    real_tables = onehot._tables
    monkeypatch.setattr(onehot, "_tables", lambda *args: drawn_by.append(args[-1]) or real_tables(*args))
    for q in (chain, sparse):
        one_hot_coins(SeededSecure(4), np.zeros(3, np.int64), 64, Fraction(1, 2), q, backend="numpy")
        onehot.plain_coins(SeededSecure(4), 3, 64, q, backend="numpy")
        onehot.marked_coins(
            SeededSecure(4), np.zeros((3, 8), np.uint8), 64, Fraction(1, 3), q, backend="numpy"
        )
    assert drawn_by == [False, False, False, True, True, True]


@pytest.mark.slow
def test_the_one_hot_policy_reads_within_the_bound_over_a_grid_of_q():
    chain, sparse = unary("l-oue", 64, 2.0).support[1], unary("oue", 64, 4.0).q
    assert not onehot.draws_runs(chain) and onehot.draws_runs(sparse)
    for q in [chain, sparse, Fraction(5, 8)] + [
        Fraction(1, k) for k in (2, 3, 5, 8, 16, 24, 32, 64, 256, 1000)
    ]:
        assert drawn_digits_within_the_bound(q), q


def crafted_exact_stream(cut: Fraction, flip_at: int) -> tuple[np.ndarray, int]:
    """Words whose block digits follow ``cut``'s binary digits, the ``flip_at``-th flipped, then zeros.

    The first digit (1) is OUE's true coin (p = 1/2: a 1 draws it). The block
    agrees with the cut for flip_at − 1 > 32 digits, so the fixed-point
    bounds cannot settle it: the exact cuts must.
    """
    digits = [(cut.numerator << t) // cut.denominator & 1 for t in range(1, flip_at + 1)]
    digits[-1] ^= 1
    stream = [1, *digits] + [0] * (3 * 64 - 1 - len(digits))
    words = [int("".join(map(str, stream[i : i + 64])), 2) for i in range(0, 3 * 64, 64)]
    return np.array(words, dtype=np.uint64), digits[-1]


@pytest.mark.parametrize("backend", ["numpy", pytest.param("numba", marks=pytest.mark.slow)])
@pytest.mark.parametrize(("j", "n"), [(37, 1), (100, 1), (200, 1), (100, 2)])
def test_a_block_the_bounds_cannot_settle_takes_the_exact_cuts(backend, j, n):
    """With n = 2 the second report is the next of the first's chain: it starts where the first stopped, after
    the exact cuts settled its block (then zeros: every coin 0)."""
    if backend == "numba":
        pytest.importorskip("numba")
    spec = unary("oue", 64)  # its first row (~70 digits) holds the true coin and the block's 51 digits
    cut = pattern_table(spec.q, 8).cuts[j]
    words, flipped = crafted_exact_stream(cut, 51)
    out = one_hot_coins(Replay(words), np.zeros(n, np.int64), 64, spec.p, spec.q, backend=backend)
    # U's 51st digit is 1 where the cut's is 0: U > C_j (pattern j); 0 where it is 1: U < C_j (pattern j − 1)
    assert int(out[0, 0]) == 0x80 | (j if flipped else j - 1)
    assert not out[0, 1:].any() and not out[1:].any()


def test_the_numba_backend_is_refused_by_name_when_numba_is_missing(monkeypatch):
    monkeypatch.setattr(onehot, "_KERNEL", [None])
    spec = unary("oue", 16)
    with pytest.raises(ParameterError, match="numba"):
        one_hot_coins(SeededSecure(1), np.zeros(2, np.int64), 16, spec.p, spec.q, backend="numba")
    assert one_hot_coins(SeededSecure(1), np.zeros(2, np.int64), 16, spec.p, spec.q).shape == (2, 2)


CASES = [
    ("oue", D, None, 1.0),
    ("sue", 1000, None, 1.0),
    ("oue", D, "levels", 1.0),
    ("l-osue", 77, None, 1.0),
    ("oue", D, None, 4.0),
    ("l-oue", 300, "levels", 2.0),  # blocks (q ≈ 0.048)
    ("l-oue", 300, "levels", 4.0),  # runs (q ≈ 0.006)
]


@pytest.mark.slow
@pytest.mark.parametrize(("mechanism", "d", "widths", "epsilon"), CASES)
def test_numba_and_numpy_backends_make_the_same_reports(mechanism, d, widths, epsilon):
    """From the same words (a seeded generator's, and recorded CSPRNG words), both backends return the same reports."""
    pytest.importorskip("numba")
    spec = unary(mechanism, d, epsilon)
    p, q = spec.support if hasattr(spec, "support") else (spec.p, spec.q)
    n = 9000
    rng = np.random.default_rng(5)
    counts = None if widths is None else rng.choice([4, 16, 64, 256, d], n)
    idx = rng.integers(0, d if counts is None else counts)
    a = one_hot_coins(SeededSecure(2), idx, d, p, q, widths=counts, backend="numba")
    b = one_hot_coins(SeededSecure(2), idx, d, p, q, widths=counts, backend="numpy")
    assert np.array_equal(a, b)
    recording = Recording()
    c = one_hot_coins(recording, idx, d, p, q, widths=counts, backend="numba")
    replayed = one_hot_coins(
        Replay(np.concatenate(recording.kept)), idx, d, p, q, widths=counts, backend="numpy"
    )
    assert np.array_equal(c, replayed)


@pytest.mark.slow
def test_the_secure_batch_compiles_the_kernel_above_the_threshold_and_keeps_the_distribution(monkeypatch):
    """A CSPRNG batch above NUMBA_THRESHOLD (the compiled kernel): OUE's per-bit frequencies (chi-square, α = 1e-6)."""
    pytest.importorskip("numba")
    monkeypatch.setattr(onehot, "KERNEL_AFTER", 0)  # this process loads the kernel at its first large batch
    spec = unary("oue", 256)
    n = 4 * onehot.NUMBA_THRESHOLD
    idx = np.arange(n) % 256
    assert onehot.serves_secure_batch(n)
    bits = np.unpackbits(secure_encode_batch(spec, idx, indices=True).column("bits"), axis=1).astype(np.int64)
    rows = np.arange(n)
    ones = bits[rows, idx].sum()
    z = (ones - n / 2) / math.sqrt(n / 4)
    assert abs(z) < stats.norm.isf(ALPHA / 4)
    bits[rows, idx] = 0
    trials = n - np.bincount(idx, minlength=256)
    q = float(spec.q)
    chi2 = (((bits.sum(axis=0) - trials * q) ** 2) / (trials * q * (1 - q))).sum()
    assert chi2 < stats.chi2.isf(ALPHA / 2, 256)


def test_the_secure_batch_draws_here_only_where_the_compiled_kernel_serves_it(monkeypatch):
    """Default policy: this sampler where its kernel runs (numba, ≥ NUMBA_THRESHOLD reports), else bit-sliced.

    The NumPy rounds take about twice the bit-sliced sampler's CPU, so without numba (or for a small batch,
    or before a process has drawn KERNEL_AFTER reports, which would not repay the kernel's load) the secure
    path keeps the faster sampler; both are exact.
    """
    from ldp.client import onehot

    monkeypatch.setattr(onehot, "SECURE_BATCH", "auto")
    monkeypatch.setattr(onehot, "NUMBA_THRESHOLD", 4096)
    monkeypatch.setattr(onehot, "_KERNEL", [None])  # numba missing
    assert not onehot.serves_secure_batch(10**6)
    monkeypatch.setattr(onehot, "_KERNEL", [lambda *args: None])  # a compiled kernel
    assert onehot.serves_secure_batch(4096)
    assert not onehot.serves_secure_batch(4095)
    monkeypatch.setattr(onehot, "SECURE_BATCH", "never")
    assert not onehot.serves_secure_batch(10**6)
    # not loaded yet: the lanes serve the first KERNEL_AFTER reports of a process, then the kernel is loaded
    monkeypatch.setattr(onehot, "SECURE_BATCH", "auto")
    monkeypatch.setattr(onehot, "_KERNEL", [])
    monkeypatch.setattr(onehot, "_DRAWN", [0])
    monkeypatch.setattr(onehot, "KERNEL_AFTER", 10_000)
    loads = []

    def load(name, n):
        loads.append(n)
        onehot._KERNEL.append(lambda *args: None)
        return onehot._KERNEL[0]

    monkeypatch.setattr(onehot, "_backend", load)
    assert [onehot.serves_secure_batch(5000) for _ in range(3)] == [False, False, True]
    assert loads == [5000] and onehot.serves_secure_batch(5000)
    monkeypatch.setattr(onehot, "SECURE_BATCH", "always")
    monkeypatch.setattr(onehot, "_KERNEL", [None])
    assert onehot.serves_secure_batch(1)


def test_a_kernel_that_cannot_load_falls_back_to_the_exact_lanes_with_a_warning(monkeypatch):
    """numba present but no writable cache (a read-only install and HOME): the import raises RuntimeError.

    The secure batch keeps the bit-sliced lanes (tried once, not at every batch); an explicit
    ``backend="numba"`` is refused naming the cause.
    """
    import sys

    from ldp.client.batch import one_hot_bits
    from ldp.errors import LDPWarning

    def cannot_cache(*args, **kwargs):
        raise RuntimeError("cannot cache function '_slow': no locator available")

    module = type(sys)("ldp.client.onehot_kernel")
    module.__getattr__ = cannot_cache  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "ldp.client.onehot_kernel", module)
    monkeypatch.setattr(onehot, "_KERNEL", [])
    monkeypatch.setattr(onehot, "_KERNEL_WHY", [])
    monkeypatch.setattr(onehot, "KERNEL_AFTER", 0)
    monkeypatch.setattr(onehot, "SECURE_BATCH", "auto")
    monkeypatch.setattr(onehot, "NUMBA_THRESHOLD", 4096)
    n = 4096
    with pytest.warns(LDPWarning, match="could not be loaded"):
        bits = one_hot_bits(SystemRandomSource(), np.zeros(n, np.int64), 64, Fraction(1, 2), Fraction(1, 4))
    assert bits.shape == (n, 8) and onehot._KERNEL == [None]
    assert not onehot.serves_secure_batch(n)
    with pytest.raises(ParameterError, match="could not be loaded"):
        one_hot_coins(
            SystemRandomSource(), np.zeros(2, np.int64), 16, Fraction(1, 2), Fraction(1, 4), backend="numba"
        )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"q": Fraction(0)}, "q must be in"),
        ({"p": 2}, "p must be in"),
        ({"p": float("nan")}, "p must be a probability"),
        ({"width": -9}, "at least one coin"),
        ({"backend": "nonsense"}, "backend"),
        ({"idx": np.zeros((2, 2), np.int64)}, "1-D"),
    ],
)
def test_bad_arguments_are_one_line_parameter_errors_even_for_no_reports(kwargs, message):
    args = {"idx": np.zeros(0, np.int64), "width": 16, "p": Fraction(1, 2), "q": Fraction(1, 4)} | kwargs
    with pytest.raises(ParameterError, match=message):
        one_hot_coins(
            SeededSecure(1), args.pop("idx"), args.pop("width"), args.pop("p"), args.pop("q"), **args
        )
