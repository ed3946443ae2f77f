"""The per-report samplers on the CSPRNG's bits (ldp.client.report_bits): exact, and near the entropy."""

from __future__ import annotations

import functools
import itertools
import math
import multiprocessing
import random
import threading
from collections import Counter
from fractions import Fraction

import pytest
from scipy import stats

from ldp.client import report_bits
from ldp.client.report_bits import (
    RUN_CAP,
    BitReader,
    KnuthYao,
    coin,
    csprng_bits,
    draw,
    reading_from,
    run_table,
    sample_lanes,
    uniform,
    uniform_subset,
    unrank_subset,
)
from ldp.client.sampling import PRFStream

#: Significance level of every statistical test here.
ALPHA = 1e-6


class _Bits:
    """A reader over a fixed bit string, one bit at a time (the plain walk); raises LookupError past its end."""

    def __init__(self, bits: tuple[int, ...]):
        self._bits = iter(bits)
        self.bits_read = 0

    def bit(self) -> int:
        try:
            bit = next(self._bits)
        except StopIteration:
            raise LookupError from None
        self.bits_read += 1
        return bit

    def take(self, k: int) -> int:
        value = 0
        for _ in range(k):
            value = 2 * value + self.bit()
        return value

    def peek(self, k: int) -> None:
        return None


def _walk_masses(table: KnuthYao, depth: int) -> Counter:
    """The exact mass of every outcome the walk reaches within ``depth`` bits (all bit strings fed)."""
    masses: Counter = Counter()
    undecided = [()]
    for length in range(1, depth + 1):
        undecided_next = []
        for prefix in undecided:
            for b in (0, 1):
                try:
                    outcome = table.sample(_Bits((*prefix, b)))  # type: ignore[arg-type]
                except LookupError:
                    undecided_next.append((*prefix, b))
                else:
                    masses[outcome] += Fraction(1, 2**length)
        undecided = undecided_next
    return masses


def _digit_sum(p: Fraction, depth: int) -> Fraction:
    return sum((Fraction(math.floor(p * 2**j) % 2, 2**j) for j in range(1, depth + 1)), Fraction(0))


@pytest.mark.parametrize(
    "groups",
    [
        [(3, Fraction(1, 3))],
        [(1, Fraction(1, 5)), (3, Fraction(4, 15))],
        [(2, Fraction(1, 10)), (1, Fraction(1, 2)), (3, Fraction(1, 10))],
        [(0, Fraction(1, 2)), (2, Fraction(0)), (4, Fraction(1, 4))],
        [(1, Fraction(3, 7)), (1, Fraction(4, 7))],
    ],
)
def test_walk_gives_every_outcome_exactly_its_digits(groups):
    """Within L bits, outcome (g, m) has mass Σ_{j ≤ L} digit_j(p_g)·2^-j: exactly p_g as L grows."""
    depth = 12
    masses = _walk_masses(KnuthYao(groups), depth)
    expected = {
        (g, m): _digit_sum(p, depth) for g, (count, p) in enumerate(groups) for m in range(count) if p
    }
    assert dict(masses) == {o: m for o, m in expected.items() if m}


@pytest.mark.parametrize(
    "table",
    [
        KnuthYao(
            [
                (1, Fraction(48886180638618267, 1 << 64)),
                (1023, (1 - Fraction(48886180638618267, 1 << 64)) / 1023),
            ]
        ),
        KnuthYao([((1 << 64) + 13, Fraction(1, (1 << 64) + 13))]),
        KnuthYao([(3, Fraction(1, 3))]),
        run_table(Fraction(4961093570831984269, 1 << 64)),
        run_table(Fraction(1, 1000)),
    ],
)
def test_the_table_lookup_walks_as_the_plain_walk(table):
    """The first levels done by one lookup of peeked bits: the same outcome and bits as bit by bit, on 2,000 streams."""
    stream = PRFStream(b"test-report-bits-lookup")
    for _ in range(2000):
        data = stream(24)
        plain_bits = _Bits(tuple((byte >> (7 - i)) & 1 for byte in data for i in range(8)))
        plain = table.sample(plain_bits)  # type: ignore[arg-type]
        fast_reader = BitReader(lambda n, data=data: data, chunk=24)
        assert table.sample(fast_reader) == plain
        assert fast_reader.bits_read == plain_bits.bits_read


