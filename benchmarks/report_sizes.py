"""Bits per report and Var* of every registered frequency oracle, from the specs themselves.

The table the README's "Report size and accuracy" section quotes: for each
ε and domain size d, each frequency oracle's report size in bits
(``spec.report_bits``: the report schema's payload, docs/report-format.md#size)
and its Var* (n times the variance of one frequency estimate at small
frequency, from the spec's exact calibrated probabilities), with the ratio
of Var* to the smallest at that (ε, d) and the oracle ``auto`` picks with
and without a size limit. The registry is the list, so a new oracle appears
here by being registered.

Usage::

    python benchmarks/report_sizes.py
    python benchmarks/report_sizes.py --epsilon 0.5 1 2 4 --domain-size 16 1024 --max-report-bits 16
"""

from __future__ import annotations

import argparse

from ldp.errors import ParameterError
from ldp.specs import FREQUENCY_MECHANISMS, best_frequency_mechanism


def rows(epsilon: float, domain_size: int) -> list[tuple[str, int, float]]:
    """(mechanism, bits per report, Var*) of every oracle that accepts (ε, d)."""
    out = []
    for name, cls in FREQUENCY_MECHANISMS.items():
        if name == "binary-rr" and domain_size != 2:
            continue
        try:
            spec = cls(domain=range(domain_size), epsilon=epsilon)
        except ParameterError:  # outside the oracle's limits
            continue
        out.append((name, spec.report_bits, spec.variance_star))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--domain-size", type=int, nargs="+", default=[1024])
    parser.add_argument("--max-report-bits", type=int, default=16)
    args = parser.parse_args()
    for d in args.domain_size:
        for epsilon in args.epsilon:
            table = rows(epsilon, d)
            best = min(var for _, _, var in table)
            auto = best_frequency_mechanism(epsilon, d)
            try:
                limited = best_frequency_mechanism(epsilon, d, max_report_bits=args.max_report_bits)
            except ParameterError:
                limited = "none fits"
            print(
                f"\nepsilon = {epsilon:g}, d = {d:,}: auto = {auto}, auto under {args.max_report_bits} bits = {limited}"
            )
            print(f"{'mechanism':<12} {'bits/report':>11} {'Var*':>10} {'Var*/best':>9}")
            for name, bits, var in sorted(table, key=lambda row: row[1]):
                print(f"{name:<12} {bits:>11,} {var:>10.4g} {var / best:>9.3f}")


if __name__ == "__main__":
    main()
