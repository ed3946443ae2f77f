"""Speed of RAPPOR decoding against the number of candidates (issue 15: ≤ 5 s for every count from 1k to 100k).

Setup: 128 bits × 64 cohorts (h = 2, p = 0.25, q = 0.75, f = 0.5, MurmurHash3),
1,000,000 reports over ``--true`` Zipf-distributed true values, drawn from
their exact distribution (as benchmarks/rappor_regtest.py); the candidate
list holds those values plus bogus ones up to each count.

Columns, per candidate count
    design s     building the design matrix from scratch (cache cleared)
    decode s     a decode that builds it (cold: what a first decode costs)
    warm s       a decode of the same list again (design matrix cached)
    ref s        the same-run reference: one dense least squares
                 (``numpy.linalg.lstsq``) of a fixed 8192 × 400 matrix, the
                 shape of the decode's largest dense refit, timed beside each row
    x ref        decode s / ref s
    selected     candidates in the refit; true det / false det: detected
                 true and bogus candidates (``--correction``, α = 0.05)
    dense s, dense true/false
                 for counts up to ``--dense-up-to`` (default 1000): the
                 decode with every candidate in the refit (``screen=False``,
                 what the library did below 0.8 × the informative bits
                 before issue 15) and its detections, for comparison

``--hash md5`` decodes a spec with Google's MD5 Bloom hashing instead
(issue 28: a first decode of 100k MD5 candidates ≤ 5 s); ``--hash
md5,mmh3`` runs both in turn and prints, per count, the first decode's wall
and CPU seconds under MD5 beside those under MurmurHash3 in the same run.

Run with ``OPENBLAS_NUM_THREADS=1`` (one BLAS thread) for figures comparable
across machines. Works on older versions of the library too (no cache to
clear there, and no warm column).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/rappor_decode_speed.py [--candidates 1000,2000,...] [--true 200]
    OPENBLAS_NUM_THREADS=1 python benchmarks/rappor_decode_speed.py --hash md5,mmh3 --candidates 100000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ldp
from ldp.aggregator.rappor.decode import decode_result, design_matrix

try:
    from ldp.aggregator.bloom_design import DESIGN_CACHE
except ImportError:  # a version without the cache
    DESIGN_CACHE = None

COUNTS = "1000,2000,5000,10000,20000,50000,100000"


def _clear() -> None:
    if DESIGN_CACHE is not None:
        DESIGN_CACHE.clear()


def _reference(rng: np.random.Generator) -> float:
    """Seconds of one dense least squares of a fixed 8192 × 400 matrix (best of 3)."""
    a = rng.random((8192, 400))
    b = rng.random(8192)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        np.linalg.lstsq(a, b, rcond=None)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", default=COUNTS, help="comma-separated candidate counts")
    parser.add_argument("--true", type=int, default=200)
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--correction", default="bonferroni", choices=["bonferroni", "bh", "none"])
    parser.add_argument(
        "--dense-up-to", type=int, default=1000, help="also time screen=False up to this count"
    )
    parser.add_argument("--hash", default="mmh3", help="comma-separated Bloom hashings: mmh3, md5")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.candidates.split(",")]
    firsts = {name: _run(args, counts, name) for name in args.hash.split(",")}
    if len(firsts) > 1:
        print("first decode (wall s / CPU s) per hashing, same run")
        print(
            f"{'candidates':>10} "
            + " ".join(f"{name:>15}" for name in firsts)
            + "   CPU ratio first / each other"
        )
        for index, count in enumerate(counts):
            cells = [firsts[name][index] for name in firsts]
            ratios = " ".join(f"{cells[0][1] / cpu:.2f}" for _, cpu in cells[1:])
            print(
                f"{count:>10} "
                + " ".join(f"{wall:>7.2f}/{cpu:<7.2f}" for wall, cpu in cells)
                + f"   {ratios}"
            )


def _run(args: argparse.Namespace, counts: list[int], hash_name: str) -> list[tuple[float, float]]:
    """Print the table for one Bloom hashing; return each count's first decode (wall s, CPU s)."""
    firsts = []

    spec = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, p="0.25", q="0.75", f="0.5", hash=hash_name)
    m, k = spec.num_cohorts, spec.num_bits
    rng = np.random.default_rng(args.seed)
    everything = [f"value-{i}" for i in range(max(counts))]
    pdf = 1.0 / np.arange(1, args.true + 1)
    partition = rng.multinomial(args.reports, pdf / pdf.sum())
    alloc = rng.multinomial(partition, np.full(m, 1.0 / m))
    cohort_counts = alloc.sum(axis=0)
    x_true = design_matrix(spec, everything[: args.true])
    ones = np.asarray(x_true.multiply(np.repeat(alloc.T, k, axis=0)).sum(axis=1)).ravel().astype(np.int64)
    p_star, q_star = float(spec.prob_one_given_zero), float(spec.prob_one_given_one)
    bits = rng.binomial(ones, q_star) + rng.binomial(np.repeat(cohort_counts, k) - ones, p_star)
    bit_counts = bits.reshape(m, k)

    print(
        f"RAPPOR decode: {k} bits x {m} cohorts, {args.reports:,} reports, {args.true} true values (Zipf 1), "
        f"{hash_name} hashing"
    )
    print(
        f"{'candidates':>10} {'design s':>9} {'decode s':>9} {'warm s':>7} {'ref s':>7} {'x ref':>7} "
        f"{'selected':>8} {'true det':>8} {'false det':>9} {'dense s':>8} {'dense true/false':>16}"
    )
    for count in counts:
        candidates = everything[:count]
        _clear()
        start = time.perf_counter()
        design_matrix(spec, candidates)
        build = time.perf_counter() - start
        _clear()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = decode_result(spec, cohort_counts, bit_counts, candidates, correction=args.correction)
        cold = time.perf_counter() - start
        firsts.append((cold, time.process_time() - start_cpu))
        warm = np.nan
        if DESIGN_CACHE is not None:
            start = time.perf_counter()
            decode_result(spec, cohort_counts, bit_counts, candidates, correction=args.correction)
            warm = time.perf_counter() - start
        dense_text = ""
        if count <= args.dense_up_to:
            start = time.perf_counter()
            dense = decode_result(
                spec, cohort_counts, bit_counts, candidates, correction=args.correction, screen=False
            )
            seconds = time.perf_counter() - start
            flags = dense.table["detected"].to_numpy()
            dense_text = (
                f"{seconds:>8.2f} {int(flags[: args.true].sum()):>8}/{int(flags[args.true :].sum()):<7}"
            )
        reference = _reference(rng)
        detected = result.table["detected"].to_numpy()
        print(
            f"{count:>10} {build:>9.2f} {cold:>9.2f} {warm:>7.2f} {reference:>7.3f} {cold / reference:>7.1f} "
            f"{result.num_selected:>8} {int(detected[: args.true].sum()):>8} {int(detected[args.true :].sum()):>9} "
            f"{dense_text}",
            flush=True,
        )
    return firsts


if __name__ == "__main__":
    main()