@pytest.mark.parametrize(
    "probability",
    [Fraction(1, 2), Fraction(1, 4), Fraction(3, 8), Fraction(1, 3), Fraction(5, 7), Fraction(3, 1 << 53)],
)
def test_the_written_out_coin_is_the_two_outcome_walk(probability):
    """coin(t) reads the same bits and answers as the walk over (t, 1 − t), on 2,000 streams."""
    table = KnuthYao([(1, probability), (1, 1 - probability)])
    stream = PRFStream(b"test-report-bits-coin", str(probability).encode())
    for _ in range(2000):
        data = stream(16)
        plain_bits = _Bits(tuple((byte >> (7 - i)) & 1 for byte in data for i in range(8)))
        heads = table.sample(plain_bits)[0] == 0  # type: ignore[arg-type]
        reader = BitReader(lambda n, data=data: data, chunk=16)
        assert coin(probability, reader) == heads
        assert reader.bits_read == plain_bits.bits_read


def test_a_certain_outcome_and_trivial_draws_read_nothing():
    reader = BitReader(lambda n: pytest.fail("read the source"))  # type: ignore[arg-type, return-value]
    assert KnuthYao([(0, Fraction(1, 2)), (1, Fraction(1))]).sample(reader) == (1, 0)
    assert uniform(1, reader) == 0
    assert coin(Fraction(0), reader) is False
    assert coin(Fraction(1), reader) is True
    assert sample_lanes(5, [(0b00011, Fraction(0)), (0b11100, Fraction(1))], reader) == 0b11100
    assert reader.bits_read == 0


def test_probabilities_must_sum_to_one():
    with pytest.raises(ValueError, match="sum to 2/3, not 1"):
        KnuthYao([(2, Fraction(1, 3))])
    with pytest.raises(ValueError, match="group 0"):
        KnuthYao([(-1, Fraction(1, 2))])


def test_bits_are_served_most_significant_first_and_left_bits_serve_the_next_draw():
    reads = []

    def source(n):
        reads.append(n)
        return bytes([0b10110010]) * n

    reader = BitReader(source)
    assert [uniform(2, reader) for _ in range(8)] == [1, 0, 1, 1, 0, 0, 1, 0]
    assert reads == [1] and reader.bits_read == 8
    uniform(2, reader)
    assert reads == [1, 1]


def test_a_forked_child_does_not_serve_the_parents_bits():
    parent = csprng_bits()
    uniform(2)  # the parent keeps bits of its last byte
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        child_fresh = pool.apply(_child_reader_is_fresh, (id(parent),))
    assert child_fresh


def _child_reader_is_fresh(parent_id: int) -> bool:
    return id(csprng_bits()) != parent_id and csprng_bits().bits_read == 0


def test_threads_never_share_a_bit():
    """Draws from many threads take disjoint bits: the bits handed out equal the bits read."""
    served = bytearray()
    reader = BitReader(lambda n: served.extend(bytes(range(n))) or bytes(range(n)), chunk=16)
    walks = []

    def work():
        for _ in range(500):
            walks.append(uniform(1 << 5, reader))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(walks) == 2000 and reader.bits_read == 2000 * 5


def test_unranking_is_one_to_one_onto_the_k_subsets():
    for n in range(7):
        for k in range(n + 1):
            subsets = [tuple(unrank_subset(r, n, k)) for r in range(math.comb(n, k))]
            assert sorted(subsets) == sorted(itertools.combinations(range(n), k))
            assert all(
                rank == sum(math.comb(c, i + 1) for i, c in enumerate(s)) for rank, s in enumerate(subsets)
            )
    with pytest.raises(ValueError, match="rank 6"):
        unrank_subset(6, 4, 2)


def _chi_square_pvalue(observed: Counter, expected: dict) -> float:
    keys = list(expected)
    counts = [observed.get(k, 0) for k in keys]
    assert sum(counts) == sum(observed.values())
    return stats.chisquare(counts, [expected[k] for k in keys]).pvalue


def test_uniform_subsets_are_uniform():
    """Seeded χ² over every 3-subset of 7 (35 cells), α = 1e-6."""
    reader = BitReader(PRFStream(b"test-report-bits-subset"))
    n = 7000
    draws = Counter(tuple(uniform_subset(7, 3, reader)) for _ in range(n))
    expected = dict.fromkeys(itertools.combinations(range(7), 3), n / 35)
    assert _chi_square_pvalue(draws, expected) > ALPHA


