"""Prometheus metrics of one collector (``GET /metrics``, docs/collector.md#metrics).

Each app has its own registry, so several collectors in one process (tests)
do not share counters. Labels never carry anything about a sender.

What an operator alerts on (deploy/prometheus/ldp-alerts.yml): store errors
(``ldp_store_errors_total``), the commit queue's depth
(``ldp_commit_queue_uploads``), a stalled commit (``ldp_commit_running_seconds``
grows while one commit hangs), the windows held in memory
(``ldp_windows_held``), the process's memory (``process_resident_memory_bytes``),
every refused request by status and reason (``ldp_http_errors_total``) and a
retention that no longer runs (``ldp_retention_runs_total{outcome="failed"}``).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ldp.collector.ingest import CommitStats

__all__ = ["CONTENT_TYPE_LATEST", "CollectorMetrics"]

disable_created_metrics()  # no per-series creation timestamps: only counts and latencies are exported

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_GROUP_BUCKETS = (1, 10, 50, 100, 250, 500, 1_000, 2_500, 5_000)


class CollectorMetrics:
    """The collector's counters and histograms."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reports = Counter(
            "ldp_reports",
            "Uploaded reports by outcome (accepted, replayed, rejected) and rejection reason.",
            ["outcome", "reason"],
            registry=self.registry,
        )
        self.requests = Histogram(
            "ldp_request_seconds",
            "Request latency by route and status class.",
            ["route", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.aborted = Counter(
            "ldp_aborted_requests",
            "Requests whose body never arrived whole, by reason: client_disconnect (the client hung up) "
            "or read_timeout (cut off by ldp serve --read-timeout).",
            ["reason"],
            registry=self.registry,
        )
        self.commits = Histogram(
            "ldp_store_commit_seconds",
            "Seconds per group commit to the store.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.store_errors = Counter(
            "ldp_store_errors",
            "Group commits the store failed (their uploads were answered 503), by error type.",
            ["error"],
            registry=self.registry,
        )
        self.group_reports = Histogram(
            "ldp_commit_group_reports",
            "Reports per group commit.",
            buckets=_GROUP_BUCKETS,
            registry=self.registry,
        )
        self.http_errors = Counter(
            "ldp_http_errors",
            "Requests refused with a 4xx, by status and reason (unknown_task, rate_limited, body_too_large, "
            "malformed_json, bad_parameter, unauthorized...).",
            ["status", "reason"],
            registry=self.registry,
        )
        self.queued = Gauge(
            "ldp_commit_queue_uploads", "Uploads waiting for a group commit.", registry=self.registry
        )
        self.running = Gauge(
            "ldp_commit_running_seconds",
            "Seconds the running group commit has taken so far (0 when none runs): a stalled commit grows.",
            registry=self.registry,
        )
        self.windows = Gauge(
            "ldp_windows_held", "Estimate windows (of every task) held in memory.", registry=self.registry
        )
        self.retention_runs = Counter(
            "ldp_retention_runs",
            "Retention runs (ldp serve --prune-every) by outcome: ok, or failed (the store refused; retried next run).",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in ("ok", "failed"):  # both series from the start: an alert compares them
            self.retention_runs.labels(outcome)
        self.pruned_windows = Counter(
            "ldp_retention_windows_pruned",
            "Windows whose aggregate was kept and raw reports deleted by the retention.",
            registry=self.registry,
        )
        self.pruned_reports = Counter(
            "ldp_retention_reports_deleted", "Raw reports deleted by the retention.", registry=self.registry
        )
        # process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds... (Linux /proc)
        ProcessCollector(registry=self.registry)

    def watch(
        self, queued: Callable[[], float], running: Callable[[], float], windows: Callable[[], float]
    ) -> None:
        """Read the commit queue's depth, the running commit's age and the windows held at each scrape."""
        self.queued.set_function(queued)
        self.running.set_function(running)
        self.windows.set_function(windows)

    def count_refusal(self, status: int, reason: str) -> None:
        """Count one request answered with the 4xx ``status`` for ``reason``."""
        self.http_errors.labels(str(status), reason).inc()

    def count_upload(self, accepted: int, replayed: int, rejected_reasons: list[str]) -> None:
        if accepted:
            self.reports.labels("accepted", "").inc(accepted)
        if replayed:
            self.reports.labels("replayed", "report_replayed").inc(replayed)
        for reason in rejected_reasons:
            self.reports.labels("rejected", reason).inc()

    def observe_commit(self, stats: CommitStats) -> None:
        self.commits.observe(stats.seconds)
        self.group_reports.observe(stats.reports)

    def observe_retention(self, windows: int, reports: int) -> None:
        """Count one retention run that succeeded, and what it pruned."""
        self.retention_runs.labels("ok").inc()
        self.pruned_windows.inc(windows)
        self.pruned_reports.inc(reports)

    def observe_retention_failure(self) -> None:
        self.retention_runs.labels("failed").inc()

    def observe_store_error(self, exc: BaseException) -> None:
        self.store_errors.labels(type(exc).__name__).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
