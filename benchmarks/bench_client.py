"""Client encoding speed: one report on the device, the secure batch path, and ``ldp encode``'s memory.

Single-report rows time ``make_encoder(spec).encode(value)`` in pure Python
with the CSPRNG (``os.urandom``/``secrets``) and exact probabilities, cycling
over a few domain values. The RAPPOR encoder has a persistent client state
in a temporary directory, so its permanent randomized response is the
keyed-PRF (memoized) path a real device runs.

Batch rows time :func:`ldp.client.encode_batch` twice on the same values:
with :class:`ldp.client.SystemRandomSource` (the secure path: every coin from
large ``os.urandom`` blocks, what ``ldp encode`` runs) and with a seeded
``numpy.random.Generator`` (the insecure simulation path). Beside them: the
ratio of the two, the bytes of randomness the secure path reads per report,
and the same-run ``os.urandom`` throughput, with the share of the secure
path's time that reading those bytes alone takes (100 % would mean the
encoder is bound by the OS CSPRNG). Values are domain indices where the spec
allows it and strings for Bloom-filter RAPPOR. Run it on one core:
``OPENBLAS_NUM_THREADS=1`` (set here for the process before NumPy loads).

The memory rows run ``ldp encode`` (secure path, Parquet output) on OUE
users in a child process and read its peak resident set size from
``os.wait4`` (the child's own ``ru_maxrss``), beside the same-run peak of a
run on 1,000 users (the fixed cost: imports and one small chunk) and a run
on a tenth of the users (a bounded encoder peaks the same at both sizes).

The new-clients rows run ``ldp encode --state DIR`` (RAPPOR) on
``--new-clients`` rows, each a client id not seen before, in a child process,
and print new clients per second of wall time and the child's CPU seconds,
beside two same-run references: the file system's own cost of as many new
files (``os.open`` with ``O_EXCL``, a state's bytes, ``close``, then one
``syncfs``: no client can be created durably for less, one file per client),
and opening the clients one at a time with
:meth:`ldp.client.ClientState.open` (one exclusive, fsync'ed file and one
directory fsync each: what ``ldp encode`` did before issue 28). Median of 3
runs, each in fresh directories under ``--state-root`` (default: the
system's temporary directory; give a directory on the disk the states will
live on, since a memory-backed ``/tmp`` makes every fsync free), all kept
until the last run ends.

Each row is the median (and best) of ``--repeat`` timed runs
(time.perf_counter, wall clock, one thread). The machine is shared, so the
median is the figure compared with the target.

======================  ==============================================  ==================
row                     work                                            target
======================  ==============================================  ==================
encode RAPPOR           128 bits, 2 hashes, 64 cohorts, PRR + IRR       ≤ 30 µs/report
encode GRR              d = 16, ε = 1                                    ≤ 5 µs/report
encode OUE/SUE/OLH/...  d = 16 / 1,024, ε = 1 (for information)         -
secure batch RAPPOR     128 bits, 2 hashes, 64 cohorts, 100 values      ≥ 1M reports/s
secure batch GRR        d = 1,024, ε = 1                                 ≥ 10M reports/s
ldp encode --state      RAPPOR, 2,000 new clients                        ≥ 2,000 clients/s
ldp encode memory       OUE, d = 1,024, 10 M users, chunked              bounded (tens of MB
                                                                         above the imports)
======================  ==============================================  ==================

Usage::

    python benchmarks/bench_client.py
    python benchmarks/bench_client.py --single 20000 --batch 2000000 --repeat 7
    python benchmarks/bench_client.py --memory-users 0      # skip the ldp encode memory rows
    python benchmarks/bench_client.py --single 0 --batch 0 --memory-users 0 --state-root /work/tmp  # new clients only
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from harness import timings

import ldp
from ldp.client import ClientState, CountingSource, SystemRandomSource, encode_batch, make_encoder


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
    """Secure (CSPRNG) and seeded throughput of one batch, and the os.urandom reference, in one run."""
    secure = SystemRandomSource()
    rng = np.random.default_rng(12345)
    counting = CountingSource()
    encode_batch(spec, values, counting, **kwargs)
    per_report = counting.bytes / count  # randomness the secure path reads per report
    secure_secs, seeded_secs, urandom_secs = [], [], []
    nbytes = max(8, int(per_report * count))
    for _ in range(repeat):  # interleaved, so a load change hits all three alike
        secure_secs += timings(lambda: encode_batch(spec, values, secure, **kwargs), 1)
        seeded_secs += timings(lambda: encode_batch(spec, values, rng, **kwargs), 1)
        urandom_secs += timings(lambda: os.urandom(nbytes), 1)
    med = statistics.median(secure_secs)
    seeded = statistics.median(seeded_secs)
    urandom_rate = nbytes / statistics.median(urandom_secs)
    verdict = "-" if target_rate is None else ("PASS" if count / med >= target_rate else "MISS")
    target = "-" if target_rate is None else f"≥ {target_rate / 1e6:g}M/s"
    return (
        name,
        count,
        count / med,
        count / seeded,
        seeded / med,
        per_report,
        urandom_rate,
        statistics.median(urandom_secs) / med,
        target,
        verdict,
    )


def _peak_rss_mb(command: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of a child process, from its own rusage (os.wait4)."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(
            f"{' '.join(command)} failed: {child.stderr.read().decode() if child.stderr else ''}"
        )
    return usage.ru_maxrss / 1024, seconds  # ru_maxrss is in KiB on Linux


def memory_rows(users: int) -> list[tuple[str, int, float, float]]:
    """Peak RSS of ``ldp encode`` (secure, chunked) on 1,000 OUE users (the reference), users/10 and users."""
    rows = []
    spec = ldp.OUE(domain=[f"v{i}" for i in range(1024)], epsilon=1.0)
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(spec.to_json())
        for n in (1_000, users // 10, users):  # 1,000 users: the fixed cost (imports, one small chunk)
            values = Path(tmp) / f"values-{n}.txt"
            codes = np.random.default_rng(n).integers(0, 1024, n)
            with values.open("w") as out:
                for start in range(0, n, 1 << 20):
                    out.write("".join(f"v{c}\n" for c in codes[start : start + (1 << 20)].tolist()))
            output = Path(tmp) / "reports.parquet"
            command = [
                sys.executable,
                "-m",
                "ldp",
                "encode",
                "--spec",
                str(spec_path),
                str(values),
                "-o",
                str(output),
            ]
            mb, secs = _peak_rss_mb(command)
            name = "reference: 1,000 users" if n == 1_000 else "OUE d=1024 (secure, chunked)"
            rows.append((name, n, mb, secs))
            values.unlink()
            output.unlink()
    return rows


def _child_run(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of ``command`` in a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime


def new_client_rows(count: int, root: str | None, spec) -> list[tuple[str, float, float]]:
    """New RAPPOR clients: the file system's own cost (reference), one at a time, in bulk, and ``ldp encode``.

    Returns (name, median wall s, median CPU s) per row; medians of 3 runs, each in fresh directories.
    Every run's files are kept until the last run ends: deleting thousands of files just before the next run
    creates its own would make that run's file creation slower (ext4 without a journal scans past inodes
    freed in the last seconds before reusing one), a cost no real client pays.
    """
    names = (
        "plain files + one syncfs (ref.)",
        "ClientState.open, one at a time",
        "ClientState.open_many",
        "ldp encode --state (whole run)",
        "ldp encode, no --state (same rows)",
    )
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    works = (_plain_files, _open_each, ClientState.open_many)
    with tempfile.TemporaryDirectory(dir=root) as top:
        for run in range(3):
            folder = Path(top) / f"run-{run}"
            folder.mkdir()
            for index, (name, work) in enumerate(zip(names, works)):
                paths = [folder / f"dir-{index}" / f"{run}-{i}.json" for i in range(count)]
                start, cpu = time.perf_counter(), time.process_time()
                work(paths, spec)
                walls[name].append(time.perf_counter() - start)
                cpus[name].append(time.process_time() - cpu)
            (folder / "spec.json").write_text(spec.to_json())
            users = folder / "users.csv"
            users.write_text(
                "client_id,value\n" + "".join(f"user-{run}-{i},v{i % 16}\n" for i in range(count))
            )
            command = [sys.executable, "-m", "ldp", "encode", "--spec", str(folder / "spec.json"), str(users)]
            command += ["-o", str(folder / "reports.jsonl")]
            for name, extra in zip(names[3:], (["--state", str(folder / "states")], [])):
                wall, cpu_s = _child_run(command + extra)
                walls[name].append(wall)
                cpus[name].append(cpu_s)
    return [(name, statistics.median(walls[name]), statistics.median(cpus[name])) for name in names]


def _plain_files(paths: list[Path], spec) -> None:
    """The reference: as many new files of a state's size (os.open O_EXCL, write, close), then one syncfs."""
    import ctypes

    directory = paths[0].parent
    directory.mkdir(mode=0o700)
    data = (ClientState.new(spec).to_json() + "\n").encode()
    for path in paths:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.write(fd, data)
        os.close(fd)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        syncfs = getattr(ctypes.CDLL(None), "syncfs", None)
        if syncfs is not None:
            syncfs(fd)
        else:
            os.fsync(fd)
    finally:
        os.close(fd)