@pytest.mark.parametrize("probability", [Fraction(3, 10), Fraction(1, 2), Fraction(2, 3), Fraction(1, 97)])
def test_lanes_are_independent_coins(probability):
    """Seeded χ² over the 2^6 patterns of 6 lanes (plus a lane of 1/2 drawn first), α = 1e-6."""
    reader = BitReader(PRFStream(b"test-report-bits-lanes", str(probability).encode()))
    n = 6400
    patterns = Counter(
        sample_lanes(7, [(1, Fraction(1, 2)), (0b1111110, probability)], reader) for _ in range(n)
    )
    t = float(probability)
    expected = {}
    for pattern in range(128):
        ones = bin(pattern >> 1).count("1")
        expected[pattern] = n * 0.5 * t**ones * (1 - t) ** (6 - ones)
    assert _chi_square_pvalue(patterns, expected) > ALPHA


def test_run_table_holds_the_capped_geometric_law():
    s = Fraction(1, 5)
    groups = run_table(s).groups
    assert len(groups) == RUN_CAP + 1
    assert [p for _, p in groups[:3]] == [s, s * (1 - s), s * (1 - s) ** 2]
    assert groups[-1] == (1, (1 - s) ** RUN_CAP)


def _entropy_bits(probabilities) -> float:
    return -sum(p * math.log2(p) for p in probabilities if p)


def test_reports_read_near_their_entropy():
    """GRR (d = 1,024) and OUE lanes (d = 256) read at most H + 2 bits a walk on average (Knuth–Yao's bound).

    The bound is on the mean; the test allows z = 5 standard errors of the sample mean above it
    (one-sided α < 1e-6), the standard error estimated from the draws.
    """
    p = Fraction(48886180638618267, 1 << 64)
    q = (1 - p) / 1023
    grr = KnuthYao([(1, p), (1023, q)])
    reader = BitReader(PRFStream(b"test-report-bits-economy"))
    costs = []
    for _ in range(3000):
        before = reader.bits_read
        grr.sample(reader)
        costs.append(reader.bits_read - before)
    mean = sum(costs) / len(costs)
    se = math.sqrt(sum((c - mean) ** 2 for c in costs) / (len(costs) - 1) / len(costs))
    entropy = _entropy_bits([float(p)] + [float(q)] * 1023)
    assert mean <= entropy + 2 + 5 * se
    # lanes: the runs of a 255-lane group of q (OUE at ε = 1) within 1.5× the lanes' entropy
    oue_q = Fraction(4961093570831984269, 1 << 64)
    before = reader.bits_read
    for _ in range(200):
        sample_lanes(256, [(1, Fraction(1, 2)), ((1 << 256) - 2, oue_q)], reader)
    per_report = (reader.bits_read - before) / 200
    assert per_report <= 1.5 * (1 + 255 * _entropy_bits([float(oue_q), 1 - float(oue_q)]))


def test_reading_from_gives_the_samplers_a_fresh_reader_and_restores_the_process_one():
    process = csprng_bits()
    with reading_from(lambda n: b"\xff" * n) as reader:
        assert csprng_bits() is reader
        assert uniform(4) == 3
    assert csprng_bits() is process
    assert report_bits.csprng_bits() is process


@pytest.mark.parametrize(
    "rarer", [Fraction(4961093570831984269, 1 << 64), Fraction(3, 8), Fraction(1, 2), Fraction(1, 1000)]
)
def test_whole_runs_by_window_are_the_runs_one_by_one(rarer):
    """A run table's 12-bit windows of whole runs: the same lanes and bits as drawing the runs one by one."""
    from ldp.client.report_bits import _rare_lanes

    def _rare_positions(table, count, reader):  # where the rarer symbol falls among count coins
        return [i for i, lane in enumerate(_rare_lanes(table, [count], reader)[0]) if lane == "1"]

    plain, windowed = run_table.__wrapped__(rarer), run_table.__wrapped__(rarer)
    plain.runs_drawn = -(1 << 60)  # never builds its windows
    windowed.runs_drawn = 1 << 60
    assert windowed.windows() is not None and plain.windows() is None
    stream = PRFStream(b"test-report-bits-windows", str(rarer).encode())
    for count in (1023, 37, 1):
        for _ in range(100):
            data = stream(256)
            one, many = BitReader(lambda n, data=data: data, 256), BitReader(lambda n, data=data: data, 256)
            assert _rare_positions(plain, count, one) == _rare_positions(windowed, count, many)
            assert one.bits_read == many.bits_read


