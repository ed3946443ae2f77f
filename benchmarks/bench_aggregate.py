"""Accumulation speed of the in-memory aggregators, each beside a reference measured in the same run.

Reports are random but valid and already in memory as a ReportBatch (packed
bytes for unary encoding and RAPPOR), so this measures the accumulators
alone: no parsing, no encoding. Each figure is the best of ``--repeat`` timed
runs (time.perf_counter, wall clock, one thread); machines differ and shared
ones are noisy, so read the ratio to the reference of the same run.

===========================  ==================================================  ===============================
row                          work                                                reference (same run)
===========================  ==================================================  ===============================
OUE d                        ``UnaryAccumulator.add_batch``, ns per report-bit   ``np.unpackbits(packed,
                             (d = 1,024, 16,384, 65,536, 262,144)                axis=1).sum(axis=0)``
RAPPOR                       ``RapporAccumulator.add_batch``, 128 bits,          the same unpackbits + sum (all
                             64 cohorts, M reports/s                             cohorts together), and
                                                                                 ``packed.sum()`` (one memory
                                                                                 pass over the same bytes)
small batches                one ``add_batch`` of ``--small`` reports (the       the same unpackbits + sum
                             collector's case), µs per call
GRR, OLH decode              bincount of values; OLH support counts              -
OUE 65,536 × 1M memory       a child process adds 1M reports of d = 65,536 in    the packed input alone
                             batches of ``--stream-rows`` (one batch reused);    (rows × d / 8 bytes)
                             peak RSS while adding (``resource.getrusage``)
===========================  ==================================================  ===============================

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_aggregate.py
    python benchmarks/bench_aggregate.py --bits 67108864 --reports 1000000 --skip-memory
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

import ldp
from ldp.aggregator import make_aggregator
from ldp.batch import ReportBatch
from ldp.hashing import LH_SEED_SPACE

OUE_DOMAINS = (1024, 16_384, 65_536, 262_144)


def best(func: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def add_batch_time(spec, batch: ReportBatch, repeat: int, threads: int | None = 1) -> float:
    def run():
        acc = make_aggregator(spec, threads=threads)
        acc.add_batch(batch)
        if hasattr(acc, "support_counts"):
            acc.support_counts  # noqa: B018 - includes any deferred work

    return best(run, repeat)


def unpack_sum(packed: np.ndarray) -> Callable[[], object]:
    return lambda: np.unpackbits(packed, axis=1).sum(axis=0)


def domain(d: int) -> list[str]:
    return [f"v{i}" for i in range(d)]


def oue_rows(rng, total_bits: int, repeat: int) -> list[tuple[str, float, float]]:
    rows = []
    for d in OUE_DOMAINS:
        n = max(256, total_bits // d)
        spec = ldp.OUE(domain=domain(d), epsilon=1.0)
        bits = rng.integers(0, 256, (n, d // 8), dtype=np.uint8)
        batch = ReportBatch(spec=spec.fingerprint, bits=bits)
        ours = add_batch_time(spec, batch, repeat) / (n * d) * 1e9
        ref = best(unpack_sum(bits), repeat) / (n * d) * 1e9
        rows.append((f"OUE d={d:,} (n={n:,})", ours, ref))
    return rows


def rappor_rows(rng, n: int, repeat: int) -> tuple[float, float, float]:
    spec = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")
    bits = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    batch = ReportBatch(spec=spec.fingerprint, bits=bits, cohorts=rng.integers(0, 64, n))
    ours = n / add_batch_time(spec, batch, repeat) / 1e6
    unpack = n / best(unpack_sum(bits), repeat) / 1e6
    memory = n / best(bits.sum, repeat) / 1e6
    return ours, unpack, memory


def small_batch_rows(rng, size: int, repeat: int) -> list[tuple[str, float, float]]:
    rappor = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")
    oue = ldp.OUE(domain=domain(1024), epsilon=1.0)
    rows = []
    for name, spec, width in (("RAPPOR 128×64", rappor, 16), ("OUE d=1,024", oue, 128)):
        bits = rng.integers(0, 256, (size, width), dtype=np.uint8)
        cohorts = rng.integers(0, 64, size) if spec is rappor else None
        batch = ReportBatch(spec=spec.fingerprint, bits=bits, cohorts=cohorts)
        ours = add_batch_time(spec, batch, repeat * 20) * 1e6
        ref = best(unpack_sum(bits), repeat * 20) * 1e6
        rows.append((f"{name}, {size} reports", ours, ref))
    return rows


def stream_oue(n: int, d: int, rows: int) -> None:
    """Child process: add n reports of d bits in batches of ``rows`` (one random batch reused); print figures."""
    spec = ldp.OUE(domain=domain(d), epsilon=1.0)
    bits = np.frombuffer(np.random.default_rng(0).bytes(rows * d // 8), dtype=np.uint8).reshape(rows, d // 8)
    batch = ReportBatch(spec=spec.fingerprint, bits=bits)
    acc = make_aggregator(spec)
    try:  # Linux: reset the peak RSS to the current RSS, so the peak below is that of adding alone
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass  # the peak below then also covers start-up
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    for done in range(0, n, rows):
        acc.add_batch(
            batch if done + rows <= n else ReportBatch(spec=spec.fingerprint, bits=bits[: n - done])
        )
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert acc.n == n
    print(seconds, base, peak)


def memory_row(n: int, d: int, rows: int) -> tuple[float, float, float, float]:
    """(seconds, RSS before adding, peak RSS while adding, batch size), sizes in MB."""
    out = subprocess.run(
        [sys.executable, __file__, "--stream-child", str(n), str(d), str(rows)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    seconds, (base, peak) = float(out[0]), (int(kb) / 1024 for kb in out[1:])
    return seconds, base, peak, rows * d / 8 / 2**20


def other_rows(rng, n: int, olh_n: int, repeat: int) -> list[tuple[str, int, float]]:
    d = 1024
    grr = ldp.GRR(domain=domain(d), epsilon=4.0)
    batch = ReportBatch(spec=grr.fingerprint, values=rng.integers(0, d, n))
    rows = [(f"GRR (d={d})", n, add_batch_time(grr, batch, repeat))]
    olh = ldp.OLH(domain=domain(d), epsilon=1.0)
    seeds = rng.integers(0, LH_SEED_SPACE, olh_n, dtype=np.int64).astype(np.uint64)
    batch = ReportBatch(spec=olh.fingerprint, seeds=seeds, values=rng.integers(0, olh.g, olh_n))
    rows.append((f"OLH decode (d={d}, g={olh.g}, 1 thread)", olh_n, add_batch_time(olh, batch, 1)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, default=1 << 27, help="report-bits per OUE run (n = bits / d)")
    parser.add_argument("--reports", type=int, default=2_000_000, help="RAPPOR and GRR reports")
    parser.add_argument("--olh-reports", type=int, default=200_000)
    parser.add_argument("--small", type=int, default=100, help="reports of the small-batch rows")
    parser.add_argument("--users", type=int, default=1_000_000, help="reports of the memory row")
    parser.add_argument("--stream-rows", type=int, default=4096, help="reports per batch of the memory row")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--stream-child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stream_child:
        stream_oue(*args.stream_child)
        return

    rng = np.random.default_rng(0)
    header = f"{'OUE add_batch':<34} {'ns/report-bit':>14} {'unpackbits+sum':>15} {'ratio':>7}"
    print(header + "\n" + "-" * len(header))
    for name, ours, ref in oue_rows(rng, args.bits, args.repeat):
        print(f"{name:<34} {ours:>14.3f} {ref:>15.3f} {ours / ref:>7.2f}")

    ours, unpack, memory = rappor_rows(rng, args.reports, args.repeat)
    header = f"{'RAPPOR 128 bits × 64 cohorts':<34} {'M reports/s':>14} {'unpackbits+sum':>15} {'ratio':>7}"
    print("\n" + header + "\n" + "-" * len(header))
    print(f"{f'add_batch (n={args.reports:,})':<34} {ours:>14.1f} {unpack:>15.1f} {ours / unpack:>7.2f}")
    print(f"{'packed.sum() (one memory pass)':<34} {memory:>14.1f} {'':>15} {ours / memory:>7.3f}")

    header = f"{'one small add_batch':<34} {'µs per call':>14} {'unpackbits+sum':>15} {'ratio':>7}"
    print("\n" + header + "\n" + "-" * len(header))
    for name, ours, ref in small_batch_rows(rng, args.small, args.repeat):
        print(f"{name:<34} {ours:>14.1f} {ref:>15.1f} {ours / ref:>7.2f}")

    header = f"{'other aggregators':<34} {'reports':>14} {'seconds':>15} {'M reports/s':>12}"
    print("\n" + header + "\n" + "-" * len(header))
    for name, count, secs in other_rows(rng, args.reports, args.olh_reports, args.repeat):
        print(f"{name:<34} {count:>14,} {secs:>15.3f} {count / secs / 1e6:>12.2f}")

    if not args.skip_memory:
        d = 65_536
        seconds, base, peak, batch_mb = memory_row(args.users, d, args.stream_rows)
        bits = args.users * d
        print(f"\nOUE d={d:,} × {args.users:,} reports in batches of {args.stream_rows:,} (child process)")
        print(f"  time {seconds:.1f} s ({seconds / bits * 1e9:.3f} ns/report-bit)")
        print(
            f"  RSS before adding {base:.0f} MB (interpreter, libraries, spec, one {batch_mb:.0f} MB batch),"
        )
        print(f"  peak RSS while adding {peak:.0f} MB: adding took {peak - base:.0f} MB. All the packed")
        print(f"  reports are {bits / 8 / 2**30:.1f} GB, unpacked {bits / 2**30:.0f} GB")


if __name__ == "__main__":
    main()
