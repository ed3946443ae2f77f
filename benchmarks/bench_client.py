"""Client encoding speed: one report on the device, and the vectorized batch path (issue 2 targets).

Single-report rows time ``make_encoder(spec).encode(value)`` in pure Python
with the CSPRNG (``os.urandom``/``secrets``) and exact probabilities, cycling
over a few domain values. The RAPPOR encoder has a persistent client state
in a temporary directory, so its permanent randomized response is the
keyed-PRF (memoized) path a real device runs. Batch rows time
:func:`ldp.client.encode_batch` with a seeded ``numpy.random.Generator``
(simulation/server path, not for devices), values as domain indices where
the spec allows it and as strings for Bloom-filter RAPPOR.

Each row is the median (and best) of ``--repeat`` timed runs
(time.perf_counter, wall clock, one thread). The machine is shared, so the
median is the figure compared with the target.

======================  ==============================================  ==================
row                     work                                            target
======================  ==============================================  ==================
encode RAPPOR           128 bits, 2 hashes, 64 cohorts, PRR + IRR       ≤ 30 µs/report
encode GRR              d = 16, ε = 1                                    ≤ 5 µs/report
encode OUE/SUE/OLH/...  d = 16 / 1,024, ε = 1 (for information)         -
encode_batch RAPPOR     128 bits, 2 hashes, 64 cohorts, 100 values      ≥ 2M reports/s
encode_batch GRR        d = 1,024, ε = 1                                 ≥ 10M reports/s
======================  ==============================================  ==================

Usage::

    python benchmarks/bench_client.py
    python benchmarks/bench_client.py --single 20000 --batch 2000000 --repeat 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import ldp
from ldp.client import ClientState, encode_batch, make_encoder


def timings(run: Callable[[], None], repeat: int) -> list[float]:
    """Wall-clock seconds of ``repeat`` calls of ``run`` (after one warm-up call)."""
    run()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        out.append(time.perf_counter() - start)
    return out


def single_row(name: str, encoder, values: list, count: int, repeat: int, target_us: float | None):
    cycle = (values * (count // len(values) + 1))[:count]
    encode = encoder.encode

    def run() -> None:
        for value in cycle:
            encode(value)

    secs = timings(run, repeat)
    med, best = statistics.median(secs) / count, min(secs) / count
    verdict = "-" if target_us is None else ("PASS" if med * 1e6 <= target_us else "MISS")
    target = "-" if target_us is None else f"≤ {target_us:g} µs"
    return (name, count, med * 1e6, best * 1e6, 1 / med, target, verdict)


def batch_row(name: str, spec, values, count: int, repeat: int, target_rate: float | None, **kwargs):
    rng = np.random.default_rng(12345)

    def run() -> None:
        encode_batch(spec, values, rng, **kwargs)

    secs = timings(run, repeat)
    med, best = statistics.median(secs) / count, min(secs) / count
    verdict = "-" if target_rate is None else ("PASS" if 1 / med >= target_rate else "MISS")
    target = "-" if target_rate is None else f"≥ {target_rate / 1e6:g}M/s"
    return (name, count, med * 1e6, best * 1e6, 1 / med, target, verdict)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=20_000, help="reports per single-encode timing run")
    parser.add_argument("--batch", type=int, default=1_000_000, help="reports per encode_batch timing run")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    small = [f"v{i}" for i in range(16)]
    large = [f"v{i}" for i in range(1024)]
    sample = small[:8]
    rows = []

    rappor = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")
    with tempfile.TemporaryDirectory() as tmp:
        state = ClientState.open(Path(tmp) / "client.json", rappor)  # persistent: file, mode 0600
        encoder = make_encoder(rappor, state=state)
        rows.append(
            single_row("encode RAPPOR (k=128, h=2, PRR+IRR)", encoder, sample, args.single, args.repeat, 30)
        )
    grr = ldp.GRR(domain=small, epsilon=1.0)
    rows.append(single_row("encode GRR (d=16)", make_encoder(grr), sample, args.single, args.repeat, 5))
    rows.append(
        single_row(
            "encode GRR (d=1024)",
            make_encoder(ldp.GRR(domain=large, epsilon=1.0)),
            sample,
            args.single,
            args.repeat,
            None,
        )
    )
    rows.append(
        single_row(
            "encode BinaryRR",
            make_encoder(ldp.BinaryRR(domain=("no", "yes"), epsilon=1.0)),
            ["no", "yes"],
            args.single,
            args.repeat,
            None,
        )
    )
    rows.append(
        single_row(
            "encode OUE (d=16)",
            make_encoder(ldp.OUE(domain=small, epsilon=1.0)),
            sample,
            args.single,
            args.repeat,
            None,
        )
    )
    rows.append(
        single_row(
            "encode OUE (d=1024)",
            make_encoder(ldp.OUE(domain=large, epsilon=1.0)),
            sample,
            args.single // 4,
            args.repeat,
            None,
        )
    )
    rows.append(
        single_row(
            "encode SUE (d=16)",
            make_encoder(ldp.SUE(domain=small, epsilon=1.0)),
            sample,
            args.single,
            args.repeat,
            None,
        )
    )
    rows.append(
        single_row(
            "encode OLH (d=1024)",
            make_encoder(ldp.OLH(domain=large, epsilon=1.0)),
            sample,
            args.single,
            args.repeat,
            None,
        )
    )
    rows.append(
        single_row(
            "encode BLH (d=1024)",
            make_encoder(ldp.BLH(domain=large, epsilon=1.0)),
            sample,
            args.single,
            args.repeat,
            None,
        )
    )

    n = args.batch
    rng = np.random.default_rng(0)
    candidates = [f"value-{i}" for i in range(100)]
    strings = [candidates[i] for i in rng.integers(0, 100, n)]
    rows.append(batch_row("encode_batch RAPPOR (k=128, h=2, m=64)", rappor, strings, n, args.repeat, 2e6))
    idx = rng.integers(0, 1024, n)
    grr_large = ldp.GRR(domain=large, epsilon=1.0)
    rows.append(
        batch_row("encode_batch GRR (d=1024, indices)", grr_large, idx, n, args.repeat, 10e6, indices=True)
    )
    words = [large[i] for i in idx]
    rows.append(batch_row("encode_batch GRR (d=1024, strings)", grr_large, words, n, args.repeat, None))
    rows.append(
        batch_row(
            "encode_batch OUE (d=1024, indices)",
            ldp.OUE(domain=large, epsilon=1.0),
            idx[: n // 10],
            n // 10,
            args.repeat,
            None,
            indices=True,
        )
    )
    rows.append(
        batch_row(
            "encode_batch OLH (d=1024, indices)",
            ldp.OLH(domain=large, epsilon=1.0),
            idx,
            n,
            args.repeat,
            None,
            indices=True,
        )
    )

    header = (
        f"{'encoder':<40} {'reports':>10} {'µs/report':>10} {'(best)':>8} {'reports/s':>13}"
        f"  {'target':<12} result"
    )
    print(header)
    print("-" * len(header))
    for name, count, med_us, best_us, rate, target, verdict in rows:
        print(
            f"{name:<40} {count:>10,} {med_us:>10.3f} {best_us:>8.3f} {rate:>13,.0f}  {target:<12} {verdict}"
        )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"(median of {args.repeat} runs after a warm-up; 'best' is the fastest run; "
        f"load average {load} on {os.cpu_count()} CPUs: a load above the CPU count slows every row)"
    )


if __name__ == "__main__":
    main()