def _lanes_of(text: str, mask: int) -> int:
    from ldp.client.report_bits import _lane_shape, _lanes_of_text, _scattered_lanes

    shape = _lane_shape(mask)
    return _scattered_lanes([(mask, text, True)]) if shape is None else _lanes_of_text(text, shape)


def test_positions_map_onto_the_masks_lanes():
    """Position i is the i-th lowest set bit of the mask: contiguous, all-but-one and scattered masks, few or many."""
    from ldp.client.report_bits import _lane_shape

    rng = random.Random(7)
    masks = [(1 << 300) - 1, ((1 << 300) - 1) << 5, ((1 << 300) - 1) ^ (1 << 123), rng.getrandbits(300) | 1]
    assert [_lane_shape(mask) is None for mask in masks] == [False, False, False, True]
    for mask in masks:
        lanes = [i for i in range(mask.bit_length()) if mask >> i & 1]
        for size in (0, 1, 10, 64, 65, 100):
            chosen = sorted(rng.sample(range(len(lanes)), size))
            text = "".join("1" if i in chosen else "0" for i in range(len(lanes)))
            assert _lanes_of(text, mask) == sum(1 << lanes[i] for i in chosen)


def test_scattered_groups_fill_their_lanes_in_one_pass():
    """Disjoint scattered masks, some with the rarer symbol 0 (their text flipped), leave other lanes 0."""
    from ldp.client.report_bits import _scattered_lanes

    rng = random.Random(11)
    for width in (7, 8, 128, 1000):
        owner = [rng.randrange(4) for _ in range(width)]  # group 3 owns no text: its lanes stay 0
        groups, expected = [], 0
        for g, rarer_is_one in ((0, True), (1, False), (2, True)):
            lanes = [i for i in range(width) if owner[i] == g]
            if not lanes:
                continue
            text = "".join(rng.choice("01") for _ in lanes)
            groups.append((sum(1 << i for i in lanes), text, rarer_is_one))
            expected |= sum(1 << i for i, c in zip(lanes, text) if (c == "1") == rarer_is_one)
        assert _scattered_lanes(groups) == expected


#: A table no test walks in this process: the forked child's draw must build its levels.
_FORK_TABLE = KnuthYao([(7, Fraction(1, 7))])


def _draw_in_child() -> tuple[int, int]:
    return uniform(5), draw(_FORK_TABLE)[0]


def test_a_child_forked_while_a_parents_thread_holds_the_locks_still_draws():
    """The process reader's lock and a table's level lock, held by the parent at the fork, are new in the child."""
    context = multiprocessing.get_context("fork")
    with report_bits._process_lock, _FORK_TABLE._grow:
        pool = context.Pool(1)
    try:
        value, group = pool.apply_async(_draw_in_child).get(timeout=20)
    finally:
        pool.terminate()
    assert 0 <= value < 5 and group == 0


class _Stream:
    """Fixed bytes served in order, ``n`` at a time (what a chunked reader asks for)."""

    def __init__(self, data: bytes):
        self._data = data
        self._at = 0

    def __call__(self, n: int) -> bytes:
        out = self._data[self._at : self._at + n]
        self._at += n
        return out


@functools.lru_cache
def _plain_table(rarer: Fraction) -> report_bits.RunTable:
    """A run table of its own, never given a prefix code: walked bit by bit."""
    table = run_table.__wrapped__(rarer)
    table.runs_drawn = -(1 << 60)
    return table


