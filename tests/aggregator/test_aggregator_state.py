"""Saved accumulator states (ldp.aggregator.state): refusals, and the parts the conformance round trip does not reach.

Every registered mechanism's round trip (equal accumulator, equal estimates,
same bytes) is in tests/conformance/test_conformance_fast.py.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.state import STATE_FORMAT, dump_state, load_state
from ldp.client import encode_batch
from ldp.errors import InputError


def _grr(n: int = 50):
    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    acc = make_aggregator(spec)
    acc.add_batch(encode_batch(spec, ["a", "b", "c", "a", "a"] * (n // 5), np.random.default_rng(1)))
    return spec, acc


def _rewrite(data: bytes, **changes) -> bytes:
    """``data`` with its header's fields changed (the arrays kept)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        members = {name: archive[name] for name in archive.files}
    header = json.loads(bytes(members.pop("state")).decode())
    header.update(changes)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, state=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **members)
    return buffer.getvalue()


def test_a_state_of_another_spec_is_refused():
    _, acc = _grr()
    other = ldp.GRR(domain=("a", "b", "c"), epsilon=2.0)
    with pytest.raises(InputError, match="of spec"):
        load_state(other, dump_state(acc))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": STATE_FORMAT + 1}, "this ldp reads format"),
        ({"accumulator": "UnaryAccumulator"}, "not a ValueAccumulator"),
        ({"n": 7}, "its header says 7"),
    ],
)
def test_a_state_with_a_wrong_header_is_refused(changes, message):
    spec, acc = _grr()
    with pytest.raises(InputError, match=message):
        load_state(spec, _rewrite(dump_state(acc), **changes))


def test_bytes_that_are_no_state_are_refused():
    spec, _ = _grr()
    with pytest.raises(InputError, match="not a saved accumulator state"):
        load_state(spec, b"not a state")
    buffer = io.BytesIO()
    np.savez(buffer, state=np.array([{"a": 1}], dtype=object))  # a pickled member is never loaded
    with pytest.raises(InputError, match="not a saved accumulator state"):
        load_state(spec, buffer.getvalue())


def test_counts_that_fail_the_family_checks_are_refused():
    spec, acc = _grr()
    with np.load(io.BytesIO(dump_state(acc)), allow_pickle=False) as archive:
        members = {name: archive[name] for name in archive.files}
    members["a0"] = members["a0"] + 1000  # support counts above n
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **members)
    with pytest.raises(InputError, match="support counts"):
        load_state(spec, buffer.getvalue())


def test_a_mean_with_groups_keeps_each_group():
    spec = ldp.Duchi(epsilon=1.0, low=0, high=10)
    acc = make_aggregator(spec)
    batch = encode_batch(spec, [1.0, 2.0, 9.0, 4.0], np.random.default_rng(2))
    acc.add_batch(batch, groups=np.array(["x", "y", "x", None], dtype=object))
    back = load_state(spec, dump_state(acc))
    assert back == acc and back.groups == acc.groups and set(back.groups) == {"x", "y"}
