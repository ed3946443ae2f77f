"""Randomness economy of every registered mechanism's single-report encoder (the device's client).

For each mechanism in the registry the benchmark builds the spec of
``bench_entropy.py`` (d = ``--domain``, ε = ``--epsilon``), encodes
``--reports`` values one report at a time with :func:`ldp.client.make_encoder`
(the encoder an app embeds; RAPPOR with one fresh client state) and prints:

- ``reports/s``: the encoder's rate (median of ``--repeat`` runs);
- ``B/report``: the CSPRNG bytes it uses per report: the bits the process's
  bit reader (:func:`ldp.client.report_bits.csprng_bits`) hands out, ÷ 8;
- ``H B/report``: the entropy the mechanism needs per report
  (``bench_entropy.entropy_bits``; ``--`` where no exact model is written);
- ``bytes ÷ H``: the first ratio (target ≤ 2);
- ``time ÷ urandom``: the encoder's time over the time of one
  ``os.urandom(⌈B/report⌉)`` call per report, measured interleaved in the
  same run: what a client that read exactly its bytes, one system call a
  report, would pay for randomness alone.

Usage::

    python benchmarks/bench_report_entropy.py
    python benchmarks/bench_report_entropy.py --reports 2000 --only grr,binary-rr,oue,ss,rappor
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
from typing import Any

from bench_entropy import build_spec, entropy_bits
from harness import timings
from report_inputs import report_inputs

from ldp.client import make_encoder
from ldp.client.report_bits import csprng_bits
from ldp.registry import MechanismDeclaration, declarations


def measure(decl: MechanismDeclaration, args: argparse.Namespace) -> tuple[Any, ...]:
    spec = build_spec(decl, args.domain, args.epsilon)
    encoder = make_encoder(spec)
    values = report_inputs(spec, args.reports)

    def encode_all() -> None:
        for value in values:
            encoder.encode(value)

    reader = csprng_bits()
    encode_all()  # warm: tables built, the run counted
    before = reader.bits_read
    encode_all()
    per_report = (reader.bits_read - before) / 8 / args.reports
    chunk = max(math.ceil(per_report), 1)

    def urandom_all() -> None:
        for _ in range(args.reports):
            os.urandom(chunk)

    encode_secs, urandom_secs = [], []
    for _ in range(args.repeat):  # interleaved: a change of load hits both alike
        encode_secs += timings(encode_all, 1, warm_up=False)
        urandom_secs += timings(urandom_all, 1, warm_up=False)
    encode, urandom = statistics.median(encode_secs), statistics.median(urandom_secs)
    entropy = entropy_bits(spec)
    entropy_bytes = None if entropy is None else entropy / 8
    return (
        decl.name,
        args.reports / encode,
        per_report,
        entropy_bytes,
        None if not entropy_bytes else per_report / entropy_bytes,
        encode / urandom,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--domain", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--only", default="", help="comma-separated mechanism names")
    args = parser.parse_args()
    wanted = {name for name in args.only.split(",") if name}
    print(f"single-report encoders, d = {args.domain}, eps = {args.epsilon}, {args.reports} reports")
    header = ("mechanism", "reports/s", "B/report", "H B/report", "bytes ÷ H", "time ÷ urandom")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for decl in declarations():
        if wanted and decl.name not in wanted:
            continue
        try:
            row = measure(decl, args)
        except Exception as error:  # a mechanism the generic spec cannot build: say so, go on
            print(f"| {decl.name} | skipped: {error} |")
            continue
        name, rate, per_report, entropy, ratio, vs_urandom = row
        cells = [
            name,
            f"{rate:,.0f}",
            f"{per_report:.2f}",
            "--" if entropy is None else f"{entropy:.2f}",
            "--" if ratio is None else f"{ratio:.2f}",
            f"{vs_urandom:.1f}",
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