def _plain_lanes(width, groups, bits: _Bits) -> tuple[int, int]:
    """The lanes by the spec (tests/vectors/README.md, bits: lanes as runs), one plain walk a run; and the longest walk."""
    result, longest = 0, 0
    for mask, t in groups:
        if not mask or t in (0, 1):
            result |= mask if t == 1 else 0
            continue
        rarer_is_one = t <= Fraction(1, 2)
        table = _plain_table(t if rarer_is_one else 1 - t)
        lanes = [i for i in range(width) if mask >> i & 1]
        at = 0
        while at < len(lanes):
            before = bits.bits_read
            run, _ = table.sample(bits)  # type: ignore[arg-type]
            longest = max(longest, bits.bits_read - before)
            for lane in lanes[at : at + run]:
                result |= 0 if rarer_is_one else 1 << lane
            if run < RUN_CAP and at + run < len(lanes):
                result |= 1 << lanes[at + run] if rarer_is_one else 0
            at += run + (run < RUN_CAP)
    return result, longest


def _escape_prone(n: int, seed: bytes) -> bytes:
    """Seeded random bytes with a run of 40 one bits every 64 bytes: some walks go past the prefix code's depth."""
    data = bytearray(PRFStream(b"test-report-bits-escapes", seed)(n))
    for at in range(0, n - 5, 64):
        data[at : at + 5] = b"\xff" * 5
    return bytes(data)


_OUE_Q = Fraction(4961093570831984269, 1 << 64)
_SCATTERED = random.Random(11).getrandbits(128)
_SCATTERED_WIDE = random.Random(12).getrandbits(1024)
_LANE_CASES = {
    "oue": (1024, [(1 << 5, Fraction(1, 2)), (((1 << 1024) - 1) ^ (1 << 5), _OUE_Q)]),
    "rappor": (128, [(_SCATTERED, Fraction(3, 4)), (((1 << 128) - 1) ^ _SCATTERED, Fraction(1, 4))]),
    "one table, two scattered groups": (
        1024,
        [(_SCATTERED_WIDE, Fraction(3, 4)), (((1 << 1024) - 1) ^ _SCATTERED_WIDE, Fraction(1, 4))],
    ),
    "capped runs": (600, [(((1 << 600) - 1) ^ (1 << 77), Fraction(999, 1000)), (1 << 77, Fraction(1, 1000))]),
    "shifted": (700, [(((1 << 650) - 1) << 50, Fraction(3, 8)), ((1 << 50) - 1, Fraction(5, 8))]),
}


@pytest.mark.parametrize("chunk", [1, 2, 64])
@pytest.mark.parametrize("case", list(_LANE_CASES))
@pytest.mark.parametrize("escapes", [False, True])
def test_decoded_runs_read_the_plain_walks_bits(case, chunk, escapes):
    """sample_lanes with the run tables' prefix codes built: the lanes and bits of the plain walks, report after report.

    Twelve reports back to back on one reader (the bits one leaves serve the
    next); chunk 1 reads no bit ahead and walks, 2 and 64 decode blocks. With
    ``escapes`` the source has 40 one bits every 64 bytes, so that walks pass
    the code's depth and are finished bit by bit (checked: the longest walk).
    """
    for _, t in _LANE_CASES[case][1]:
        run_table(min(t, 1 - t)).runs_drawn = 1 << 40  # past the point where the code is built
    longest = _lanes_and_bits_as_plain_walks(case, chunk, escapes, label=b"test-report-bits-decode")
    if escapes and case != "capped runs":
        assert longest > report_bits._CODE_DEPTH


@pytest.mark.parametrize("start_bits", [9, pytest.param(13, marks=pytest.mark.slow)])
def test_decoding_tiny_groups_reads_the_plain_walks_bits_for_every_start(monkeypatch, start_bits):
    """Every start of the stream of ``start_bits`` bits (then seeded bits), blocks decoded even for a few runs.

    Two groups of 6 and 1 lanes, two reports on one reader: the lanes and
    bits of the plain walks, runs cut at a group's end included.
    """
    monkeypatch.setattr(report_bits, "_DECODE_RUNS", 0)
    groups = [(0b1111110, Fraction(1, 3)), (0b0000001, Fraction(5, 7))]
    for t in (Fraction(1, 3), Fraction(2, 7)):
        run_table(t).runs_drawn = 1 << 40
    tail = PRFStream(b"test-report-bits-tiny")((1 << start_bits) + 64)
    for start in range(1 << start_bits):
        head = start << (16 - start_bits) | tail[start] >> start_bits  # the start, then seeded bits
        data = head.to_bytes(2, "big") + tail[start : start + 64]
        plain = _Bits(tuple((byte >> (7 - i)) & 1 for byte in data for i in range(8)))
        reader = BitReader(_Stream(data), 2)
        for _ in range(2):
            expected, _ = _plain_lanes(7, groups, plain)
            assert sample_lanes(7, groups, reader) == expected
            assert reader.bits_read == plain.bits_read


