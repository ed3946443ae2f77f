"""Exactness of the client's samplers, checked by enumerating every random input."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from ldp.client.sampling import PRFStream, binary_digits, lanes_to_packed, sample_lanes


def sequence_source(bits, prob):
    """A byte source whose low bits are ``bits`` (one per round), then the complement of ``prob``'s next digit.

    After the prefix the lane's uniform U differs from the threshold at the
    very next digit, so every sequence is decided by round len(bits) + 1: the
    sampler cannot loop forever on a prefix that matches the threshold.
    """
    digits, _ = binary_digits(prob, len(bits) + 1)
    data = bytes(bits) + bytes([1 - digits[len(bits)]]) + bytes(1000)
    position = 0

    def source(n):
        nonlocal position
        out = data[position : position + n]
        position += n
        return out

    return source


@pytest.mark.parametrize(
    "prob", [Fraction(3, 8), Fraction(1, 3), Fraction(39, 100), Fraction(0), Fraction(1)]
)
def test_single_lane_is_exact(prob):
    """Over all 2^L first-L-round sequences, the decided-as-1 mass is within 2^-L of p."""
    rounds = 10
    ones = 0
    for bits in itertools.product((0, 1), repeat=rounds):
        ones += sample_lanes(1, [(1, prob)], sequence_source(bits, prob))
    # Sequences that stay undecided for L rounds (at most one: U's digits equal p's) add < 2^-L.
    assert abs(Fraction(ones, 2**rounds) - prob) <= Fraction(1, 2**rounds)


def test_dyadic_probability_exact_count():
    prob = Fraction(3, 8)
    ones = sum(
        sample_lanes(1, [(1, prob)], sequence_source(bits, prob))
        for bits in itertools.product((0, 1), repeat=3)
    )
    assert ones == 3


def test_binary_digits():
    digits, rest = binary_digits(Fraction(1, 3), 6)
    assert digits == (0, 1, 0, 1, 0, 1) and rest == Fraction(1, 3)
    assert binary_digits(Fraction(3, 8), 4) == ((0, 1, 1, 0), Fraction(0))


def test_lanes_pack_like_numpy():
    rng = np.random.default_rng(0)
    for width in (1, 7, 8, 13, 128):
        bits = rng.integers(0, 2, width)
        lanes = sum(int(b) << i for i, b in enumerate(bits))
        assert lanes_to_packed(lanes, width) == np.packbits(bits.astype(np.uint8)).tobytes()


def test_prf_stream_is_deterministic_and_keyed():
    a = PRFStream(b"k", b"v")
    chunks = a(10) + a(500)
    assert chunks == PRFStream(b"k", b"v")(510)
    assert PRFStream(b"k", b"w")(32) != PRFStream(b"k", b"v")(32)
    # Length prefixes: ("ab", "c") and ("a", "bc") differ.
    assert PRFStream(b"ab", b"c")(32) != PRFStream(b"a", b"bc")(32)


def test_precomputed_expansions_sample_exactly_like_sample_lanes():
    """Encoders pass (mask, *expansion(p)); on the same byte stream the result is identical."""
    from ldp.client.sampling import expansion, sample_expanded

    probs = (Fraction(1, 3), Fraction(39, 100), Fraction(3, 4), Fraction(0), Fraction(1))
    rng = np.random.default_rng(3)
    for trial in range(200):
        width = int(rng.integers(1, 130))
        first = int(rng.integers(0, 1 << min(width, 62))) & ((1 << width) - 1)
        groups = [(first, probs[trial % 5]), (((1 << width) - 1) ^ first, probs[(trial + 2) % 5])]
        key = trial.to_bytes(4, "big")
        plain = sample_lanes(width, groups, PRFStream(b"t", key))
        expanded = sample_expanded(width, [(mask, *expansion(p)) for mask, p in groups], PRFStream(b"t", key))
        assert plain == expanded
    for prob in probs:  # and the enumeration bound of test_single_lane_is_exact holds for it too
        rounds = 8
        ones = sum(
            sample_expanded(1, [(1, *expansion(prob))], sequence_source(bits, prob))
            for bits in itertools.product((0, 1), repeat=rounds)
        )
        assert abs(Fraction(ones, 2**rounds) - prob) <= Fraction(1, 2**rounds)