def _open_each(paths: list[Path], spec) -> None:
    for path in paths:
        ClientState.open(path, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=20_000, help="reports per single-encode timing run")
    parser.add_argument("--batch", type=int, default=1_000_000, help="reports per encode_batch timing run")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--memory-users",
        type=int,
        default=10_000_000,
        help="OUE users for the ldp encode memory rows (0: skip)",
    )
    parser.add_argument(
        "--new-clients", type=int, default=2_000, help="new clients of ldp encode --state (0: skip)"
    )
    parser.add_argument("--state-root", default=None, help="where the new-clients rows write their states")
    args = parser.parse_args()

    small = [f"v{i}" for i in range(16)]
    large = [f"v{i}" for i in range(1024)]
    sample = small[:8]
    rows = []

    rappor = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")
    if args.single:
        with tempfile.TemporaryDirectory() as tmp:
            state = ClientState.open(Path(tmp) / "client.json", rappor)  # persistent: file, mode 0600
            encoder = make_encoder(rappor, state=state)
            rows.append(
                single_row(
                    "encode RAPPOR (k=128, h=2, PRR+IRR)", encoder, sample, args.single, args.repeat, 30
                )
            )
        # (row, spec, values cycled over, reports per timed run, target µs/report or None)
        singles = [
            ("encode GRR (d=16)", ldp.GRR(domain=small, epsilon=1.0), sample, args.single, 5),
            ("encode GRR (d=1024)", ldp.GRR(domain=large, epsilon=1.0), sample, args.single, None),
            (
                "encode BinaryRR",
                ldp.BinaryRR(domain=("no", "yes"), epsilon=1.0),
                ["no", "yes"],
                args.single,
                None,
            ),
            ("encode OUE (d=16)", ldp.OUE(domain=small, epsilon=1.0), sample, args.single, None),
            ("encode OUE (d=1024)", ldp.OUE(domain=large, epsilon=1.0), sample, args.single // 4, None),
            ("encode SUE (d=16)", ldp.SUE(domain=small, epsilon=1.0), sample, args.single, None),
            ("encode OLH (d=1024)", ldp.OLH(domain=large, epsilon=1.0), sample, args.single, None),
            ("encode BLH (d=1024)", ldp.BLH(domain=large, epsilon=1.0), sample, args.single, None),
        ]
        for name, spec, values, count, target in singles:
            rows.append(single_row(name, make_encoder(spec), values, count, args.repeat, target))

    batch_rows = []
    if args.batch:
        n = args.batch
        rng = np.random.default_rng(0)
        candidates = [f"value-{i}" for i in range(100)]
        strings = [candidates[i] for i in rng.integers(0, 100, n)]
        idx = rng.integers(0, 1024, n)
        grr_large = ldp.GRR(domain=large, epsilon=1.0)
        # (row, spec, values, reports, target reports/s or None, encode_batch options)
        batches = [
            ("RAPPOR (k=128, h=2, m=64, strings)", rappor, strings, n, 1e6, {}),
            ("GRR (d=1024, indices)", grr_large, idx, n, 10e6, {"indices": True}),
            ("GRR (d=1024, strings)", grr_large, [large[i] for i in idx], n, None, {}),
            (
                "OUE (d=1024, indices)",
                ldp.OUE(domain=large, epsilon=1.0),
                idx[: n // 10],
                n // 10,
                None,
                {"indices": True},
            ),
            ("OLH (d=1024, indices)", ldp.OLH(domain=large, epsilon=1.0), idx, n, None, {"indices": True}),
            ("Piecewise (numbers)", ldp.numeric_spec("piecewise", 1.0, 0.0, 1.0), rng.random(n), n, None, {}),
        ]
        for name, spec, values, count, target, options in batches:
            batch_rows.append(batch_row(name, spec, values, count, args.repeat, target, **options))

    if args.single:
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
    print()
    if args.batch:
        header = (
            f"{'batch encoder':<36} {'reports':>10} {'secure/s':>12} {'seeded/s':>12} {'secure÷seeded':>14}"
            f" {'B/report':>9} {'urandom MB/s':>13} {'urandom share':>14}  {'target':<11} result"
        )
        print(header)
        print("-" * len(header))
        for name, count, secure, seeded, ratio, per_report, urandom, share, target, verdict in batch_rows:
            print(
                f"{name:<36} {count:>10,} {secure:>12,.0f} {seeded:>12,.0f} {ratio:>14.2f}"
                f" {per_report:>9.1f} {urandom / 1e6:>13,.0f} {share:>13.0%}  {target:<11} {verdict}"
            )
        print(
            "(secure: SystemRandomSource, os.urandom blocks; seeded: numpy Generator, NOT secure; medians of "
            f"{args.repeat} interleaved runs; 'urandom share' = time os.urandom alone takes for the bytes the "
            "secure row reads ÷ the secure row's time)"
        )
    if args.new_clients:
        print()
        header = f"{'new RAPPOR clients':<40} {'clients':>8} {'clients/s':>10} {'wall s':>8} {'CPU s':>7}"
        print(header)
        print("-" * len(header))
        new_rows = new_client_rows(args.new_clients, args.state_root, rappor)
        for name, wall, cpu in new_rows:
            print(
                f"{name:<40} {args.new_clients:>8,} {args.new_clients / wall:>10,.0f} {wall:>8.2f} {cpu:>7.2f}"
            )
        reference, each, many, with_state, without_state = (row[1] for row in new_rows)
        added = with_state - without_state
        print(
            f"(median of 3 runs. open_many ÷ one at a time: {each / many:.1f}x the rate; open_many's time ÷ the "
            f"plain files': {many / reference:.2f}x; ldp encode --state beyond the same run without state: "
            f"{added:.2f} s, {args.new_clients / max(added, 1e-9):,.0f} new clients/s, "
            f"{added / reference:.2f}x the plain files' time; target ≥ 2,000 clients/s)"
        )
    if args.memory_users:
        print()
        header = (
            f"{'ldp encode peak memory':<36} {'users':>12} {'peak RSS MB':>12} {'above ref. MB':>14}"
            f" {'÷ ref.':>7} {'seconds':>9}"
        )
        print(header)
        print("-" * len(header))
        mem = memory_rows(args.memory_users)
        base = mem[0][2]
        for name, users, mb, secs in mem:
            print(f"{name:<36} {users:>12,} {mb:>12,.0f} {mb - base:>14,.0f} {mb / base:>7.2f} {secs:>9.1f}")
        print("(peak resident set of each child process, from os.wait4; the issue measured 3.2 GB unchunked)")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"(load average {load} on {os.cpu_count()} CPUs: a load above the CPU count slows every row; "
        "compare ratios, not absolute figures)"
    )


if __name__ == "__main__":
    main()