def _lookup_by_walks(table: KnuthYao, width: int) -> list[tuple[int, int, int]]:
    """The lookup table of ``width`` levels walked entry by entry: each v fed to the walk bit by bit."""
    out = []
    for v in range(1 << width):
        bits = _Bits(tuple((v >> (width - 1 - i)) & 1 for i in range(width)))
        try:
            group, member = table.sample(bits)  # type: ignore[arg-type]
            out.append((bits.bits_read, group, member))
        except LookupError:  # undecided after ``width`` bits: its node at that level
            d = v
            for depth in range(width):
                d -= table._level(depth)[0] * (1 << (width - 1 - depth))
            out.append((width, -1, d))
    return out


@pytest.mark.parametrize(
    "table",
    [
        KnuthYao([(3, Fraction(1, 3))]),
        KnuthYao(
            [
                (1, Fraction(48886180638618267, 1 << 64)),
                (1023, (1 - Fraction(48886180638618267, 1 << 64)) / 1023),
            ]
        ),
        KnuthYao([((1 << 64) + 13, Fraction(1, (1 << 64) + 13))]),
        KnuthYao([(2, Fraction(1, 10)), (1, Fraction(1, 2)), (3, Fraction(1, 10))]),
        KnuthYao([(1, Fraction(1, 2)), (1, Fraction(1, 4)), (1, Fraction(1, 4))]),
        run_table.__wrapped__(Fraction(1, 1000)),
    ],
)
def test_the_lookup_table_filled_leaf_by_leaf_is_the_walks(table):
    """Entry v of the 8- and 12-bit lookup tables (filled from the levels' leaves) is the walk fed v's bits."""
    assert table._lookup_table() == _lookup_by_walks(table, 8)
    assert table._lookup_table(12) == _lookup_by_walks(table, 12)


def test_runs_drawn_counts_every_run_whatever_the_chunk():
    """A table counts the runs it decodes as those it walks: it builds its code at the same run for any chunk."""
    from ldp.client.report_bits import _rare_lanes

    data = PRFStream(b"test-report-bits-runs-drawn")(4096)
    counted = []
    for chunk in (1, 64):
        table = run_table.__wrapped__(_OUE_Q)
        table.runs_drawn = report_bits._CODE_AFTER  # decodes when the reader reads ahead
        reader = BitReader(_Stream(data), chunk)
        lanes = [_rare_lanes(table, [1000, 23], reader) for _ in range(3)]
        counted.append((table.runs_drawn, reader.bits_read, lanes))
    assert counted[0] == counted[1]
    assert counted[0][0] > report_bits._CODE_AFTER + 3 * 1023 * float(_OUE_Q) / 2


def _lanes_and_bits_as_plain_walks(
    case: str, chunk: int, escapes: bool, reports: int = 12, label: bytes = b"test-report-bits-kernel"
) -> int:
    """``reports`` reports of a lane case back to back on one reader: the plain walks' lanes and bits, each.

    Returns the longest walk. The source is ``label``'s PRF stream, or with
    ``escapes`` one whose walks pass the run code's depth.
    """
    width, groups = _LANE_CASES[case]
    n = reports * (2 * width // 8 + 64)
    data = _escape_prone(n, case.encode()) if escapes else PRFStream(label, case.encode())(n)
    plain = _Bits(tuple((byte >> (7 - i)) & 1 for byte in data for i in range(8)))
    reader = BitReader(_Stream(data), chunk)
    longest = 0
    for _ in range(reports):
        expected, walk = _plain_lanes(width, groups, plain)
        longest = max(longest, walk)
        assert sample_lanes(width, groups, reader) == expected
        assert reader.bits_read == plain.bits_read
    return longest


@pytest.fixture
def uncompiled_kernel(monkeypatch):
    """The compiled walk's code run as Python (no numba), recording each call's status."""
    from ldp.client import report_bits_kernel

    statuses: list[int] = []

    def walk(*args):
        status, spent = report_bits_kernel.walk_runs(*args)
        statuses.append(status)
        return status, spent

    monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "always")
    monkeypatch.setattr(report_bits_kernel, "_KERNEL", [walk])
    report_bits._lane_plan.cache_clear()  # plans hold their tables' arrays: made again with the test's settings
    yield statuses
    report_bits._lane_plan.cache_clear()


