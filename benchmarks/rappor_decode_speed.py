"""Speed of RAPPOR decoding with many candidates (issue 3 target: 10,000 candidates, 128 bits × 64 cohorts, ≤ 10 s).

Counts are drawn from their exact distribution (see benchmarks/rappor_regtest.py)
for 1,000,000 reports over ``--true`` Zipf-distributed true values; the
candidate list holds those values plus bogus ones up to ``--candidates``.
Prints the time to build the design matrix and the total decode time
(which includes building it), with the detection counts.

Usage::

    python benchmarks/rappor_decode_speed.py [--candidates 10000] [--true 200] [--seed 7]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ldp
from ldp.aggregator.rappor_decode import decode_result, design_matrix


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--true", type=int, default=200)
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    spec = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, p="0.25", q="0.75", f="0.5")
    m, k = spec.num_cohorts, spec.num_bits
    rng = np.random.default_rng(args.seed)
    candidates = [f"value-{i}" for i in range(args.candidates)]
    pdf = 1.0 / np.arange(1, args.true + 1)
    partition = rng.multinomial(args.reports, pdf / pdf.sum())
    alloc = rng.multinomial(partition, np.full(m, 1.0 / m))
    cohort_counts = alloc.sum(axis=0)
    x_true = design_matrix(spec, candidates[: args.true])
    ones = np.asarray(x_true.multiply(np.repeat(alloc.T, k, axis=0)).sum(axis=1)).ravel().astype(np.int64)
    p_star, q_star = float(spec.prob_one_given_zero), float(spec.prob_one_given_one)
    bits = rng.binomial(ones, q_star) + rng.binomial(np.repeat(cohort_counts, k) - ones, p_star)
    bit_counts = bits.reshape(m, k)

    start = time.perf_counter()
    design_matrix(spec, candidates)
    build = time.perf_counter() - start
    start = time.perf_counter()
    result = decode_result(spec, cohort_counts, bit_counts, candidates)
    total = time.perf_counter() - start

    detected = result.table["detected"].to_numpy()
    true_hits = int(detected[: args.true].sum())
    false_hits = int(detected[args.true :].sum())
    print(
        f"{'candidates':>10} {'bits':>6} {'cohorts':>7} {'reports':>10} {'design s':>9} {'decode s':>9} "
        f"{'selected':>8} {'true det':>8} {'false det':>9} {'unexplained':>11}"
    )
    print(
        f"{args.candidates:>10} {k:>6} {m:>7} {args.reports:>10,} {build:>9.2f} {total:>9.2f} "
        f"{result.num_selected:>8} {true_hits:>8} {false_hits:>9} {result.unexplained_mass:>11.3f}"
    )


if __name__ == "__main__":
    main()
