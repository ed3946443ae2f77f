"""Simulating heavy-hitter mechanisms (PEM): the real batch encoder and accumulator on a population.

There is no exact count sampler for PEM (its search reads each report's
hash function), so both simulation modes encode every user with the
vectorized batch encoder (coins from the run's seeded generator, NOT
cryptographically secure) and run the accumulator's search; ``faithful``
mode is the same path. The discovered values' estimates are placed on the
population's domain (undiscovered values estimate 0), so the frequency
errors are over the whole domain and the top-k metrics over the discovered
set (docs/heavy-hitters.md#pem-simulate).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.errors import InputError
from ldp.specs.heavy_hitters import HEAVY_HITTER_MECHANISMS, PEM_MAX_LENGTH, HeavyHitterSpec

__all__ = ["discovery_metrics", "heavy_hitter_estimates", "heavy_hitter_spec"]


def heavy_hitter_spec(name: str, epsilon: float, domain: Sequence[Any], top_k: int) -> HeavyHitterSpec:
    """Spec ``name`` at ``epsilon`` for top-``top_k``, with ``max_length`` the longest value's UTF-8 bytes."""
    longest = max((len(str(value).encode("utf-8", "surrogatepass")) for value in domain), default=1)
    if longest > PEM_MAX_LENGTH:
        raise InputError(
            f"{name}: the longest value is {longest} bytes of UTF-8, above the limit of {PEM_MAX_LENGTH}"
        )
    cls = HEAVY_HITTER_MECHANISMS[name]
    k = max(1, min(int(top_k), len(domain)))
    return cls(epsilon=epsilon, max_length=max(1, longest), top_k=k)  # type: ignore[call-arg]


def heavy_hitter_estimates(
    spec: HeavyHitterSpec, domain: Sequence[Any], counts: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, int]:
    """(frequency estimate per domain value, discovered flag per domain value, discoveries outside the domain).

    Each of the n = Σ counts users holds its value; the users are encoded in
    a random order by :func:`ldp.client.encode_batch` and aggregated by the
    spec's accumulator. A discovered string outside the domain is a false
    discovery with true frequency 0 (it is not placed on the domain).
    """
    from ldp.aggregator import make_aggregator
    from ldp.client import encode_batch

    texts = [str(value) for value in domain]
    order = np.repeat(np.arange(len(texts)), np.asarray(counts, dtype=np.int64))
    rng.shuffle(order)
    values = np.array(texts, dtype=object)[order]
    accumulator = make_aggregator(spec)
    accumulator.add_batch(encode_batch(spec, values, rng))
    table = accumulator.estimate()
    n = accumulator.n
    index = {text: i for i, text in enumerate(texts)}
    estimate = np.zeros(len(texts))
    found = np.zeros(len(texts), dtype=bool)
    outside = 0
    for value, count in zip(table["value"], table["estimate"], strict=True):
        i = index.get(value)
        if i is None:
            outside += 1
        else:
            estimate[i] = count / n
            found[i] = True
    return estimate, found, outside


def discovery_metrics(
    found: np.ndarray, outside: int, estimate: np.ndarray, truth: np.ndarray, k: int
) -> dict[str, float]:
    """Top-k precision and recall of the discovered set, and the mean relative error of the true top k.

    ``top_k_precision``: the share of the discovered values (including any
    outside the domain) whose true frequency reaches the k-th largest;
    ``top_k_recall``: the share of the true top k (ties by domain order)
    discovered; ``top_relative_error``: mean |f̂ − f|/f over the true top k
    (an undiscovered value estimates 0: error 1).
    """
    tru = np.asarray(truth, dtype=float)
    k = min(int(k), tru.size)
    order = np.argsort(-tru, kind="stable")
    top = order[:k]
    kth = tru[order[k - 1]]
    discovered = int(found.sum()) + int(outside)
    hits = int(np.count_nonzero(found & (tru >= kth)))
    positive = top[tru[top] > 0]
    rel = (
        float(np.mean(np.abs(estimate[positive] - tru[positive]) / tru[positive]))
        if positive.size
        else np.nan
    )
    return {
        "top_k_precision": hits / discovered if discovered else np.nan,
        "top_k_recall": float(found[top].mean()),
        "top_relative_error": rel,
    }