@pytest.mark.parametrize("chunk", [2, 64, 256])
@pytest.mark.parametrize("case", list(_LANE_CASES))
@pytest.mark.parametrize("escapes", [False, True])
def test_the_kernel_reads_the_plain_walks_bits(uncompiled_kernel, case, chunk, escapes):
    """sample_lanes by the compiled walk's code (uncompiled here): the lanes and bits of the plain walks.

    Twelve reports back to back on one reader that may read ahead: the bits
    one report leaves (given back to the reader) serve the next. With
    ``escapes``, walks past the 12-bit lookup go on level by level.
    """
    _lanes_and_bits_as_plain_walks(case, chunk, escapes)
    assert uncompiled_kernel.count(0) == 12  # every report by the kernel (DONE once each)


def test_the_kernel_asks_for_more_bits_and_levels_and_spends_nothing_before(monkeypatch, uncompiled_kernel):
    """Too few bits handed over (a margin of 1 %) or too few levels (13): called again, the same lanes and bits."""
    from ldp.client import report_bits_kernel

    monkeypatch.setattr(report_bits, "_KERNEL_MARGIN", 0.01)
    monkeypatch.setattr(report_bits, "_KERNEL_DEPTH", 13)
    for case in ("oue", "rappor", "capped runs"):
        _lanes_and_bits_as_plain_walks(case, 64, True, reports=4)
    assert {report_bits_kernel.SHORT, report_bits_kernel.TOO_DEEP, report_bits_kernel.DONE} == set(
        uncompiled_kernel
    )


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [2, 64, 256])
def test_the_compiled_kernel_reads_the_plain_walks_bits(monkeypatch, chunk):
    """The numba-compiled walk (loaded as the default policy would): every lane case, the plain walks' lanes and bits."""
    pytest.importorskip("numba")
    from ldp.client import report_bits_kernel

    monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "always")
    monkeypatch.setattr(report_bits_kernel, "_KERNEL", [])
    report_bits._lane_plan.cache_clear()
    try:
        for case in _LANE_CASES:
            for escapes in (False, True):
                _lanes_and_bits_as_plain_walks(case, chunk, escapes, reports=50)
        assert report_bits_kernel._KERNEL[0] is not None
    finally:
        report_bits._lane_plan.cache_clear()


def test_the_kernel_is_loaded_only_under_its_policy(monkeypatch):
    """``never`` and ``auto`` below KERNEL_AFTER keep the Python walks without loading numba; a bad policy is refused."""
    from ldp.client import report_bits_kernel
    from ldp.errors import ParameterError

    monkeypatch.setattr(report_bits_kernel, "_KERNEL", [])
    table = run_table.__wrapped__(Fraction(1, 3))
    monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "never")
    table.runs_drawn = 1 << 40
    assert report_bits_kernel.compiled_walk([table]) is None
    monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "auto")
    table.runs_drawn = report_bits_kernel.KERNEL_AFTER - 1
    assert report_bits_kernel.compiled_walk([table]) is None
    assert report_bits_kernel._KERNEL == []
    monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "sometimes")
    with pytest.raises(ParameterError, match="COMPILED_WALKS"):
        report_bits_kernel.compiled_walk([table])


def test_without_numba_the_lanes_are_walked_in_python(monkeypatch):
    """numba missing: the policy's first wish to load it gives None, remembered, and the Python walks serve."""
    import sys

    from ldp.client import report_bits_kernel

    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    monkeypatch.setattr(report_bits_kernel, "_KERNEL", [])
    monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "always")
    assert report_bits_kernel.compiled_walk([run_table(Fraction(1, 3))]) is None
    assert report_bits_kernel._KERNEL == [None]
    _lanes_and_bits_as_plain_walks("rappor", 64, False, reports=2)


