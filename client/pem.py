"""PEM clients: one OLH report of a prefix of the value's bits (docs/heavy-hitters.md#pem).

The user's group i is uniform in [0, g) and independent of the value, the
hash seed uniform in the local-hashing family, and the bucket is kept with
the spec's exact probability p (else one of the g − 1 others uniformly): the
same draws as :class:`ldp.client.LocalHashingEncoder`, on the key of the
value's first ℓ_i bits (:func:`ldp.specs.heavy_hitters.prefix_key`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import factorize_values, randomized_response_batch
from ldp.client.encoders import randomized_response_index, rr_thresholds, stateless_factory
from ldp.client.randomness import as_source
from ldp.client.report_bits import uniform
from ldp.hashing import LH_SEED_SPACE, lh_bucket, lh_buckets
from ldp.report import Report
from ldp.specs.heavy_hitters import PrefixHashing, prefix_key

__all__ = ["PEMEncoder", "pem_batch", "pem_encoder", "pem_keys"]


class PEMEncoder:
    """PEM and TreeHist on the device: every coin from the OS CSPRNG, read bit by bit, every probability exact; see :class:`ldp.PEM`.

    References
    ----------
    .. [1] T. Wang, N. Li, S. Jha. IEEE TDSC 18(2), 2021.
    """

    def __init__(self, spec: PrefixHashing):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._den, self._keep, self._other = rr_thresholds(spec.p, spec.q)

    def encode(self, value: Any) -> Report:
        spec = self.spec
        bits = spec.value_bits(value)
        round_ = uniform(spec.num_rounds)
        length = spec.prefix_length(round_)
        key = prefix_key(bits >> (spec.num_bits - length), length)
        seed = uniform(LH_SEED_SPACE)
        bucket = lh_bucket(seed, key, spec.g)
        reported = randomized_response_index(bucket, self._den, self._keep, self._other)
        return Report.of_encoder(self._fingerprint, seed=seed, value=reported, extra=(("round", round_),))


#: The encoder factory of PEM and TreeHist (declared in :mod:`ldp.registry`).
pem_encoder = stateless_factory(PEMEncoder)


def pem_keys(spec: PrefixHashing, values) -> tuple[np.ndarray, np.ndarray]:
    """(codes, keys): each value's code among the distinct values, and keys[u, i] of distinct value u in round i.

    Each distinct value is encoded (and checked) once.
    """
    codes, uniques = factorize_values(values)
    m = spec.num_bits
    lengths = spec.prefix_lengths
    keys = np.empty((len(uniques), len(lengths)), dtype=np.uint64)
    for u, value in enumerate(uniques):
        bits = spec.value_bits(value)
        keys[u] = [prefix_key(bits >> (m - length), length) for length in lengths]
    return codes, keys


def pem_batch(spec: PrefixHashing, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """The single encoder's distribution, vectorized: group, seed and bucket coins from ``rng``'s exact samplers."""
    if indices:
        from ldp.errors import InputError

        raise InputError("pem has no domain: give the values themselves, not domain indices")
    source = as_source(rng)
    codes, keys = pem_keys(spec, values)
    n = codes.size
    rounds = source.integers(spec.num_rounds, n)
    seeds = source.integers(LH_SEED_SPACE, n).astype(np.uint64)
    key = keys[codes, rounds] if n else np.zeros(0, dtype=np.uint64)
    buckets = lh_buckets(seeds, key, spec.g)
    reported = randomized_response_batch(source, buckets.astype(np.int64), spec.g, spec.p, spec.q)
    return ReportBatch(
        spec=spec.fingerprint,
        seeds=seeds,
        values=reported,
        extra={"round": np.asarray(rounds, dtype=np.int64)},
    )
