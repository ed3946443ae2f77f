"""Engines: turn report files into one accumulator, writing every reject on the way.

================  =============================================================
``local``         one process streams the files chunk by chunk (bounded
                  memory); with ``workers > 1`` a pool of threads reads the
                  partitions (:mod:`ldp.aggregator.partitions`) and the main
                  thread merges their accumulators in partition order
``dask``          the partitions are read on a Dask cluster (``scheduler``
                  address, or a local cluster started for the run), their
                  accumulators merged by a tree reduction on the cluster; only
                  the merged accumulator and the rejects come back
================  =============================================================

All engines give the same accumulator (integer counts, merged associatively;
per-group counts of numeric reports with a ``group`` key travel inside it)
and write the same rejects in the same order (file, global line number,
reason, raw text) as the single-process reader. The estimate is computed once,
by the caller, from the returned accumulator.

Dask is optional (``pip install -e ".[dask]"``) and imported only when the
``dask`` engine runs. Workers of a remote cluster must have ``ldp`` installed
and see the report files at the same absolute paths.

Options are checked before any work starts: ``workers`` may be at most
:data:`MAX_WORKERS_PER_CPU` per CPU this process may use (more threads or
worker processes than that only add memory and start-up time, and 64 local
Dask worker processes on 2 cores stall), and ``scheduler`` must have the
form of a Dask address (:func:`check_scheduler_address`); a scheduler that
does not answer within :data:`SCHEDULER_TIMEOUT` seconds is a one-line
error.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import gc
import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence

from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.aggregator.io import CHUNK_ROWS, STDIN, check_paths
from ldp.aggregator.partitions import (
    PARTITION_BYTES,
    PARTITION_ROWS,
    Partition,
    PartitionResult,
    plan_partitions,
    read_partition,
    renumber,
)
from ldp.aggregator.rejects import RejectsWriter
from ldp.errors import ParameterError

__all__ = [
    "DASK_EXTRA_MESSAGE",
    "DASK_EXTRA_TEMPLATE",
    "ENGINES",
    "MAX_WORKERS_PER_CPU",
    "SCHEDULER_TIMEOUT",
    "aggregate_files",
    "check_scheduler_address",
    "import_distributed",
    "max_workers",
    "merge_all",
    "usable_cpus",
]

ENGINES = ("local", "dask")
#: The error when Dask is missing, naming the ``engine`` parameter.
DASK_EXTRA_TEMPLATE = '{engine=} needs the optional dependency dask[distributed]: pip install -e ".[dask]"'
#: What ``ldp aggregate --engine dask`` prints when Dask is missing (kept importable for callers of 0.x).
DASK_EXTRA_MESSAGE = '--engine dask needs the optional dependency dask[distributed]: pip install -e ".[dask]"'
#: Most ``workers`` (threads, or local Dask worker processes) per CPU the process may use.
MAX_WORKERS_PER_CPU = 2
#: Seconds to wait for a Dask scheduler to answer before giving up.
SCHEDULER_TIMEOUT = 5
_NETWORK_ADDRESS = re.compile(
    r"(?:(?:tcp|tls|ws|wss|ucx)://)?"  # Dask's network schemes; none means tcp
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)"
    r":(?P<port>[0-9]{1,5})"
)
_INPROC_ADDRESS = re.compile(r"inproc://[^\s/]+(?:/[^\s/]+)*")  # a scheduler inside this process

Progress = Callable[[int], None]


def aggregate_files(
    spec,
    paths: Sequence[str],
    rejects: RejectsWriter,
    *,
    engine: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    chunk_size: int = CHUNK_ROWS,
    partition_bytes: int = PARTITION_BYTES,
    partition_rows: int = PARTITION_ROWS,
    progress: Progress | None = None,
) -> tuple[Accumulator, int]:
    """Accumulate every valid report of ``paths``; write the bad ones to ``rejects``.

    Parameters
    ----------
    spec : Spec
        The spec the reports were encoded with.
    paths : sequence of str
        Report files (JSON Lines, CSV, Parquet; ``-`` for stdin, local engine only).
    rejects : RejectsWriter
        Receives every rejected report, in file and line order.
    engine : {"local", "dask"}
        Where partitions are read.
    workers : int, optional
        ``local``: threads reading partitions (default 1: stream the files
        in this thread).
        ``dask``: worker processes of the local cluster started when no
        ``scheduler`` is given (default: Dask's choice); not allowed with
        ``scheduler``. At most :func:`max_workers`.
    scheduler : str, optional
        Address of a running Dask scheduler (``dask`` only), checked by
        :func:`check_scheduler_address`.
    chunk_size : int
        Reports read at a time by each reader (bounds memory).
    partition_bytes, partition_rows : int
        Target partition sizes (see :func:`~ldp.aggregator.partitions.plan_partitions`).
    progress : callable, optional
        Called with the running count of reports read.

    Returns
    -------
    (Accumulator, int)
        The merged accumulator and the number of valid reports.

    Raises
    ------
    ParameterError
        For an unknown engine, bad options (more workers than
        :func:`max_workers`, a scheduler that is not an address), missing
        files, a missing Dask installation or a scheduler that does not
        answer within :data:`SCHEDULER_TIMEOUT` seconds.

    Notes
    -----
    A local Dask cluster starts worker processes with :mod:`multiprocessing`'s
    non-fork start methods: a script calling this with ``engine="dask"`` and
    no scheduler must guard its entry point with ``if __name__ ==
    "__main__":``. The ``ldp`` command needs nothing; the local engine's
    ``workers`` are threads.
    """
    if engine not in ENGINES:
        raise ParameterError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if workers is not None and (isinstance(workers, bool) or int(workers) != workers or workers < 1):
        raise ParameterError(f"workers must be a positive integer, got {workers!r}")
    if workers is not None and workers > max_workers():
        cpus = usable_cpus()
        raise ParameterError.naming(
            f"{{workers=}} is too many for this machine: at most {max_workers()} "
            f"({MAX_WORKERS_PER_CPU} per CPU, and this process may use {cpus} CPU{'s' if cpus != 1 else ''}); "
            "more only add memory and start-up time",
            workers=workers,
        )
    if chunk_size < 1:
        raise ParameterError(f"chunk_size must be at least 1, got {chunk_size!r}")
    if scheduler is not None and engine != "dask":
        raise ParameterError.naming("{scheduler} is for {engine=}", scheduler=scheduler, engine="dask")
    progress = progress or (lambda rows: None)
    if engine == "dask":
        if scheduler is not None and workers is not None:
            raise ParameterError.naming(
                "give {scheduler} (a running cluster) or {workers} (a local cluster), not both",
                scheduler=scheduler,
                workers=workers,
            )
        if scheduler is not None:
            check_scheduler_address(scheduler)
        distributed = import_distributed()
        if STDIN in map(str, paths):
            raise ParameterError.naming(
                "{engine=} cannot read standard input; write the reports to a file first", engine=engine
            )
        partitions = plan_partitions(paths, partition_bytes=partition_bytes, partition_rows=partition_rows)
        with _dask_client(distributed, scheduler, workers) as client:
            return _run_dask(client, spec, partitions, rejects, chunk_size, progress)
    if workers is None or workers == 1:
        return _run_stream(spec, check_paths(paths), rejects, chunk_size, progress)
    partitions = plan_partitions(paths, partition_bytes=partition_bytes, partition_rows=partition_rows)
    return _run_pool(spec, partitions, rejects, chunk_size, int(workers), progress)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def max_workers() -> int:
    """Largest ``workers`` accepted: :data:`MAX_WORKERS_PER_CPU` per usable CPU."""
    return MAX_WORKERS_PER_CPU * usable_cpus()


def check_scheduler_address(address: str) -> str:
    """``address`` if it has the form of a Dask scheduler address; a :class:`ParameterError` otherwise.

    Accepted: ``[tcp|tls|ws|wss|ucx://]HOST:PORT`` (HOST a name, an IPv4
    address or a bracketed IPv6 address; PORT 1 to 65535) and
    ``inproc://...`` (a scheduler in this process). Checked before Dask is
    imported, so a typo fails at once instead of after a connection timeout.
    """
    match = _NETWORK_ADDRESS.fullmatch(address) if isinstance(address, str) else None
    if match is not None and 1 <= int(match["port"]) <= 65535:
        return address
    if isinstance(address, str) and _INPROC_ADDRESS.fullmatch(address):
        return address
    raise ParameterError.naming(
        "{scheduler=} is not a Dask scheduler address; "
        "expected [tcp://]HOST:PORT with a port from 1 to 65535, e.g. tcp://10.0.0.5:8786",
        scheduler=address,
    )


def merge_all(*accumulators: Accumulator) -> Accumulator:
    """The merge of one or more accumulators of the same spec (left to right)."""
    return functools.reduce(lambda a, b: a.merge(b), accumulators)


# -- local: one process ----------------------------------------------------------


def _run_stream(spec, paths: list[str], rejects: RejectsWriter, chunk_size: int, progress: Progress):
    from ldp.aggregator.io import read_reports

    accumulator = make_aggregator(spec)
    valid = 0
    for chunk in read_reports(paths, spec, chunk_size=chunk_size):
        if len(chunk.batch):
            accumulator.add_batch(chunk.batch)
            valid += len(chunk.batch)
        rejects.write(chunk.rejects)
        progress(valid + rejects.total)
    return accumulator, valid


# -- shared by the parallel engines ------------------------------------------------


class _Collector:
    """Takes partition results in partition order: renumbers and writes rejects, counts."""

    def __init__(self, rejects: RejectsWriter, progress: Progress):
        self.rejects = rejects
        self.progress = progress
        self.valid = 0
        self._lines_before: collections.Counter[str] = collections.Counter()

    def take(self, partition: Partition, valid: int, rejects: list, lines: int) -> None:
        key = partition.location
        self.rejects.write(renumber(partition, rejects, self._lines_before[key]))
        self._lines_before[key] += lines
        self.valid += valid
        self.progress(self.valid + self.rejects.total)


# -- local: a thread pool ----------------------------------------------------------------


def _run_pool(
    spec,
    partitions: list[Partition],
    rejects: RejectsWriter,
    chunk_size: int,
    workers: int,
    progress: Progress,
):
    """Partitions read by ``workers`` threads, merged here in partition order.

    Threads, not processes: a partition's time goes to Arrow's readers and
    NumPy's kernels, which release the GIL, so threads use every core while
    sharing one copy of the libraries and no accumulator is pickled (one
    process: 10M reports in under 350 MB, see ``benchmarks/bench_scale.py``).
    """
    collector = _Collector(rejects, progress)
    accumulator = make_aggregator(spec)
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=workers, thread_name_prefix="ldp-partition"
    ) as pool:
        for partition, result in zip(partitions, _in_order(pool, partitions, spec, chunk_size, 2 * workers)):
            accumulator = accumulator.merge(result.accumulator)
            collector.take(partition, result.valid, result.rejects, result.lines)
    return accumulator, collector.valid


def _in_order(pool, partitions, spec, chunk_size: int, ahead: int) -> Iterator[PartitionResult]:
    """Results in partition order, with at most ``ahead`` partitions in flight (bounds memory)."""
    pending: collections.deque = collections.deque()
    submitted = 0
    for _ in range(len(partitions)):
        while submitted < len(partitions) and len(pending) < ahead:
            pending.append(pool.submit(read_partition, partitions[submitted], spec, chunk_size))
            submitted += 1
        yield pending.popleft().result()


# -- dask ----------------------------------------------------------------------------


def import_distributed():
    """``dask.distributed``, or a :class:`ParameterError` naming the extra to install."""
    try:
        import dask  # noqa: F401
        import dask.distributed as distributed
    except ImportError:
        raise ParameterError.naming(DASK_EXTRA_TEMPLATE, engine="dask") from None
    return distributed


#: Where a LocalCluster started by ``--engine dask`` listens (scheduler, workers, their HTTP endpoints).
LOOPBACK = "127.0.0.1"


class _dask_client:
    """Context manager: a Client of ``scheduler``, or of a LocalCluster started (and closed) here."""

    def __init__(self, distributed, scheduler: str | None, workers: int | None):
        self._distributed = distributed
        self._scheduler = scheduler
        self._workers = workers
        self._cluster = None
        self._client = None

    def __enter__(self):
        distributed = self._distributed
        if self._scheduler is not None:
            return self._connect(distributed)
        # Loopback only, on ports the kernel picks: dashboard_address=None still serves the scheduler's
        # and each worker's HTTP endpoints, on 0.0.0.0:8787 and 0.0.0.0:<random> (every interface).
        self._cluster = distributed.LocalCluster(
            n_workers=self._workers,
            threads_per_worker=1,
            processes=True,
            host=LOOPBACK,
            dashboard_address=f"{LOOPBACK}:0",
            worker_dashboard_address=f"{LOOPBACK}:0",
            silence_logs=logging.ERROR,
        )
        self._client = distributed.Client(self._cluster, set_as_default=False)
        return self._client

    def _connect(self, distributed):
        """A Client of the scheduler, or a one-line ParameterError when it does not answer in time."""
        failure = None
        try:
            self._client = distributed.Client(
                self._scheduler, timeout=f"{SCHEDULER_TIMEOUT}s", set_as_default=False
            )
        except Exception as exc:  # whatever the handshake with the peer raises: it is not a usable scheduler
            failure = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        if failure is None:
            return self._client
        # Close the half-made Client now, while its event loop runs: left to the
        # interpreter's exit, its __del__ waits out a timeout and prints a traceback.
        gc.collect()
        raise ParameterError(
            f"cannot connect to the Dask scheduler {self._scheduler!r} (waited up to {SCHEDULER_TIMEOUT} s): {failure}"
        )

    def __exit__(self, *exc) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def _accumulator_of(result: PartitionResult) -> Accumulator:
    return result.accumulator


def _summary_of(result: PartitionResult) -> tuple[int, list, int]:
    return result.valid, result.rejects, result.lines


def _tree_reduce(client, futures: list, fan_in: int = 8):
    """Merge accumulator futures on the cluster, ``fan_in`` at a time, until one is left."""
    while len(futures) > 1:
        futures = [
            client.submit(merge_all, *futures[i : i + fan_in], pure=False)
            for i in range(0, len(futures), fan_in)
        ]
    return futures[0]


def _run_dask(
    client, spec, partitions: list[Partition], rejects: RejectsWriter, chunk_size: int, progress: Progress
):
    collector = _Collector(rejects, progress)
    if not partitions:
        return make_aggregator(spec), 0
    [spec_future] = client.scatter([spec], broadcast=True, hash=False)
    results = [client.submit(read_partition, p, spec_future, chunk_size, pure=False) for p in partitions]
    accumulators = [client.submit(_accumulator_of, r, pure=False) for r in results]
    summaries = [client.submit(_summary_of, r, pure=False) for r in results]
    root = _tree_reduce(client, accumulators)
    del results, accumulators  # the cluster frees each partition once its dependants are done
    for partition, summary in zip(partitions, summaries):
        valid, partition_rejects, lines = summary.result()
        summary.release()
        collector.take(partition, valid, partition_rejects, lines)
    return root.result(), collector.valid