def test_a_numba_without_a_writable_cache_warns_and_the_python_walks_serve(monkeypatch):
    """numba present but unable to cache (a read-only install and HOME): one warning naming the fix, then Python."""
    import sys
    import types

    from ldp.client import report_bits_kernel
    from ldp.errors import LDPWarning

    def njit(**options):
        raise RuntimeError("cannot cache function 'walk_runs': no locator available")

    monkeypatch.setitem(sys.modules, "numba", types.SimpleNamespace(njit=njit))
    monkeypatch.setattr(report_bits_kernel, "_KERNEL", [])
    monkeypatch.setattr(report_bits_kernel, "_WHY", [])
    monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "always")
    with pytest.warns(LDPWarning, match="NUMBA_CACHE_DIR"):
        assert report_bits_kernel.compiled_walk([run_table(Fraction(1, 3))]) is None
    assert "no locator" in report_bits_kernel._WHY[0]
    _lanes_and_bits_as_plain_walks("oue", 64, False, reports=2)


@pytest.mark.slow
def test_the_default_policy_loads_the_kernel_once_a_table_is_busy(monkeypatch):
    """``auto``: nothing loaded below KERNEL_AFTER runs of a table; the compiled walk from then on."""
    pytest.importorskip("numba")
    from ldp.client import report_bits_kernel

    monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "auto")
    monkeypatch.setattr(report_bits_kernel, "_KERNEL", [])
    table = run_table.__wrapped__(Fraction(1, 3))
    table.runs_drawn = report_bits_kernel.KERNEL_AFTER - 1
    assert report_bits_kernel.compiled_walk([table]) is None and report_bits_kernel._KERNEL == []
    table.runs_drawn += 1
    kernel = report_bits_kernel.compiled_walk([table])
    assert kernel is not None and report_bits_kernel.compiled_walk([run_table(Fraction(1, 5))]) is kernel


@pytest.mark.parametrize(
    "table",
    [
        KnuthYao([(1023, Fraction(1, 1023))]),  # 9 levels without a leaf: below the wide lookup's 12
        KnuthYao([(5000, Fraction(1, 5000))]),  # 12: the lookup would decide nothing
        KnuthYao([((1 << 61) - 1, Fraction(1, (1 << 61) - 1))]),  # a local-hashing seed's size
        KnuthYao([(math.comb(1023, 275), Fraction(1, math.comb(1023, 275)))]),  # a subset's rank: 853 levels
    ],
)
def test_leading_levels_without_a_leaf_taken_at_once_read_the_walks_bits(table):
    """Back-to-back draws on a reader that reads ahead (chunks of 2, 64, 256 bytes) take a table's leading
    empty levels at once: the same outcomes and bits as the one-byte reader's walks, draw after draw."""
    data = PRFStream(b"test-report-bits-empty-levels")(40_000)
    plain = BitReader(_Stream(data), 1)
    expected = [(table.sample(plain), plain.bits_read) for _ in range(30)]
    for chunk in (2, 64, 256):
        reader = BitReader(_Stream(data), chunk)
        assert [(table.sample(reader), reader.bits_read) for _ in range(30)] == expected, chunk


def test_a_many_outcome_tables_levels_worked_out_with_numpy_are_the_digit_by_digit_levels(monkeypatch):
    """A table of thousands of outcomes sharing one denominator (a numeric row) builds its levels with NumPy:
    the same leaves at every level as one rational's digits at a time, and the same walks."""
    rng = random.Random(7)
    total = (1 << 40) - 88
    weights = [total // 2, total // 8] + [rng.randrange(1, 1 << 27) for _ in range(3000)]  # some digits end
    weights.append(total - sum(weights))
    fast = KnuthYao.from_weights(weights, total)
    monkeypatch.setattr(report_bits, "_ARRAY_LEVELS_FROM", 1 << 62)
    plain = KnuthYao.from_weights(weights, total)
    assert fast._planes is not None and plain._planes is None
    assert [fast._level(depth) for depth in range(70)] == [plain._level(depth) for depth in range(70)]
    data = PRFStream(b"test-report-bits-planes")(20_000)
    readers = BitReader(_Stream(data), 64), BitReader(_Stream(data), 64)
    assert [fast.sample(readers[0]) for _ in range(2000)] == [plain.sample(readers[1]) for _ in range(2000)]
    assert readers[0].bits_read == readers[1].bits_read
