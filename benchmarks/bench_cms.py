"""Encode and decode speed of CMS and HCMS, beside OUE measured in the same run.

n users (default 1,000,000) over d = 1,024 values at ε = 2, sketches at their
defaults (k = m = 1,024). Each row times, with time.perf_counter (wall clock,
one thread, best of ``--repeat``):

=========  =====================================================================
encode     ``secure_encode_batch`` (every coin from the OS CSPRNG), in chunks of
           ``--chunk`` users given as domain indices
decode     a fresh accumulator's ``add_batch`` of the encoded chunks, then
           ``estimate()`` (the support counts: CMS's gather, HCMS's FWHT)
=========  =====================================================================

The reference is OUE (d = 1,024 bits per report, same n, same run); machines
differ and shared ones are noisy, so read the ratio to it.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_cms.py
    python benchmarks/bench_cms.py --users 200000 --repeat 3
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import ldp
from ldp.aggregator import make_aggregator
from ldp.client import secure_encode_batch


def best(func: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def measure(spec, users: np.ndarray, chunk: int, repeat: int) -> tuple[float, float]:
    """(encode seconds, decode seconds) for ``users`` (domain indices)."""

    def encode():
        return [
            secure_encode_batch(spec, users[i : i + chunk], indices=True) for i in range(0, users.size, chunk)
        ]

    encode_seconds, batches = best(encode, repeat)

    def decode():
        acc = make_aggregator(spec)
        for batch in batches:
            acc.add_batch(batch)
        return acc.estimate()

    decode_seconds, _ = best(decode, repeat)
    return encode_seconds, decode_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--domain-size", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=2.0)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    d, n = args.domain_size, args.users
    domain = [f"v{i}" for i in range(d)]
    rng = np.random.default_rng(0)
    users = rng.zipf(1.1, size=n) % d  # which values hardly matters to the speed
    specs = {
        "oue (reference)": ldp.OUE(domain=domain, epsilon=args.epsilon),
        "cms": ldp.CMS(domain=domain, epsilon=args.epsilon),
        "hcms": ldp.HCMS(domain=domain, epsilon=args.epsilon),
    }
    for spec in specs.values():  # hash tables built once per spec, outside the timing
        if isinstance(spec, ldp.specs.sketch.SketchSpec):
            spec.domain_positions  # noqa: B018
    results = {name: measure(spec, users, args.chunk, args.repeat) for name, spec in specs.items()}
    ref_encode, ref_decode = results["oue (reference)"]
    print(
        f"n = {n:,} users, d = {d:,}, epsilon = {args.epsilon:g}, sketches k = m = 1,024, best of {args.repeat}"
    )
    print(
        f"{'mechanism':<17}{'bits':>6}{'encode s':>10}{'k rep/s':>10}{'vs OUE':>8}{'decode s':>10}{'k rep/s':>10}{'vs OUE':>8}"
    )
    for name, (enc, dec) in results.items():
        bits = specs[name].report_bits
        print(
            f"{name:<17}{bits:>6}{enc:>10.3f}{n / enc / 1e3:>10.0f}{enc / ref_encode:>8.2f}"
            f"{dec:>10.3f}{n / dec / 1e3:>10.0f}{dec / ref_decode:>8.2f}"
        )
    print("vs OUE: time relative to OUE in this run (below 1: faster)")


if __name__ == "__main__":
    main()
